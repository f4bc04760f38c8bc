//! The open tasks of each principal, for the per-principal limit on tasks in flight.
//!
//! "In flight" is every task not yet finished, waiting ones included: each holds state and
//! (for interrupted tasks) a deadline. The index is kept from the commits this service
//! makes and rebuilt from the store at startup.

use parking_lot::Mutex;
use sb_protocol::{A2AError, ErrorKind};
use sb_store::TaskRecord;

/// The answer to a caller over its limit of unfinished tasks (retryable).
pub fn limit_reached(limit: usize) -> A2AError {
    A2AError::new(
        ErrorKind::ResourceExhausted,
        format!(
            "{limit} tasks are already open for this caller (the limit); wait for one to finish or cancel one"
        ),
    )
}

#[derive(Debug)]
pub struct InFlight {
    limit: usize,
    // A plain mutex: held for a map lookup, never across an await.
    open: Mutex<sb_store::IdMap<(String, String), sb_store::IdSet<String>>>,
}

impl InFlight {
    pub fn new(limit: usize) -> InFlight {
        InFlight {
            limit,
            open: Mutex::new(sb_store::IdMap::default()),
        }
    }

    /// Claims a slot for a new task, or refuses with a retryable error.
    pub fn reserve(&self, agent: &str, owner: &str, task_id: &str) -> Result<(), A2AError> {
        let mut open = self.open.lock();
        let tasks = open
            .entry((agent.to_owned(), owner.to_owned()))
            .or_default();
        if tasks.len() >= self.limit {
            return Err(limit_reached(self.limit));
        }
        tasks.insert(task_id.to_owned());
        Ok(())
    }

    /// Records a task's state after a commit: finished tasks free their slot.
    pub fn observe(&self, record: &TaskRecord) {
        let key = (record.agent.clone(), record.owner.clone());
        let mut open = self.open.lock();
        if record.state().is_terminal() {
            if let Some(tasks) = open.get_mut(&key) {
                tasks.remove(&record.task.id);
                if tasks.is_empty() {
                    open.remove(&key);
                }
            }
        } else {
            open.entry(key).or_default().insert(record.task.id.clone());
        }
    }

    /// Frees a slot reserved for a task that was never created.
    pub fn release(&self, agent: &str, owner: &str, task_id: &str) {
        if let Some(tasks) = self
            .open
            .lock()
            .get_mut(&(agent.to_owned(), owner.to_owned()))
        {
            tasks.remove(task_id);
        }
    }
}
