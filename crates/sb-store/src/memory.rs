//! In-memory backend for tests: the same contract as the durable ones. The
//! [`FleetStore`](crate::FleetStore) part is in `memory/fleet.rs`.

mod fleet;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::broadcast;

use crate::record::{
    DeadLetter, PushConfigRecord, StoredEvent, TaskCommit, TaskPage, TaskQuery, TaskRecord,
};
use crate::traits::{
    AGENT_CHANGES_CAPACITY, DeadLetterStore, PushConfigStore, RegistryStore, StoreError,
    StoreResult, TaskStore,
};

#[derive(Debug)]
pub struct MemoryStore {
    // A plain mutex is right here: no lock is held across an await.
    state: Mutex<State>,
    /// The names of agents put or removed, for [`RegistryStore::watch_agents`].
    agents_changed: broadcast::Sender<String>,
    /// Apart from `state`: the fleet layer's writes never wait on the task store's.
    fleet: Mutex<fleet::FleetState>,
}

impl Default for MemoryStore {
    fn default() -> MemoryStore {
        MemoryStore {
            state: Mutex::default(),
            agents_changed: broadcast::channel(AGENT_CHANGES_CAPACITY).0,
            fleet: Mutex::default(),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    tasks: HashMap<String, TaskRecord>,
    events: HashMap<String, Vec<StoredEvent>>,
    push: BTreeMap<(String, String), PushConfigRecord>,
    dead: BTreeMap<String, DeadLetter>,
    /// Finished tasks by the time they finished (see [`TaskStore::finished_before`]).
    finished: BTreeSet<(u64, String)>,
    /// The registry's agents by name (ordered, as `list_agents` returns them).
    agents: BTreeMap<String, Vec<u8>>,
    signing_key: Option<Vec<u8>>,
}

impl State {
    /// Takes the task's entry out of the index of finished tasks, if it has one.
    fn unindex(&mut self, task_id: &str) {
        if let Some(at) = self
            .tasks
            .get(task_id)
            .and_then(TaskRecord::finished_at_millis)
        {
            self.finished.remove(&(at, task_id.to_owned()));
        }
    }
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }
}

#[async_trait]
impl TaskStore for MemoryStore {
    async fn get(&self, task_id: &str) -> StoreResult<Option<TaskRecord>> {
        Ok(self.state.lock().tasks.get(task_id).cloned())
    }

    async fn commit(&self, commit: TaskCommit) -> StoreResult<()> {
        let mut state = self.state.lock();
        let task_id = commit.record.task.id.clone();
        let current_seq = state.tasks.get(&task_id).map_or(0, |r| r.seq);
        if current_seq != commit.expected_seq {
            return Err(StoreError::Conflict {
                task_id,
                current_seq,
            });
        }
        state
            .events
            .entry(task_id.clone())
            .or_default()
            .extend(commit.events);
        state.unindex(&task_id);
        if let Some(at) = commit.record.finished_at_millis() {
            state.finished.insert((at, task_id.clone()));
        }
        state
            .tasks
            .insert(task_id, std::sync::Arc::unwrap_or_clone(commit.record));
        Ok(())
    }

