//! The storage seams. Services hold `Arc<dyn …>` and never see a backend type.

use async_trait::async_trait;
use tokio::sync::broadcast;

use crate::record::{
    DeadLetter, EventNotice, PushConfigRecord, StoredEvent, TaskCommit, TaskPage, TaskQuery,
    TaskRecord,
};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The task moved on since it was read (or already exists, for a create).
    #[error("task {task_id} changed concurrently (now at seq {current_seq})")]
    Conflict { task_id: String, current_seq: u64 },
    /// The principal has as many unfinished tasks as [`TaskCommit::open_limit`] allows.
    #[error("{limit} tasks are already open for this caller")]
    LimitReached { limit: usize },
    #[error("storage failure: {0}")]
    Backend(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

impl StoreError {
    pub fn backend(err: impl std::fmt::Display) -> StoreError {
        StoreError::Backend(err.to_string())
    }
}

/// `first` (what an all-tasks receiver's `recv` gave) and whatever else is already
/// waiting, without waiting, at most [`BURST`] in all and nothing after `Closed`:
/// consumers handle a burst of events per wake-up, not one each.
pub fn take_burst<T: Clone>(
    first: Result<T, broadcast::error::RecvError>,
    events: &mut broadcast::Receiver<T>,
) -> Vec<Result<T, broadcast::error::RecvError>> {
    use broadcast::error::{RecvError, TryRecvError};
    let mut burst = vec![first];
    while burst.len() < BURST && !matches!(burst.last(), Some(Err(RecvError::Closed))) {
        burst.push(match events.try_recv() {
            Ok(event) => Ok(event),
            Err(TryRecvError::Empty) => break,
            Err(TryRecvError::Lagged(missed)) => Err(RecvError::Lagged(missed)),
            Err(TryRecvError::Closed) => Err(RecvError::Closed),
        });
    }
    burst
}

/// Most events a consumer takes in one burst before it looks at its other work again.
pub const BURST: usize = 256;

#[async_trait]
pub trait TaskStore: Send + Sync + std::fmt::Debug + 'static {
    async fn get(&self, task_id: &str) -> StoreResult<Option<TaskRecord>>;

    /// Writes the record and appends its events, if and only if the stored task is
    /// still at `commit.expected_seq`; otherwise fails with [`StoreError::Conflict`].
    async fn commit(&self, commit: TaskCommit) -> StoreResult<()>;

    /// Events with `seq > after`, in order, at most `limit`.
    async fn events_after(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<StoredEvent>>;

    async fn list(&self, query: &TaskQuery) -> StoreResult<TaskPage>;

    /// Every task (tests and tools: this reads the whole store).
    async fn list_all(&self) -> StoreResult<Vec<TaskRecord>>;

    /// Every task not in a terminal state (at startup: recovery and rebuilding
    /// deadlines). Each store keeps them in an index of their own, so this reads the
    /// running and waiting tasks only, however many finished ones the store holds.
    async fn list_unfinished(&self) -> StoreResult<Vec<TaskRecord>>;

    /// Removes a task and its event log (TTL eviction). Returns whether it existed.
    async fn delete(&self, task_id: &str) -> StoreResult<bool>;

    /// The ids of finished tasks (in a terminal state) whose status time is at or
    /// before `cutoff_millis` (milliseconds since the epoch), earliest first, at most
    /// `limit`: what the TTL eviction removes next. Each store keeps them in an index
    /// ordered by that time, so the eviction holds nothing in memory per finished task
    /// and reads only what is due.
    async fn finished_before(&self, cutoff_millis: u64, limit: usize) -> StoreResult<Vec<String>>;
}

#[async_trait]
pub trait PushConfigStore: Send + Sync + std::fmt::Debug + 'static {
    /// Inserts or replaces the config with the same task id and config id.
    async fn put_push_config(&self, record: PushConfigRecord) -> StoreResult<()>;
    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> StoreResult<Option<PushConfigRecord>>;
    /// All configs of a task, ordered by config id.
    async fn list_push_configs(&self, task_id: &str) -> StoreResult<Vec<PushConfigRecord>>;
    /// Returns whether a config was removed.
    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> StoreResult<bool>;
    /// Removes every config of a task (when the task is evicted).
    async fn delete_push_configs(&self, task_id: &str) -> StoreResult<()>;
    /// Every config (the dispatcher's catch-up after a restart).
    async fn list_all_push_configs(&self) -> StoreResult<Vec<PushConfigRecord>>;
    /// Whether the task may have configs, answered from memory without waiting: `false`
    /// only when the store knows it has none, so the dispatcher spends nothing on the
    /// events of the many tasks without a webhook. Once a config's creation has
    /// returned, this answers `true` for its task.
    fn may_have_push_configs(&self, _task_id: &str) -> bool {
        true
    }
    /// Of `task_ids`, those that may have configs: one look for a burst of tasks where
    /// the answer is not in memory (a shared store).
    async fn with_push_configs(&self, task_ids: &[String]) -> StoreResult<Vec<String>> {
        Ok(task_ids
            .iter()
            .filter(|id| self.may_have_push_configs(id))
            .cloned()
            .collect())
    }
    /// Records that a config has been served every event up to `seq`. Only moves forward,
    /// and never brings back a config that was deleted meanwhile.
    async fn advance_push_cursor(
        &self,
        task_id: &str,
        config_id: &str,
        seq: u64,
    ) -> StoreResult<()>;
}

