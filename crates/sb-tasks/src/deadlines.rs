//! Lifecycle deadlines: a task waiting for input (or auth) too long is canceled, a task
//! whose agent went silent is failed, and a finished task is evicted after its TTL.
//!
//! The keeper watches every committed event and keeps one timer per running task, in a
//! heap. A timer remembers the sequence number it was set at; when it fires it acts only
//! if the task has not moved since, and through the state machine's conditional update,
//! so a deadline racing a real transition never overwrites it. Timers use tokio's
//! clock, so tests drive them with a paused clock.
//!
//! Finished tasks hold nothing here: the store indexes them by the time they finished
//! ([`TaskStore::finished_before`]), and a sweeper evicts what is past its TTL once a
//! second. (A timer per finished task, kept for the whole TTL, grew the keeper's memory
//! with the rate of tasks times the TTL: ~145 bytes a task, ~10 GB after an hour of
//! 20k tasks a second.)

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::StreamExt;
use sb_protocol::{Message, TaskState};
use sb_store::backoff::Backoff;
use sb_store::{EventBus, EventNotice, PushConfigStore, TaskRecord, TaskStore};
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The bus group of deadline keepers: with several task-state replicas each event arms
/// the timer of one of them. Every expiry action is a conditional write, so a stale
/// timer on another replica (or two replicas firing) changes nothing twice.
pub const DEADLINES_GROUP: &str = "deadlines";

/// The pauses between attempts to follow the bus when it cannot be followed.
const FOLLOW_RETRY_FIRST: Duration = Duration::from_secs(1);
const FOLLOW_RETRY_MAX: Duration = Duration::from_secs(30);

/// How often finished tasks past their TTL are looked for: a task is evicted at most
/// this long after its TTL.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// Finished tasks read per round of a sweep.
const SWEEP_BATCH: usize = 512;
/// Evictions under way at once: each is a write, and the store batches concurrent writes.
const EVICTIONS_AT_ONCE: usize = 64;

use crate::lifecycle::TaskUpdate;
use crate::service::TaskService;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadlineConfig {
    /// How long a finished task stays readable before it is evicted.
    pub terminal_ttl: Duration,
    /// How long a task may wait in input-required or auth-required.
    pub input_timeout: Duration,
    /// How long a submitted or working task may go without any event.
    pub stall_timeout: Duration,
}