    async fn events_after(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<StoredEvent>> {
        let state = self.state.lock();
        let Some(events) = state.events.get(task_id) else {
            return Ok(Vec::new());
        };
        Ok(events
            .iter()
            .filter(|e| e.seq > after)
            .take(limit)
            .cloned()
            .collect())
    }

    async fn list(&self, query: &TaskQuery) -> StoreResult<TaskPage> {
        let matching: Vec<TaskRecord> = self
            .state
            .lock()
            .tasks
            .values()
            .filter(|r| query.matches(r))
            .cloned()
            .collect();
        Ok(query.paginate(matching))
    }

    async fn list_all(&self) -> StoreResult<Vec<TaskRecord>> {
        Ok(self.state.lock().tasks.values().cloned().collect())
    }

    async fn list_unfinished(&self) -> StoreResult<Vec<TaskRecord>> {
        let state = self.state.lock();
        let unfinished = state.tasks.values().filter(|r| !r.state().is_terminal());
        Ok(unfinished.cloned().collect())
    }

    async fn delete(&self, task_id: &str) -> StoreResult<bool> {
        let mut state = self.state.lock();
        state.events.remove(task_id);
        state.unindex(task_id);
        Ok(state.tasks.remove(task_id).is_some())
    }

    async fn finished_before(&self, cutoff_millis: u64, limit: usize) -> StoreResult<Vec<String>> {
        let state = self.state.lock();
        Ok(state
            .finished
            .iter()
            .take_while(|(at, _)| *at <= cutoff_millis)
            .take(limit)
            .map(|(_, id)| id.clone())
            .collect())
    }
}

#[async_trait]
impl PushConfigStore for MemoryStore {
    async fn put_push_config(&self, record: PushConfigRecord) -> StoreResult<()> {
        let key = (
            record.config.task_id.clone(),
            record.config.id.clone().unwrap_or_default(),
        );
        self.state.lock().push.insert(key, record);
        Ok(())
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> StoreResult<Option<PushConfigRecord>> {
        Ok(self
            .state
            .lock()
            .push
            .get(&(task_id.to_owned(), config_id.to_owned()))
            .cloned())
    }

    fn may_have_push_configs(&self, task_id: &str) -> bool {
        let state = self.state.lock();
        let mut configs = state.push.range((task_id.to_owned(), String::new())..);
        configs.next().is_some_and(|((t, _), _)| t == task_id)
    }

    async fn list_push_configs(&self, task_id: &str) -> StoreResult<Vec<PushConfigRecord>> {
        let state = self.state.lock();
        Ok(state
            .push
            .range((task_id.to_owned(), String::new())..)
            .take_while(|((t, _), _)| t == task_id)
            .map(|(_, r)| r.clone())
            .collect())
    }

    async fn list_all_push_configs(&self) -> StoreResult<Vec<PushConfigRecord>> {
        Ok(self.state.lock().push.values().cloned().collect())
    }

    async fn advance_push_cursor(
        &self,
        task_id: &str,
        config_id: &str,
        seq: u64,
    ) -> StoreResult<()> {
        let mut state = self.state.lock();
        if let Some(record) = state
            .push
            .get_mut(&(task_id.to_owned(), config_id.to_owned()))
        {
            record.from_seq = record.from_seq.max(seq);
        }
        Ok(())
    }

    async fn delete_push_configs(&self, task_id: &str) -> StoreResult<()> {
        self.state.lock().push.retain(|(t, _), _| t != task_id);
        Ok(())
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> StoreResult<bool> {
        Ok(self
            .state
            .lock()
            .push
            .remove(&(task_id.to_owned(), config_id.to_owned()))
            .is_some())
    }
}

#[async_trait]
impl DeadLetterStore for MemoryStore {
    async fn put_dead_letter(&self, letter: DeadLetter) -> StoreResult<()> {
        self.state.lock().dead.insert(letter.id.clone(), letter);
        Ok(())
    }

    async fn list_dead_letters(&self) -> StoreResult<Vec<DeadLetter>> {
        let mut letters: Vec<DeadLetter> = self.state.lock().dead.values().cloned().collect();
        letters.sort_by_key(|l| l.failed_at);
        Ok(letters)
    }

    async fn take_dead_letter(&self, id: &str) -> StoreResult<Option<DeadLetter>> {
        Ok(self.state.lock().dead.remove(id))
    }
}

#[async_trait]
impl RegistryStore for MemoryStore {
    async fn list_agents(&self) -> StoreResult<Vec<(String, Vec<u8>)>> {
        let state = self.state.lock();
        Ok(state
            .agents
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect())
    }

    async fn put_agent(&self, name: &str, value: Vec<u8>) -> StoreResult<()> {
        self.state.lock().agents.insert(name.to_owned(), value);
        // No receiver is fine: nobody watches.
        let _ = self.agents_changed.send(name.to_owned());
        Ok(())
    }

    async fn remove_agent(&self, name: &str) -> StoreResult<bool> {
        let existed = self.state.lock().agents.remove(name).is_some();
        let _ = self.agents_changed.send(name.to_owned());
        Ok(existed)
    }

    async fn signing_key(&self, generated: Vec<u8>) -> StoreResult<Vec<u8>> {
        // Under the lock: callers racing all get the first key stored.
        Ok(self
            .state
            .lock()
            .signing_key
            .get_or_insert(generated)
            .clone())
    }

    async fn watch_agents(&self) -> StoreResult<broadcast::Receiver<String>> {
        Ok(self.agents_changed.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::store_test_suite!(crate::MemoryStore, async { crate::MemoryStore::new() });

    #[tokio::test]
    async fn knows_which_tasks_have_no_push_config() {
        let store = MemoryStore::new();
        let mut record = crate::suite::push_config_record("b", "c1");
        store.put_push_config(record.clone()).await.unwrap();
        // Neighbours in the key order are not mistaken for the task.
        for other in ["a", "bb", "c", ""] {
            assert!(!store.may_have_push_configs(other), "{other:?}");
        }
        assert!(store.may_have_push_configs("b"));
        record.config.id = Some("c2".into());
        store.put_push_config(record).await.unwrap();
        store.delete_push_configs("b").await.unwrap();
        assert!(!store.may_have_push_configs("b"));
    }
}
