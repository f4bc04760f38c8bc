//! Who counts each principal's open tasks for the in-flight limit: this service from its
//! own commits, or a store shared with other replicas, atomically with each create.

use std::sync::Arc;

use sb_store::TaskRecord;

use super::LocalTaskService;
use crate::inflight::InFlight;
use crate::service::TaskResult;

/// Who counts each principal's unfinished tasks.
#[derive(Debug, Clone)]
pub(super) enum OpenTaskLimit {
    /// This service, from the commits it makes: right when it is the only writer.
    Local(Arc<InFlight>),
    /// The store, atomically with each create: right with several replicas, each of
    /// which sees only its own commits.
    Shared(usize),
}

/// The default limit of open tasks per principal and agent.
pub const DEFAULT_MAX_TASKS_IN_FLIGHT: usize = 10_000;

impl LocalTaskService {
    /// Limits the open tasks of each principal (per agent) to `limit`, counted here.
    pub fn with_max_in_flight(mut self, limit: usize) -> LocalTaskService {
        self.limit = OpenTaskLimit::Local(Arc::new(InFlight::new(limit)));
        self
    }

    /// The same limit, counted by a store shared with other replicas (Redis).
    pub fn with_shared_max_in_flight(mut self, limit: usize) -> LocalTaskService {
        self.limit = OpenTaskLimit::Shared(limit);
        self
    }

    pub(super) fn observe(&self, record: &TaskRecord) {
        if let OpenTaskLimit::Local(in_flight) = &self.limit {
            in_flight.observe(record);
        }
    }

    /// Claims the open-task slot of a new task, when this service counts them (a shared
    /// store counts them in the commit itself).
    pub(super) fn claim_slot(&self, record: &TaskRecord) -> TaskResult<()> {
        match &self.limit {
            OpenTaskLimit::Local(in_flight) => {
                in_flight.reserve(&record.agent, &record.owner, &record.task.id)
            }
            OpenTaskLimit::Shared(_) => Ok(()),
        }
    }

    /// Frees the slot of a task that was never created.
    pub(super) fn release_slot(&self, record: &TaskRecord) {
        if let OpenTaskLimit::Local(in_flight) = &self.limit {
            in_flight.release(&record.agent, &record.owner, &record.task.id);
        }
    }
}
