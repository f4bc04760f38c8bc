//! What the store answers from memory ([`Hot`]): the latest records of running tasks and
//! of the last few that finished, their latest events, and push configs. The writer
//! thread keeps it current; what it forgets is freed by
//! [`Dropper`](super::dropper::Dropper).

use std::sync::Arc;

use super::batch::Changes;
use crate::record::{PushConfigRecord, StoredEvent, TaskRecord};

/// What the store answers from memory. Only the writer thread changes the file, and it
/// updates this after each durable batch and before replying, so it is never behind a
/// caller's own writes.
#[derive(Debug, Default)]
pub(super) struct Hot {
    /// The latest record of each unfinished task written since the store opened, and
    /// of the last [`RECENTLY_FINISHED`] tasks that finished: the transitions of running
    /// tasks and the reads that follow a task's end need no disk read.
    pub(super) records: crate::IdMap<String, Arc<TaskRecord>>,
    /// Finished tasks still in `records`, oldest first.
    finished: std::collections::VecDeque<String>,
    /// For each task in `records`, its latest events (at most [`RECENT_EVENTS`], oldest
    /// first, no gap up to the latest): a subscriber or the webhook dispatcher reading
    /// what was just committed needs no disk read.
    pub(super) events: crate::IdMap<std::sync::Arc<str>, std::collections::VecDeque<StoredEvent>>,
    /// Every event put in `events`, oldest first, to drop the oldest beyond
    /// [`RECENT_EVENTS_IN_ALL`]: without that bound the cache grew with the number of
    /// open tasks (a task held open for hours kept its first events, its full snapshot
    /// among them, ~1.7 KB, the whole time).
    pub(super) events_in_order: std::collections::VecDeque<(std::sync::Arc<str>, u64)>,
    /// Every task with at least one push config (loaded when the store opens), so a
    /// task without one costs no read per event. May also hold tasks whose last
    /// config was deleted one by one: it only ever answers "none" for sure.
    pub(super) with_push: crate::IdSet<String>,
    /// For tasks in `records` whose configs were written since the store opened: all
    /// their configs, exactly as the file has them (the dispatcher reads a task's
    /// config before each delivery).
    pub(super) push: crate::IdMap<String, Vec<PushConfigRecord>>,
    /// Set while the file is behind (see [`Lag`](super::Lag)): finished tasks are not
    /// forgotten, since the file may not have their last record yet.
    pub(super) pinned: bool,
    /// What was forgotten since the last [`Hot::take_forgotten`], to be freed after
    /// the lock is released (see [`Forgotten`]).
    forgotten: Vec<Forgotten>,
}

/// A task's cached state once forgotten, held only to be freed: outside the cache's
/// lock, and where possible on the runtime's threads, which allocated it (see
/// [`Dropper`](super::dropper::Dropper)).
#[derive(Debug)]
pub(super) struct Forgotten {
    _record: Option<Arc<TaskRecord>>,
    _events: Option<std::collections::VecDeque<StoredEvent>>,
    _push: Option<Vec<PushConfigRecord>>,
}

pub(super) type SharedHot = Arc<parking_lot::RwLock<Hot>>;

/// Finished tasks kept in memory (a finished task never changes again, short of deletion).
/// Few: a finished task kept is a tree of allocations (the task, its history, its
/// artifacts, a few KB), freed cold when forgotten ([`Dropper`](super::dropper::Dropper)),
/// its blocks then reused cold by the next tasks' allocations; the fewer kept, the warmer
/// (bench/profile.md, "Figures behind constants in the code", has the runs that chose this
/// number). While the file is behind nothing is forgotten anyway; a task forgotten is read
/// from the file, which has it by then.
pub(super) const RECENTLY_FINISHED: usize = 128;

/// Events kept in memory per task in [`Hot::records`].
pub(super) const RECENT_EVENTS: usize = 8;

