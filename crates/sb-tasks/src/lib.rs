//! The task-state service: creates tasks, applies agent updates, resumes and cancels
//! them, always through the one state machine in [`lifecycle`].
//!
//! # Layout
//! - [`lifecycle`]: the pure transition function (legal moves, history, artifact merge).
//! - [`service`]: the [`TaskService`] trait the gateway and agents call, with the types
//!   it takes and returns, and [`LocalTaskService`]; its parts:
//!   - `service/local.rs`: [`LocalTaskService`], which runs it over a
//!     [`sb_store::TaskStore`] with compare-and-set retries and publishes each committed
//!     event on the bus;
//!   - `service/local/open_limit.rs`: who counts each principal's open tasks for the
//!     in-flight limit, this service or a shared store.
//! - [`page_token`]: opaque ListTasks page tokens.
//! - [`inflight`]: open tasks per principal, for the in-flight limit.
//! - [`transitions`]: [`Transitions`], told of each committed change of a task's state.
//! - [`deadlines`]: the [`DeadlineKeeper`], which follows the bus; its parts:
//!   - `deadlines/timeouts.rs`: input and stall timeouts of running tasks, and what
//!     fires when one passes;
//!   - `deadlines/timers.rs`: the heap those timeouts wait in, one timer per running task;
//!   - `deadlines/retention.rs`: eviction of finished tasks after a TTL.
//!
//! Every mutation is read → transition → conditional write on the task's sequence
//! number; a lost race re-reads and re-checks, so a cancel racing a completion can never
//! overwrite a terminal state.

pub mod deadlines;
pub mod inflight;
pub mod lifecycle;
pub mod page_token;
pub mod service;
pub mod transitions;

pub use deadlines::{DeadlineConfig, DeadlineKeeper};
pub use lifecycle::TaskUpdate;
pub use service::{
    DEFAULT_MAX_TASKS_IN_FLIGHT, LocalTaskService, NewTask, Scope, TaskDrafts, TaskListing,
    TaskResult, TaskService,
};
pub use transitions::Transitions;
