//! What the store answers: its own methods and the storage traits ([`TaskStore`],
//! [`PushConfigStore`], [`DeadLetterStore`]). Reads come from the cache ([`super::hot`])
//! when it has the answer, else from the file; writes go to the writer thread.

use async_trait::async_trait;
use redb::ReadableTable;
use tokio::sync::oneshot;

use super::writer::{Queued, WriteOp};
use super::{
    DEAD, EVENTS, FINISHED, PUSH, RedbStore, TASKS, UNFINISHED, configs_of, decode, decode_all,
    runs,
};
use crate::record::{
    DeadLetter, PushConfigRecord, StoredEvent, TaskCommit, TaskPage, TaskQuery, TaskRecord,
};
use crate::traits::{DeadLetterStore, PushConfigStore, StoreError, StoreResult, TaskStore};

impl RedbStore {
    /// Why the store refuses every write until the process restarts (reopening it),
    /// when it does: a write that failed and could not be undone (disk full, I/O
    /// error). A transient failure that the next write gets past is not a fault.
    pub fn fault(&self) -> Option<String> {
        self.fault.lock().clone()
    }

    /// Makes the redb file catch up with the journal now, and empties the journal: a
    /// graceful shutdown calls it, so the next start has nothing to replay. (The store
    /// also checkpoints when its last handle is dropped, but a process that exits right
    /// after may not leave the writer the time to finish.)
    pub async fn checkpoint(&self) -> StoreResult<()> {
        let (reply, rx) = oneshot::channel();
        self.ask(Queued::Checkpoint(reply), rx).await
    }
}

#[async_trait]
impl TaskStore for RedbStore {
    async fn get(&self, task_id: &str) -> StoreResult<Option<TaskRecord>> {
        if let Some(record) = self.hot.read().records.get(task_id) {
            return Ok(Some(TaskRecord::clone(record)));
        }
        let task_id = task_id.to_owned();
        self.read(move |txn| {
            let table = txn.open_table(TASKS).map_err(StoreError::backend)?;
            match table.get(task_id.as_str()).map_err(StoreError::backend)? {
                Some(bytes) => decode(bytes.value()).map(Some),
                None => Ok(None),
            }
        })
        .await
    }

    async fn commit(&self, commit: TaskCommit) -> StoreResult<()> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteOp::Commit(Box::new(commit), tx), rx).await
    }

    async fn events_after(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<StoredEvent>> {
        // A subscriber that has caught up asks this on every subscription, the webhook
        // dispatcher after every event: both are answered from memory when they can be.
        if let Some(events) = self.hot.read().events_after(task_id, after, limit) {
            return Ok(events);
        }
        let task_id = task_id.to_owned();
        self.read(move |txn| {
            let table = txn.open_table(EVENTS).map_err(StoreError::backend)?;
            runs::events_after(&table, &task_id, after, limit)
        })
        .await
    }

    async fn list(&self, query: &TaskQuery) -> StoreResult<TaskPage> {
        let query = query.clone();
        self.read(move |txn| {
            // A full scan: fine while terminal tasks are evicted after their TTL; an
            // (agent, owner, time) index is the next step if listings grow large.
            let table = txn.open_table(TASKS).map_err(StoreError::backend)?;
            let mut matching = Vec::new();
            for entry in table.iter().map_err(StoreError::backend)? {
                let (_, bytes) = entry.map_err(StoreError::backend)?;
                let record: TaskRecord = decode(bytes.value())?;
                if query.matches(&record) {
                    matching.push(record);
                }
            }
            Ok(query.paginate(matching))
        })
        .await
    }

    async fn list_all(&self) -> StoreResult<Vec<TaskRecord>> {
        self.read(|txn| decode_all(txn, TASKS)).await
    }

    async fn delete(&self, task_id: &str) -> StoreResult<bool> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteOp::DeleteTask(task_id.to_owned(), tx), rx)
            .await
    }

    async fn list_unfinished(&self) -> StoreResult<Vec<TaskRecord>> {
        self.read(|txn| {
            let unfinished = txn.open_table(UNFINISHED).map_err(StoreError::backend)?;
            let tasks = txn.open_table(TASKS).map_err(StoreError::backend)?;
            let mut records = Vec::new();
            for row in unfinished.iter().map_err(StoreError::backend)? {
                let (id, _) = row.map_err(StoreError::backend)?;
                if let Some(bytes) = tasks.get(id.value()).map_err(StoreError::backend)? {
                    records.push(decode(bytes.value())?);
                }
            }
            Ok(records)
        })
        .await
    }

    async fn finished_before(&self, cutoff_millis: u64, limit: usize) -> StoreResult<Vec<String>> {
        self.read(move |txn| {
            let finished = txn.open_table(FINISHED).map_err(StoreError::backend)?;
            let due = finished
                .range((0, "")..(cutoff_millis.saturating_add(1), ""))
                .map_err(StoreError::backend)?;
            due.take(limit)
                .map(|row| {
                    row.map(|(key, _)| key.value().1.to_owned())
                        .map_err(StoreError::backend)
                })
                .collect()
        })
        .await
    }
}

