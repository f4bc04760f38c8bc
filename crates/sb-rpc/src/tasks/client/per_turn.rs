//! The client of one turn of a remote worker: the same [`TaskStateClient`], its updates
//! naming the turn, so the task-state service refuses them once the turn is no longer
//! leased to this worker.

use super::TaskStateClient;

impl TaskStateClient {
    /// The same client for one turn of a remote worker: its updates name the turn, and
    /// are refused once the turn is no longer leased to this worker.
    pub fn for_turn(&self, assignment_id: &str, agent: &str) -> TaskStateClient {
        TaskStateClient {
            turn: Some((assignment_id.to_owned(), agent.to_owned())),
            ..self.clone()
        }
    }

    pub(super) fn turn_fields(&self) -> (String, String) {
        self.turn.clone().unwrap_or_default()
    }
}
