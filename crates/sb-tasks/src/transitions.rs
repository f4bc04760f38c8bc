//! [`Transitions`]: what hears, in the process whose commit made it, of each change of a
//! task's state. Each change is committed by exactly one compare-and-set, so it is heard
//! exactly once across replicas: what the fleet layer counts outcomes and keeps its
//! index of waiting tasks from.

use std::fmt::Debug;

use sb_protocol::TaskState;
use sb_store::TaskRecord;

/// Told of every committed change of a task's state.
pub trait Transitions: Send + Sync + Debug + 'static {
    /// The task moved from `from` (`None`: it was just created) to `record`'s state.
    /// Called right after the commit, on the committing caller's path: it must not
    /// block or wait.
    fn changed(&self, from: Option<TaskState>, record: &TaskRecord);
}
