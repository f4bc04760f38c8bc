//! Agents on remote workers.
//!
//! - [`QueueRunner`]: the [`sb_agent::TurnRunner`] of the task-state service: queues each
//!   turn durably for its agent and tells the caller when the turn is over.
//! - [`WorkerHub`]: the `Workers.Attach` server: hands queued turns to the connected
//!   workers within their capacity, holds the leases while they live, forwards
//!   cancellations, and re-queues or fails the turns of a worker that is lost.
//! - [`run_worker`]: the worker side: runs any [`sb_agent::Agent`] unchanged, reporting
//!   through the task-state service like an in-process agent.

pub mod assignment;
mod hub;
mod queue_runner;
mod session;
mod turn_done;
mod worker;

pub use hub::{HubMetrics, WorkerHub};
pub use queue_runner::QueueRunner;

pub use worker::{WorkerOptions, run_worker};

use std::time::Duration;

/// What happens to a turn whose worker is lost (stopped heartbeating or disconnected):
/// the agent definition's `on_worker_lost`, `"fail"` or `"reassign"`.
pub use sb_registry::OnWorkerLost;

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
            max_queued: sb_registry::definition::DEFAULT_MAX_QUEUED,
            on_worker_lost: OnWorkerLost::Fail,
        }
    }
}

impl QueuePolicy {
    /// The policy an agent's definition sets.
    pub fn of(definition: &sb_registry::AgentDefinition) -> QueuePolicy {
        QueuePolicy {
            max_queued: definition.max_queued,
            on_worker_lost: definition.on_worker_lost,
        }
    }
}

/// The agents whose turns are queued, and each one's policy.
pub trait Policies: Send + Sync + std::fmt::Debug + 'static {
    fn policy(&self, agent: &str) -> Option<QueuePolicy>;
    fn agents(&self) -> Vec<String>;
}

/// The registered agents, as the registry says now.
#[derive(Clone, Debug)]
pub struct FleetPolicies(pub std::sync::Arc<dyn sb_registry::CardRegistry>);

impl Policies for FleetPolicies {
    fn policy(&self, agent: &str) -> Option<QueuePolicy> {
        let fleet = self.0.fleet();
        Some(QueuePolicy::of(
            &fleet.agent(agent)?.registration.definition,
        ))
    }

    fn agents(&self) -> Vec<String> {
        self.0.fleet().agents.keys().cloned().collect()
    }
}

/// A fixed set of agents (tests, and programs without a registry).
impl Policies for std::collections::BTreeMap<String, QueuePolicy> {
    fn policy(&self, agent: &str) -> Option<QueuePolicy> {
        self.get(agent).cloned()
    }

    fn agents(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }
}
