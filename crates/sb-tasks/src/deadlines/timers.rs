//! The timers of running tasks: one per task, the newest event's, in a heap ordered by
//! due time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use sb_store::IdMap;
use tokio::time::Instant;

/// What a timer does to its task when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Action {
    CancelWaiting,
    FailStalled,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Timer {
    pub(super) due: Instant,
    pub(super) task_id: Arc<str>,
    /// The task's sequence number when the timer was set: it acts only if the task has
    /// not moved since.
    pub(super) seq: u64,
    pub(super) action: Action,
}

/// One timer per running task: the newest event's. The heap holds at most a couple of
/// entries per task (an entry is re-armed lazily when its task's deadline moved later),
/// and the entries of tasks that finished are dropped once they outnumber the live
/// ones, so memory follows the number of running tasks, not the number of events.
#[derive(Debug, Default)]
pub(super) struct Timers {
    latest: IdMap<Arc<str>, Timer>,
    /// The earliest due time each task has in the heap.
    armed: IdMap<Arc<str>, Instant>,
    heap: BinaryHeap<Reverse<(Instant, Arc<str>)>>,
}

impl Timers {
    pub(super) fn set(&mut self, timer: Timer) {
        let earlier = self
            .armed
            .get(&timer.task_id)
            .is_none_or(|armed| timer.due < *armed);
        if earlier {
            self.heap.push(Reverse((timer.due, timer.task_id.clone())));
            self.armed.insert(timer.task_id.clone(), timer.due);
        }
        self.latest.insert(timer.task_id.clone(), timer);
    }

    /// The task finished: its running deadline is moot.
    pub(super) fn finish(&mut self, task_id: &str) {
        self.latest.remove(task_id);
        if self.armed.remove(task_id).is_some() && self.heap.len() > 2 * self.armed.len() + 64 {
            // Most entries are finished tasks' (skipped when due, but held until then).
            let armed = &self.armed;
            self.heap
                .retain(|Reverse((due, id))| armed.get(id) == Some(due));
        }
    }

    pub(super) fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((due, _))| *due)
    }

    /// The next timer due at `now`, if any.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<Timer> {
        while let Some(Reverse((due, _))) = self.heap.peek() {
            if *due > now {
                return None;
            }
            let Reverse((due, task_id)) = self.heap.pop()?;
            if self.armed.get(&task_id) != Some(&due) {
                continue; // superseded by an earlier entry, or its task finished
            }
            self.armed.remove(&task_id);
            let Some(latest) = self.latest.get(&task_id) else {
                continue;
            };
            if latest.due > now {
                // A newer event moved the deadline later: wait for that one instead.
                let later = latest.due;
                self.heap.push(Reverse((later, task_id.clone())));
                self.armed.insert(task_id, later);
                continue;
            }
            return self.latest.remove(&task_id);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::{Action, Timer, Timers};

    #[test]
    fn finished_tasks_hold_no_timer() {
        let now = Instant::now();
        let timer = |id: &str, due_secs: u64| Timer {
            due: now + Duration::from_secs(due_secs),
            task_id: id.into(),
            seq: 1,
            action: Action::FailStalled,
        };
        let mut timers = Timers::default();
        timers.set(timer("runs", 900));
        for i in 0..10_000 {
            let id = format!("ends-{i}");
            timers.set(timer(&id, 900 + i));
            timers.finish(&id);
        }
        assert!(
            timers.latest.len() == 1 && timers.armed.len() == 1,
            "only the running task is left: {} {}",
            timers.latest.len(),
            timers.armed.len()
        );
        assert!(
            timers.heap.len() <= 2 + 64 + 1,
            "the finished tasks' heap entries are dropped as they pile up: {}",
            timers.heap.len()
        );
        let far = now + Duration::from_secs(100_000);
        let fired: Vec<_> = std::iter::from_fn(|| timers.pop_due(far))
            .map(|t| t.task_id.to_string())
            .collect();
        assert_eq!(fired, ["runs"], "a finished task's stall timer never fires");
        assert_eq!(timers.next_due(), None);
    }

    #[test]
    fn one_timer_per_task_however_many_events() {
        let keeper_timer = |id: &str, seq: u64, due_secs: u64| Timer {
            due: Instant::now() + Duration::from_secs(due_secs),
            task_id: id.into(),
            seq,
            action: Action::FailStalled,
        };
        let mut timers = Timers::default();
        for seq in 1..=10_000 {
            timers.set(keeper_timer("busy", seq, 900 + seq));
        }
        assert_eq!(
            timers.heap.len(),
            1,
            "later deadlines re-arm lazily instead of piling up"
        );
        timers.set(keeper_timer("busy", 10_001, 60));
        assert_eq!(timers.heap.len(), 2, "an earlier deadline is armed at once");
        let far = Instant::now() + Duration::from_secs(100_000);
        let fired = timers.pop_due(far).unwrap();
        assert_eq!(
            fired.seq, 10_001,
            "the newest event's timer is the one that fires"
        );
        assert!(timers.pop_due(far).is_none(), "and only once");
    }
}