/// Events kept in memory over all tasks: what was committed in the last few tens of
/// milliseconds at full speed (~60k events/s), which is when its readers come (a new
/// stream's replay after its snapshot, the dispatcher behind by a batch, a subscriber
/// that lagged the bus). Older events are read from the file.
pub(super) const RECENT_EVENTS_IN_ALL: usize = 4096;

impl Hot {
    fn seq_of(&self, task_id: &str) -> Option<u64> {
        self.records.get(task_id).map(|r| r.seq)
    }

    /// Forgets the oldest finished tasks beyond [`RECENTLY_FINISHED`], unless pinned.
    fn trim(&mut self) {
        while !self.pinned && self.finished.len() > RECENTLY_FINISHED {
            if let Some(task_id) = self.finished.pop_front() {
                self.forget(&task_id);
            }
        }
    }

    /// The file has caught up: what finished meanwhile may be forgotten again. Here, not
    /// at the next batch: under steady commits the next batch is deferred again, so the
    /// cache is pinned whenever a batch is applied to it.
    pub(super) fn unpin(&mut self) {
        self.pinned = false;
        self.trim();
    }

    pub(super) fn apply(&mut self, changes: Changes) {
        for (task_id, record) in changes.records {
            if record.task.status.state.is_terminal() {
                self.finished.push_back(task_id.clone());
            }
            self.records.insert(task_id, record);
        }
        for event in changes.events {
            self.events_in_order
                .push_back((event.task_id.clone(), event.seq));
            let recent = self.events.entry(event.task_id.clone()).or_default();
            recent.push_back(event);
            if recent.len() > RECENT_EVENTS {
                recent.pop_front();
            }
        }
        self.drop_oldest_events();
        self.trim();
        for task_id in changes.deleted {
            self.forget(&task_id);
        }
        for task_id in changes.without_push {
            self.with_push.remove(&task_id);
        }
        self.with_push.extend(changes.with_push);
        for (task_id, configs) in changes.push {
            if configs.is_empty() || !self.records.contains_key(&task_id) {
                self.push.remove(&task_id);
            } else {
                self.push.insert(task_id, configs);
            }
        }
    }

    /// Drops the oldest events beyond [`RECENT_EVENTS_IN_ALL`]. A task's events are in
    /// sequence order in both lists, so each one dropped is at the front of its task's,
    /// unless the per-task bound or `forget` dropped it already.
    fn drop_oldest_events(&mut self) {
        while self.events_in_order.len() > RECENT_EVENTS_IN_ALL {
            let Some((task_id, seq)) = self.events_in_order.pop_front() else {
                break;
            };
            let Some(recent) = self.events.get_mut(&task_id) else {
                continue;
            };
            while recent.front().is_some_and(|e| e.seq <= seq) {
                recent.pop_front();
            }
            if recent.is_empty() {
                self.events.remove(&task_id);
            }
        }
    }

    fn forget(&mut self, task_id: &str) {
        let forgotten = Forgotten {
            _record: self.records.remove(task_id),
            _events: self.events.remove(task_id),
            _push: self.push.remove(task_id),
        };
        self.forgotten.push(forgotten);
    }

    pub(super) fn take_forgotten(&mut self) -> Vec<Forgotten> {
        std::mem::take(&mut self.forgotten)
    }

    /// `events_after` from memory, when the kept events reach back far enough.
    pub(super) fn events_after(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> Option<Vec<StoredEvent>> {
        let latest = self.seq_of(task_id)?;
        if after >= latest {
            return Some(Vec::new());
        }
        let recent = self.events.get(task_id)?;
        let oldest = recent.front()?.seq;
        (oldest <= after.saturating_add(1)).then(|| {
            recent
                .iter()
                .filter(|e| e.seq > after)
                .take(limit)
                .cloned()
                .collect()
        })
    }

    /// The task's configs: `Some` when known without a read.
    pub(super) fn push_configs(&self, task_id: &str) -> Option<&[PushConfigRecord]> {
        if !self.with_push.contains(task_id) {
            return Some(&[]);
        }
        self.push.get(task_id).map(Vec::as_slice)
    }
}