#[async_trait]
impl PushConfigStore for RedbStore {
    async fn put_push_config(&self, record: PushConfigRecord) -> StoreResult<()> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteOp::PutPush(Box::new(record), tx), rx).await
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> StoreResult<Option<PushConfigRecord>> {
        if let Some(configs) = self.hot.read().push_configs(task_id) {
            return Ok(configs
                .iter()
                .find(|c| c.config.id.as_deref().unwrap_or_default() == config_id)
                .cloned());
        }
        let key = (task_id.to_owned(), config_id.to_owned());
        self.read(move |txn| {
            let table = txn.open_table(PUSH).map_err(StoreError::backend)?;
            match table
                .get((key.0.as_str(), key.1.as_str()))
                .map_err(StoreError::backend)?
            {
                Some(bytes) => decode(bytes.value()).map(Some),
                None => Ok(None),
            }
        })
        .await
    }

    async fn list_push_configs(&self, task_id: &str) -> StoreResult<Vec<PushConfigRecord>> {
        if let Some(configs) = self.hot.read().push_configs(task_id) {
            return Ok(configs.to_vec());
        }
        let task_id = task_id.to_owned();
        self.read(move |txn| {
            let table = txn.open_table(PUSH).map_err(StoreError::backend)?;
            configs_of(&table, &task_id)
        })
        .await
    }

    async fn list_all_push_configs(&self) -> StoreResult<Vec<PushConfigRecord>> {
        self.read(|txn| decode_all(txn, PUSH)).await
    }

    fn may_have_push_configs(&self, task_id: &str) -> bool {
        self.hot.read().with_push.contains(task_id)
    }

    async fn advance_push_cursor(
        &self,
        task_id: &str,
        config_id: &str,
        seq: u64,
    ) -> StoreResult<()> {
        let (tx, rx) = oneshot::channel();
        self.write(
            WriteOp::AdvancePush(task_id.to_owned(), config_id.to_owned(), seq, tx),
            rx,
        )
        .await
    }

    async fn delete_push_configs(&self, task_id: &str) -> StoreResult<()> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteOp::DeletePushAll(task_id.to_owned(), tx), rx)
            .await
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> StoreResult<bool> {
        let (tx, rx) = oneshot::channel();
        self.write(
            WriteOp::DeletePush(task_id.to_owned(), config_id.to_owned(), tx),
            rx,
        )
        .await
    }
}

#[async_trait]
impl DeadLetterStore for RedbStore {
    async fn put_dead_letter(&self, letter: DeadLetter) -> StoreResult<()> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteOp::PutDead(Box::new(letter), tx), rx).await
    }

    async fn list_dead_letters(&self) -> StoreResult<Vec<DeadLetter>> {
        let mut letters: Vec<DeadLetter> = self.read(|txn| decode_all(txn, DEAD)).await?;
        letters.sort_by_key(|l| l.failed_at);
        Ok(letters)
    }

    async fn take_dead_letter(&self, id: &str) -> StoreResult<Option<DeadLetter>> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteOp::TakeDead(id.to_owned(), tx), rx).await
    }
}