#[async_trait]
pub trait DeadLetterStore: Send + Sync + std::fmt::Debug + 'static {
    async fn put_dead_letter(&self, letter: DeadLetter) -> StoreResult<()>;
    /// Every dead letter, oldest first.
    async fn list_dead_letters(&self) -> StoreResult<Vec<DeadLetter>>;
    /// Removes and returns a dead letter (to re-drive it).
    async fn take_dead_letter(&self, id: &str) -> StoreResult<Option<DeadLetter>>;
}

/// The agent registry's records: each registered agent's stored form by name (opaque
/// bytes: the registry's JSON), and the key the registry signs cards with.
#[async_trait]
pub trait RegistryStore: Send + Sync + std::fmt::Debug + 'static {
    /// Every stored agent as (name, value), sorted by name.
    async fn list_agents(&self) -> StoreResult<Vec<(String, Vec<u8>)>>;
    /// Stores (creates or replaces) one agent, then tells every watcher (watch_agents) its name.
    async fn put_agent(&self, name: &str, value: Vec<u8>) -> StoreResult<()>;
    /// Removes one agent (whether it was there is returned), then tells every watcher its name.
    async fn remove_agent(&self, name: &str) -> StoreResult<bool>;
    /// The stored card-signing key. When none is stored yet, `generated` is stored and
    /// returned; set-if-absent is atomic, so replicas racing at their first start all end
    /// up with the same key (the first one stored).
    async fn signing_key(&self, generated: Vec<u8>) -> StoreResult<Vec<u8>>;
    /// Names of agents put or removed from now on, by this process or (Redis) by any
    /// replica sharing the backend. An empty name means "changes may have been missed
    /// (e.g. the connection to Redis was lost and is back): reload everything". So does
    /// a receiver that lags (`RecvError::Lagged`): it has missed names.
    async fn watch_agents(&self) -> StoreResult<tokio::sync::broadcast::Receiver<String>>;
}

/// How many agent names a [`RegistryStore::watch_agents`] receiver may fall behind before
/// it lags (and must reload everything). Registrations are rare; this is plenty.
pub(crate) const AGENT_CHANGES_CAPACITY: usize = 256;

/// Live delivery of committed events to whoever watches a task. Subscribers must treat
/// it as a wake-up with a payload, not as the order: gaps are filled from the event log.
#[async_trait]
pub trait EventBus: Send + Sync + std::fmt::Debug + 'static {
    /// Announces a committed event. Backends whose commit already publishes (Redis does it
    /// in the same script as the write) ignore this.
    fn publish(&self, event: &StoredEvent);
    /// The task's events from now on. Returns once the subscription is in place, so an
    /// event committed after this returns is never missed.
    async fn subscribe(&self, task_id: &str) -> StoreResult<broadcast::Receiver<StoredEvent>>;
    /// Every task's events, shared among the subscribers that name the same `group`
    /// across processes: each event reaches one member of the group (the replicas of one
    /// service split the work). A receiver that lags loses events and must recover from
    /// the durable log, so consumers keep their own durable cursors or act idempotently.
    async fn subscribe_all(&self, group: &str) -> StoreResult<broadcast::Receiver<EventNotice>>;

    /// Announces, to every process, that the agent turn `turn_key` (task id and turn
    /// id) is over: not an A2A event, nothing is logged; whoever waits for it stops.
    async fn announce_turn_over(&self, turn_key: &str) -> StoreResult<()>;

    /// Resolves at the next [`EventBus::announce_turn_over`] of `turn_key`, from any
    /// process; in place when this returns.
    async fn watch_turn(&self, turn_key: &str) -> StoreResult<tokio::sync::oneshot::Receiver<()>>;

    /// Resolves once a commit from any process brings the task to a terminal state (the
    /// commit after this returns, at the latest). A receiver that fails (its sender
    /// dropped) means the signal may have been lost: watch again, then read the task.
    async fn watch_end(&self, task_id: &str) -> StoreResult<tokio::sync::oneshot::Receiver<()>>;
}