impl Default for DeadlineConfig {
    fn default() -> Self {
        DeadlineConfig {
            terminal_ttl: Duration::from_secs(3600),
            input_timeout: Duration::from_secs(600),
            stall_timeout: Duration::from_secs(900),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    CancelWaiting,
    FailStalled,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Timer {
    due: Instant,
    task_id: Arc<str>,
    seq: u64,
    action: Action,
}

/// One timer per running task: the newest event's. The heap holds at most a couple of
/// entries per task (an entry is re-armed lazily when its task's deadline moved later),
/// and the entries of tasks that finished are dropped once they outnumber the live
/// ones, so memory follows the number of running tasks, not the number of events.
#[derive(Debug, Default)]
struct Timers {
    latest: sb_store::IdMap<Arc<str>, Timer>,
    /// The earliest due time each task has in the heap.
    armed: sb_store::IdMap<Arc<str>, Instant>,
    heap: BinaryHeap<Reverse<(Instant, Arc<str>)>>,
}

impl Timers {
    fn set(&mut self, timer: Timer) {
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
    fn finish(&mut self, task_id: &str) {
        self.latest.remove(task_id);
        if self.armed.remove(task_id).is_some() && self.heap.len() > 2 * self.armed.len() + 64 {
            // Most entries are finished tasks' (skipped when due, but held until then).
            let armed = &self.armed;
            self.heap
                .retain(|Reverse((due, id))| armed.get(id) == Some(due));
        }
    }

    fn next_due(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((due, _))| *due)
    }

    /// The next timer due at `now`, if any.
    fn pop_due(&mut self, now: Instant) -> Option<Timer> {
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

#[derive(Debug, Clone)]
pub struct DeadlineKeeper {
    config: DeadlineConfig,
    tasks: Arc<dyn TaskService>,
    store: Arc<dyn TaskStore>,
    push: Arc<dyn PushConfigStore>,
    /// The wall clock read against tokio's at the start, so the sweeper's "now" follows
    /// tokio's clock (which tests pause and move) while comparing with stored times.
    started: (DateTime<Utc>, Instant),
}

impl DeadlineKeeper {
    pub fn new(
        config: DeadlineConfig,
        tasks: Arc<dyn TaskService>,
        store: Arc<dyn TaskStore>,
        push: Arc<dyn PushConfigStore>,
    ) -> DeadlineKeeper {
        DeadlineKeeper {
            config,
            tasks,
            store,
            push,
            started: (Utc::now(), Instant::now()),
        }
    }

    /// The timer of a task left in `state` `since` ago; `None` for a finished task.
    fn timer_for(
        &self,
        task_id: Arc<str>,
        seq: u64,
        state: TaskState,
        since: Duration,
    ) -> Option<Timer> {
        let (action, limit) = if state.is_terminal() {
            return None;
        } else if state.is_interrupted() {
            (Action::CancelWaiting, self.config.input_timeout)
        } else {
            (Action::FailStalled, self.config.stall_timeout)
        };
        let due = Instant::now() + limit.saturating_sub(since);
        Some(Timer {
            due,
            task_id,
            seq,
            action,
        })
    }

    /// The timers of the tasks still running or waiting.
    fn load(&self, records: &[TaskRecord]) -> Timers {
        let mut timers = Timers::default();
        for record in records {
            let age = (Utc::now() - record.status_time())
                .to_std()
                .unwrap_or_default();
            let task_id = record.task.id.as_str().into();
            if let Some(timer) = self.timer_for(task_id, record.seq, record.state(), age) {
                timers.set(timer);
            }
        }
        timers
    }

    /// Runs until `shutdown`: loads every stored task's deadline, then follows the bus;
    /// the sweeper of finished tasks runs beside it. Subscribe first (`bus`), so nothing
    /// committed while loading is missed.
    pub async fn run(self, bus: Arc<dyn EventBus>, shutdown: CancellationToken) {
        let mut retries = Backoff::doubling(FOLLOW_RETRY_FIRST, FOLLOW_RETRY_MAX);
        let mut events = loop {
            match bus.subscribe_all(DEADLINES_GROUP).await {
                Ok(events) => break events,
                Err(e) => {
                    tracing::error!(error = %e, "deadline keeper cannot follow the bus; retrying");
                    let delay = retries.next_delay().unwrap_or(FOLLOW_RETRY_MAX);
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        () = tokio::time::sleep(delay) => {}
                    }
                }
            }
        };
        tokio::spawn(self.clone().sweep_finished(shutdown.clone()));
        let mut timers = Timers::default();
        match self.store.list_unfinished().await {
            Ok(records) => timers = self.load(&records),
            Err(e) => {
                tracing::error!(error = %e, "cannot load task deadlines; only new events get them")
            }
        }
        loop {
            let next_due = timers.next_due();
            let sleep = async {
                match next_due {
                    Some(due) => tokio::time::sleep_until(due).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => return,
                received = events.recv() => {
                    // The rest of a burst too before sleeping again: one timer
                    // registration per burst, not per event.
                    let mut burst = sb_store::take_burst(received, &mut events).into_iter().peekable();
                    while let Some(received) = burst.next() {
                        match received {
                            Ok(event) => {
                                // A commit's events come together, and the last of a task's
                                // run sets the timer that counts: an earlier one's would only
                                // be re-armed to it when due.
                                let superseded = matches!(
                                    burst.peek(),
                                    Some(Ok(next)) if next.task_id == event.task_id
                                );
                                if !superseded {
                                    match self.timer_for_event(&event) {
                                        Some(timer) => timers.set(timer),
                                        None => timers.finish(&event.task_id),
                                    }
                                }
                            }
                            Err(broadcast::error::RecvError::Lagged(missed)) => {
                                // Timers of the missed events are lost: rebuild them from the store.
                                tracing::warn!(missed, "deadline keeper fell behind; reloading deadlines");
                                if let Ok(records) = self.store.list_unfinished().await {
                                    timers = self.load(&records);
                                }
                            }
                            Err(broadcast::error::RecvError::Closed) => return,
                        }
                    }
                }
                () = sleep => {
                    while let Some(timer) = timers.pop_due(Instant::now()) {
                        self.fire(timer).await;
                    }
                }
            }
        }
    }

    fn timer_for_event(&self, event: &EventNotice) -> Option<Timer> {
        // Artifact updates keep a working task alive too: any event resets the stall timer.
        let state = event.state.unwrap_or(TaskState::Working);
        self.timer_for(event.task_id.clone(), event.seq, state, Duration::ZERO)
    }

    async fn fire(&self, timer: Timer) {
        let Ok(Some(record)) = self.store.get(&timer.task_id).await else {
            return;
        };
        if record.seq != timer.seq {
            return; // the task moved on; its newer event set a newer timer
        }
        match timer.action {
            Action::CancelWaiting => {
                let minutes = self.config.input_timeout.as_secs_f64() / 60.0;
                let reason = format!(
                    "canceled: no answer arrived within {minutes:.0} minutes of the request for input"
                );
                let update = TaskUpdate::Status {
                    state: TaskState::Canceled,
                    message: Some(Message::agent_text(reason)),
                };
                self.conditional(
                    &record,
                    &[TaskState::InputRequired, TaskState::AuthRequired],
                    update,
                )
                .await;
            }
            Action::FailStalled => {
                let minutes = self.config.stall_timeout.as_secs_f64() / 60.0;
                let reason = format!("failed: the agent reported nothing for {minutes:.0} minutes");
                let update = TaskUpdate::Status {
                    state: TaskState::Failed,
                    message: Some(Message::agent_text(reason)),
                };
                self.conditional(&record, &[TaskState::Submitted, TaskState::Working], update)
                    .await;
            }
        }
    }

    /// Evicts the finished tasks past their TTL, once every [`SWEEP_EVERY`], until
    /// `shutdown`. With several task-state replicas each one sweeps; an eviction of a
    /// task another replica evicted first finds nothing to delete.
    async fn sweep_finished(self, shutdown: CancellationToken) {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = every.tick() => {}
            }
            let evicted = self.evict_due().await;
            if evicted > 0 {
                tracing::info!(evicted, "evicted finished tasks after their TTL");
            }
        }
    }

    /// Evicts every finished task past its TTL now; returns how many.
    async fn evict_due(&self) -> usize {
        let elapsed = Instant::now().saturating_duration_since(self.started.1);
        let cutoff = chrono::TimeDelta::from_std(elapsed)
            .ok()
            .and_then(|elapsed| self.started.0.checked_add_signed(elapsed))
            .zip(chrono::TimeDelta::from_std(self.config.terminal_ttl).ok())
            .and_then(|(now, ttl)| now.checked_sub_signed(ttl));
        // A TTL reaching back past the calendar's start: nothing is ever due.
        let Some(cutoff) = cutoff else {
            return 0;
        };
        let cutoff = u64::try_from(cutoff.timestamp_millis()).unwrap_or(0);
        let mut evicted = 0;
        loop {
            let due = match self.store.finished_before(cutoff, SWEEP_BATCH).await {
                Ok(due) => due,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot list the finished tasks past their TTL");
                    return evicted;
                }
            };
            let round = due.len();
            let done: Vec<bool> = futures::stream::iter(due)
                .map(|task_id| async move { self.evict(&task_id).await })
                .buffer_unordered(EVICTIONS_AT_ONCE)
                .collect()
                .await;
            evicted += done.iter().filter(|ok| **ok).count();
            // A failed eviction stays due: the next sweep tries it again, not this loop.
            if round < SWEEP_BATCH || done.contains(&false) {
                return evicted;
            }
        }
    }

    async fn conditional(&self, record: &TaskRecord, expected: &[TaskState], update: TaskUpdate) {
        match self
            .tasks
            .update_if(&record.task.id, expected, update)
            .await
        {
            Ok(Some(next)) => {
                tracing::info!(task_id = %record.task.id, state = next.state().as_str(), "deadline passed")
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(task_id = %record.task.id, error = %e, "could not apply a deadline")
            }
        }
    }

    /// Deletes a finished task with its push configs; returns whether that went well.
    async fn evict(&self, task_id: &str) -> bool {
        if self.push.may_have_push_configs(task_id)
            && let Err(e) = self.push.delete_push_configs(task_id).await
        {
            tracing::warn!(task_id, error = %e, "could not evict push configs");
            return false;
        }
        match self.store.delete(task_id).await {
            Ok(_) => {
                tracing::debug!(task_id, "finished task evicted after its TTL");
                true
            }
            Err(e) => {
                tracing::warn!(task_id, error = %e, "could not evict a finished task");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{LocalTaskService, NewTask, Scope};
    use sb_protocol::{ErrorKind, Role};
    use sb_store::{LocalBus, MemoryStore};

    struct World {
        tasks: Arc<LocalTaskService>,
        bus: Arc<dyn EventBus>,
        store: Arc<MemoryStore>,
        stop: CancellationToken,
    }

    async fn world() -> World {
        let store = Arc::new(MemoryStore::new());
        let bus: Arc<dyn EventBus> = Arc::new(LocalBus::new());
        let tasks = Arc::new(LocalTaskService::new(store.clone(), bus.clone()));
        let config = DeadlineConfig {
            terminal_ttl: Duration::from_secs(3600),
            input_timeout: Duration::from_secs(600),
            stall_timeout: Duration::from_secs(900),
        };
        let keeper = DeadlineKeeper::new(config, tasks.clone(), store.clone(), store.clone());
        let stop = CancellationToken::new();
        tokio::spawn(keeper.run(bus.clone(), stop.clone()));
        // Let the keeper subscribe before the test commits anything.
        tokio::task::yield_now().await;
        World {
            tasks,
            bus,
            store,
            stop,
        }
    }

    fn scope() -> Scope {
        Scope {
            agent: "a".into(),
            owner: String::new(),
        }
    }

    async fn task_in(w: &World, state: TaskState) -> String {
        let message = Message {
            role: Role::User,
            ..Message::agent_text("hi")
        };
        let id = w
            .tasks
            .create(NewTask {
                scope: scope(),
                message,
                metadata: None,
            })
            .await
            .unwrap()
            .task
            .id;
        w.tasks
            .update(
                &id,
                TaskUpdate::Status {
                    state,
                    message: None,
                },
            )
            .await
            .unwrap();
        id
    }

    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

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

    #[tokio::test(start_paused = true)]
    async fn waiting_for_input_too_long_cancels_with_a_reason() {
        let w = world().await;
        let id = task_in(&w, TaskState::InputRequired).await;
        let mut watch = w.bus.subscribe(&id).await.unwrap();
        tokio::time::sleep(Duration::from_secs(599)).await;
        settle().await;
        assert_eq!(
            w.tasks.get(&scope(), &id).await.unwrap().state(),
            TaskState::InputRequired
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        settle().await;
        let task = w.tasks.get(&scope(), &id).await.unwrap();
        assert_eq!(task.state(), TaskState::Canceled);
        assert!(
            task.task
                .status
                .message
                .unwrap()
                .text()
                .contains("no answer arrived within 10 minutes")
        );
        // The cancel is an ordinary event: streams close on it and webhooks carry it.
        let event = watch.recv().await.unwrap();
        assert_eq!(event.event.state(), Some(TaskState::Canceled));
        w.stop.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_in_time_resets_nothing_it_should_not() {
        let w = world().await;
        let id = task_in(&w, TaskState::InputRequired).await;
        tokio::time::sleep(Duration::from_secs(300)).await;
        let answer = Message {
            role: Role::User,
            ..Message::agent_text("answer")
        };
        w.tasks
            .update(&id, TaskUpdate::Resume { message: answer })
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(400)).await;
        settle().await;
        assert_eq!(
            w.tasks.get(&scope(), &id).await.unwrap().state(),
            TaskState::Working,
            "the old input deadline no longer applies"
        );
        tokio::time::sleep(Duration::from_secs(600)).await;
        settle().await;
        let task = w.tasks.get(&scope(), &id).await.unwrap();
        assert_eq!(task.state(), TaskState::Failed, "but a silent agent stalls");
        assert!(
            task.task
                .status
                .message
                .unwrap()
                .text()
                .contains("reported nothing for 15 minutes")
        );
        w.stop.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn finished_tasks_are_evicted_after_their_ttl() {
        let w = world().await;
        let id = task_in(&w, TaskState::Completed).await;
        let running = task_in(&w, TaskState::Working).await;
        w.tasks
            .update(
                &running,
                TaskUpdate::Status {
                    state: TaskState::Working,
                    message: None,
                },
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(901)).await;
        settle().await;
        assert_eq!(
            w.tasks.get(&scope(), &running).await.unwrap().state(),
            TaskState::Failed,
            "the working task stalled"
        );
        tokio::time::sleep(Duration::from_secs(3599 - 901)).await;
        settle().await;
        assert!(w.tasks.get(&scope(), &id).await.is_ok());
        tokio::time::sleep(Duration::from_secs(2)).await;
        settle().await;
        assert_eq!(
            w.tasks.get(&scope(), &id).await.unwrap_err().kind,
            ErrorKind::TaskNotFound
        );
        assert!(w.store.events_after(&id, 0, 10).await.unwrap().is_empty());
        w.stop.cancel();
    }

    #[tokio::test]
    async fn a_ttl_past_the_calendar_evicts_nothing() {
        let w = world().await;
        let id = task_in(&w, TaskState::Completed).await;
        let config = DeadlineConfig {
            terminal_ttl: Duration::from_secs(u64::MAX),
            ..DeadlineConfig::default()
        };
        let keeper = DeadlineKeeper::new(config, w.tasks.clone(), w.store.clone(), w.store.clone());
        assert_eq!(keeper.evict_due().await, 0);
        assert!(w.store.get(&id).await.unwrap().is_some());
        w.stop.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn a_sweep_evicts_every_finished_task_due_and_nothing_else() {
        let w = world().await;
        // More than one round of the sweep, and one with a push config to take along.
        let mut finished = Vec::new();
        for _ in 0..SWEEP_BATCH + 100 {
            finished.push(task_in(&w, TaskState::Completed).await);
        }
        let record = sb_store::suite::push_config_record(&finished[0], "hook");
        w.store.put_push_config(record).await.unwrap();
        // The store's times are the wall clock's, which a paused tokio clock does not
        // move: a task not yet due is one that finished in the wall clock's future.
        let young = task_in(&w, TaskState::Failed).await;
        let mut record = w.store.get(&young).await.unwrap().unwrap();
        record.task.status.timestamp = Some(Utc::now() + chrono::Duration::minutes(30));
        record.seq += 1;
        let commit = sb_store::TaskCommit {
            expected_seq: record.seq - 1,
            record: Arc::new(record),
            events: Vec::new(),
            open_limit: None,
        };
        w.store.commit(commit).await.unwrap();
        tokio::time::sleep(Duration::from_secs(3601)).await;
        settle().await;
        for id in &finished {
            assert!(w.store.get(id).await.unwrap().is_none(), "{id} evicted");
        }
        assert!(
            w.store
                .list_push_configs(&finished[0])
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            w.store.get(&young).await.unwrap().is_some(),
            "finished half an hour ago: not due"
        );
        assert_eq!(
            w.store.finished_before(u64::MAX, 10).await.unwrap(),
            [young],
            "the index holds the one left, once"
        );
        w.stop.cancel();
    }
}
