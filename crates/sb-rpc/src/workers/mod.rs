//! Agents on remote workers.
//!
//! - [`QueueRunner`]: the [`sb_agent::TurnRunner`] of the task-state service: queues each
//!   turn durably for its agent and tells the caller when the turn is over.
//! - [`WorkerHub`]: the `Workers.Attach` server: hands queued turns to the connected
//!   workers within their capacity, holds the leases while they live, forwards
//!   cancellations, and re-queues or fails the turns of a worker that is lost.
//! - [`run_worker`]: the worker side: runs any [`sb_agent::Agent`] unchanged, reporting
//!   through the task-state service like an in-process agent.

mod hub;
mod queue_runner;
mod session;
mod turn_done;
mod worker;

pub use hub::{HubMetrics, WorkerHub};
pub use queue_runner::QueueRunner;
pub use worker::{WorkerOptions, run_worker};

use std::time::Duration;

/// What happens to a turn whose worker is lost (stopped heartbeating or disconnected).
/// In configuration files: `"fail"` or `"reassign"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnWorkerLost {
    /// Fail the task with the reason.
    #[default]
    Fail,
    /// Queue the turn again for another worker (at most [`MAX_REDELIVERIES`] times).
    Reassign,
}

/// How often a lost turn is handed out again before its task is failed.
pub const MAX_REDELIVERIES: u32 = 3;

/// A worker that sends nothing for this long is lost, and so is a lease not renewed for
/// this long (its replica died).
pub const LEASE: Duration = Duration::from_secs(15);

/// How often workers send a heartbeat and replicas renew their leases.
pub const HEARTBEAT: Duration = Duration::from_secs(3);

/// Per-agent settings of the queue.
#[derive(Clone, Debug)]
pub struct QueuePolicy {
    /// Turns queued or running at most; a task beyond it is rejected.
    pub max_queued: usize,
    pub on_worker_lost: OnWorkerLost,
}

impl Default for QueuePolicy {
    fn default() -> Self {
        QueuePolicy {
            max_queued: 1000,
            on_worker_lost: OnWorkerLost::Fail,
        }
    }
}
