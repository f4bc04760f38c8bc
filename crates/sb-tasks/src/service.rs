//! The task-state service as its callers see it: the [`TaskService`] trait, the
//! [`TaskDrafts`] a local service offers, and the types they take and return. The
//! implementation over a store, [`LocalTaskService`], is in `service/local.rs`.

mod local;

use std::sync::Arc;

use async_trait::async_trait;
use sb_protocol::requests::ListTasksRequest;
use sb_protocol::{A2AError, Message, Metadata, TaskState};
use sb_store::{StoredEvent, TaskRecord};

use crate::lifecycle::TaskUpdate;

pub use local::{DEFAULT_MAX_TASKS_IN_FLIGHT, LocalTaskService};

/// Who is asking: the hosted agent addressed and the authenticated principal. A task
/// outside the caller's scope is reported as not found, never as forbidden.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    pub agent: String,
    pub owner: String,
}

impl Scope {
    /// The scope a stored task belongs to.
    pub fn of(record: &TaskRecord) -> Scope {
        Scope {
            agent: record.agent.clone(),
            owner: record.owner.clone(),
        }
    }
}

/// A new task for an agent, created from the user's first message.
#[derive(Clone, Debug)]
pub struct NewTask {
    pub scope: Scope,
    pub message: Message,
    pub metadata: Option<Metadata>,
}

/// One page of a ListTasks answer.
#[derive(Clone, Debug)]
pub struct TaskListing {
    pub records: Vec<TaskRecord>,
    pub total: usize,
    pub next_page_token: String,
    pub page_size: usize,
}

pub type TaskResult<T> = Result<T, A2AError>;

/// The task-state service as its callers see it: in process or over gRPC.
#[async_trait]
pub trait TaskService: Send + Sync + std::fmt::Debug + 'static {
    /// Creates a submitted task from the user's message (whose history it starts).
    async fn create(&self, new: NewTask) -> TaskResult<TaskRecord>;
    /// This service's drafts, where it can create a task together with its agent's
    /// first reports: only in process, where every limit on a new task can be checked
    /// before its commit.
    fn drafts(&self) -> Option<&dyn TaskDrafts> {
        None
    }
    /// Returns the task if it exists and is visible in `scope`.
    async fn get(&self, scope: &Scope, task_id: &str) -> TaskResult<TaskRecord>;
    async fn list(&self, scope: &Scope, request: &ListTasksRequest) -> TaskResult<TaskListing>;
    /// Applies an update; this is how agents report progress.
    async fn update(&self, task_id: &str, update: TaskUpdate) -> TaskResult<TaskRecord>;
    /// Applies `updates` in order as one atomic commit: all of them or, when one is
    /// refused, none (the error is that update's). An agent that reports faster than
    /// the store commits sends what queued up meanwhile in one call: one durable write
    /// instead of one per update.
    async fn update_all(&self, task_id: &str, updates: &[TaskUpdate]) -> TaskResult<TaskRecord>;
    /// Applies `update` only if the task is in one of `expected` states, in the same
    /// atomic step; returns `None` (and changes nothing) otherwise.
    async fn update_if(
        &self,
        task_id: &str,
        expected: &[TaskState],
        update: TaskUpdate,
    ) -> TaskResult<Option<TaskRecord>>;
    /// Cancels a task in one atomic step. An already-canceled task is returned as is
    /// (digest §11.7); any other terminal state is TaskNotCancelable.
    async fn cancel(&self, scope: &Scope, task_id: &str) -> TaskResult<TaskRecord>;
    /// Events of the task after `after`, oldest first.
    async fn events_after(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> TaskResult<Vec<StoredEvent>>;
}

/// A task created together with its agent's first reports, as one commit where there
/// would be two: [`TaskDrafts::draft`] gives the task as it will be created, so an agent
/// in this process can run while the creation is on its way to the store, and
/// [`TaskDrafts::create_with`] commits it with what the agent reported meanwhile.
#[async_trait]
pub trait TaskDrafts: Send + Sync {
    /// The task as it will be created (ids assigned, submitted, seq 1), its open-task
    /// slot already claimed.
    fn draft(&self, new: NewTask) -> TaskResult<TaskRecord>;
    /// Creates a task from its draft with `updates` applied after it, as one atomic
    /// commit. When one of `updates` is refused, the task is created with those before
    /// it, as if they had been applied one by one; the refusal is returned beside the
    /// task as stored, and the updates after it are not applied. When the store fails,
    /// nothing is stored and the draft's slot is freed.
    async fn create_with(
        &self,
        draft: TaskRecord,
        updates: Vec<TaskUpdate>,
    ) -> TaskResult<(Arc<TaskRecord>, Option<A2AError>)>;
}
