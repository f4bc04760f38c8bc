//! The embedded durable backend: one redb file, fsync on commit, group commit.
//!
//! redb allows one writer at a time, so all writes go to one writer thread that takes
//! every request waiting in its queue, applies them in one transaction and commits once:
//! a burst of transitions costs one fsync, not one each. Each request's compare-and-set
//! is checked inside that transaction, so batching never weakens atomicity. Reads run
//! on the blocking pool with their own MVCC snapshot and never wait for the writer.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::{mpsc, oneshot};

use crate::record::*;
use crate::traits::*;

const TASKS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("tasks");
const EVENTS: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("events");
const PUSH: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("push_configs");
const DEAD: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("dead_letters");

/// Most write requests folded into one transaction.
const MAX_BATCH: usize = 512;

#[derive(Debug)]
enum WriteOp {
    Commit(Box<TaskCommit>, oneshot::Sender<StoreResult<()>>),
    PutPush(Box<PushConfigRecord>, oneshot::Sender<StoreResult<()>>),
    DeletePush(String, String, oneshot::Sender<StoreResult<bool>>),
    DeletePushAll(String, oneshot::Sender<StoreResult<()>>),
    AdvancePush(String, String, u64, oneshot::Sender<StoreResult<()>>),
    PutDead(Box<DeadLetter>, oneshot::Sender<StoreResult<()>>),
    TakeDead(String, oneshot::Sender<StoreResult<Option<DeadLetter>>>),
    DeleteTask(String, oneshot::Sender<StoreResult<bool>>),
}

#[derive(Debug, Clone)]
pub struct RedbStore {
    db: Arc<Database>,
    writer: mpsc::Sender<WriteOp>,
}

impl RedbStore {
    /// Opens (or creates) the store file and starts its writer thread.
    pub fn open(path: &Path) -> StoreResult<RedbStore> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Backend(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        let db = Database::create(path)
            .map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
        let txn = db.begin_write().map_err(StoreError::backend)?;
        {
            txn.open_table(TASKS).map_err(StoreError::backend)?;
            txn.open_table(EVENTS).map_err(StoreError::backend)?;
            txn.open_table(PUSH).map_err(StoreError::backend)?;
            txn.open_table(DEAD).map_err(StoreError::backend)?;
        }
        txn.commit().map_err(StoreError::backend)?;
        let db = Arc::new(db);
        let (writer, queue) = mpsc::channel(4096);
        let writer_db = db.clone();
        std::thread::Builder::new()
            .name("sb-store-writer".into())
            .spawn(move || write_loop(&writer_db, queue))
            .map_err(|e| StoreError::Backend(format!("cannot start the writer thread: {e}")))?;
        Ok(RedbStore { db, writer })
    }

    async fn write<T>(&self, op: WriteOp, rx: oneshot::Receiver<StoreResult<T>>) -> StoreResult<T> {
        self.writer
            .send(op)
            .await
            .map_err(|_| StoreError::Backend("the store writer has stopped".into()))?;
        rx.await
            .map_err(|_| StoreError::Backend("the store writer dropped a request".into()))?
    }

    async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&redb::ReadTransaction) -> StoreResult<T> + Send + 'static,
    {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let txn = db.begin_read().map_err(StoreError::backend)?;
            f(&txn)
        })
        .await
        .map_err(StoreError::backend)?
    }
}

/// Every value of a table, decoded.
fn decode_all<K: redb::Key + 'static, T: serde::de::DeserializeOwned>(
    txn: &redb::ReadTransaction,
    table: TableDefinition<'_, K, &[u8]>,
) -> StoreResult<Vec<T>> {
    let table = txn.open_table(table).map_err(StoreError::backend)?;
    let mut out = Vec::new();
    for entry in table.iter().map_err(StoreError::backend)? {
        let (_, bytes) = entry.map_err(StoreError::backend)?;
        out.push(decode(bytes.value())?);
    }
    Ok(out)
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> StoreResult<T> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Backend(format!("corrupt record: {e}")))
}

fn encode<T: serde::Serialize>(value: &T) -> StoreResult<Vec<u8>> {
    serde_json::to_vec(value).map_err(StoreError::backend)
}

fn write_loop(db: &Database, mut queue: mpsc::Receiver<WriteOp>) {
    while let Some(first) = queue.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        apply_batch(db, batch);
    }
}

/// The outcome of one request inside a batch, sent only once the batch is durable.
enum Reply {
    Unit(oneshot::Sender<StoreResult<()>>, StoreResult<()>),
    Bool(oneshot::Sender<StoreResult<bool>>, StoreResult<bool>),
    Dead(
        oneshot::Sender<StoreResult<Option<DeadLetter>>>,
        StoreResult<Option<DeadLetter>>,
    ),
}

fn apply_batch(db: &Database, batch: Vec<WriteOp>) {
    let mut replies = Vec::with_capacity(batch.len());
    let outcome = (|| -> StoreResult<()> {
        let txn = db.begin_write().map_err(StoreError::backend)?;
        {
            let mut tasks = txn.open_table(TASKS).map_err(StoreError::backend)?;
            let mut events = txn.open_table(EVENTS).map_err(StoreError::backend)?;
            let mut push = txn.open_table(PUSH).map_err(StoreError::backend)?;
            let mut dead = txn.open_table(DEAD).map_err(StoreError::backend)?;
            for op in batch {
                match op {
                    WriteOp::Commit(commit, tx) => {
                        let result = apply_commit(&mut tasks, &mut events, &commit);
                        replies.push(Reply::Unit(tx, result));
                    }
                    WriteOp::PutPush(record, tx) => {
                        let result = encode(&*record).and_then(|bytes| {
                            let key = (
                                record.config.task_id.as_str(),
                                record.config.id.as_deref().unwrap_or_default(),
                            );
                            push.insert(key, bytes.as_slice())
                                .map(|_| ())
                                .map_err(StoreError::backend)
                        });
                        replies.push(Reply::Unit(tx, result));
                    }
                    WriteOp::DeletePushAll(task_id, tx) => {
                        let result = push
                            .retain_in(
                                (task_id.as_str(), "")..=(task_id.as_str(), "\u{10ffff}"),
                                |(t, _), _| t != task_id,
                            )
                            .map_err(StoreError::backend);
                        replies.push(Reply::Unit(tx, result));
                    }
                    WriteOp::PutDead(letter, tx) => {
                        let result = encode(&*letter).and_then(|bytes| {
                            dead.insert(letter.id.as_str(), bytes.as_slice())
                                .map(|_| ())
                                .map_err(StoreError::backend)
                        });
                        replies.push(Reply::Unit(tx, result));
                    }
                    WriteOp::TakeDead(id, tx) => {
                        let result = match dead.remove(id.as_str()) {
                            Ok(Some(bytes)) => decode(bytes.value()).map(Some),
                            Ok(None) => Ok(None),
                            Err(e) => Err(StoreError::backend(e)),
                        };
                        replies.push(Reply::Dead(tx, result));
                    }
                    WriteOp::AdvancePush(task_id, config_id, seq, tx) => {
                        let result = advance_cursor(&mut push, &task_id, &config_id, seq);
                        replies.push(Reply::Unit(tx, result));
                    }
                    WriteOp::DeleteTask(task_id, tx) => {
                        let result = events
                            .retain_in(
                                (task_id.as_str(), 0)..=(task_id.as_str(), u64::MAX),
                                |_, _| false,
                            )
                            .and_then(|()| tasks.remove(task_id.as_str()).map(|old| old.is_some()))
                            .map_err(StoreError::backend);
                        replies.push(Reply::Bool(tx, result));
                    }
                    WriteOp::DeletePush(task_id, config_id, tx) => {
                        let result = push
                            .remove((task_id.as_str(), config_id.as_str()))
                            .map(|old| old.is_some())
                            .map_err(StoreError::backend);
                        replies.push(Reply::Bool(tx, result));
                    }
                }
            }
        }
        txn.commit().map_err(StoreError::backend)
    })();
    for reply in replies {
        // A failed commit fails every request of the batch: none of them is durable.
        match (reply, &outcome) {
            (Reply::Unit(tx, result), Ok(())) => drop(tx.send(result)),
            (Reply::Bool(tx, result), Ok(())) => drop(tx.send(result)),
            (Reply::Dead(tx, result), Ok(())) => drop(tx.send(result)),
            (Reply::Dead(tx, _), Err(e)) => drop(tx.send(Err(StoreError::Backend(e.to_string())))),
            (Reply::Unit(tx, _), Err(e)) => drop(tx.send(Err(StoreError::Backend(e.to_string())))),
            (Reply::Bool(tx, _), Err(e)) => drop(tx.send(Err(StoreError::Backend(e.to_string())))),
        }
    }
    if let Err(e) = outcome {
        tracing::error!(error = %e, "store batch commit failed");
    }
}

fn advance_cursor(
    push: &mut redb::Table<'_, (&str, &str), &[u8]>,
    task_id: &str,
    config_id: &str,
    seq: u64,
) -> StoreResult<()> {
    let current = match push
        .get((task_id, config_id))
        .map_err(StoreError::backend)?
    {
        Some(bytes) => decode::<PushConfigRecord>(bytes.value())?,
        None => return Ok(()),
    };
    if current.from_seq >= seq {
        return Ok(());
    }
    let updated = PushConfigRecord {
        from_seq: seq,
        ..current
    };
    let bytes = encode(&updated)?;
    push.insert((task_id, config_id), bytes.as_slice())
        .map_err(StoreError::backend)?;
    Ok(())
}

fn apply_commit(
    tasks: &mut redb::Table<'_, &str, &[u8]>,
    events: &mut redb::Table<'_, (&str, u64), &[u8]>,
    commit: &TaskCommit,
) -> StoreResult<()> {
    let task_id = commit.record.task.id.as_str();
    let current_seq = match tasks.get(task_id).map_err(StoreError::backend)? {
        Some(bytes) => decode::<TaskRecord>(bytes.value())?.seq,
        None => 0,
    };
    if current_seq != commit.expected_seq {
        return Err(StoreError::Conflict {
            task_id: task_id.to_owned(),
            current_seq,
        });
    }
    let record = encode(&commit.record)?;
    let mut encoded_events = Vec::with_capacity(commit.events.len());
    for event in &commit.events {
        encoded_events.push((event.seq, encode(event)?));
    }
    tasks
        .insert(task_id, record.as_slice())
        .map_err(StoreError::backend)?;
    for (seq, bytes) in &encoded_events {
        events
            .insert((task_id, *seq), bytes.as_slice())
            .map_err(StoreError::backend)?;
    }
    Ok(())
}

#[async_trait]
impl TaskStore for RedbStore {
    async fn get(&self, task_id: &str) -> StoreResult<Option<TaskRecord>> {
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
        let task_id = task_id.to_owned();
        self.read(move |txn| {
            let table = txn.open_table(EVENTS).map_err(StoreError::backend)?;
            let Some(start) = after.checked_add(1) else {
                return Ok(Vec::new());
            };
            let range = table
                .range((task_id.as_str(), start)..=(task_id.as_str(), u64::MAX))
                .map_err(StoreError::backend)?;
            let mut out = Vec::new();
            for entry in range.take(limit) {
                let (_, bytes) = entry.map_err(StoreError::backend)?;
                out.push(decode(bytes.value())?);
            }
            Ok(out)
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
        let task_id = task_id.to_owned();
        self.read(move |txn| {
            let table = txn.open_table(PUSH).map_err(StoreError::backend)?;
            let mut out = Vec::new();
            for entry in table
                .range((task_id.as_str(), "")..)
                .map_err(StoreError::backend)?
            {
                let (key, bytes) = entry.map_err(StoreError::backend)?;
                if key.value().0 != task_id {
                    break;
                }
                out.push(decode(bytes.value())?);
            }
            Ok(out)
        })
        .await
    }

    async fn list_all_push_configs(&self) -> StoreResult<Vec<PushConfigRecord>> {
        self.read(|txn| decode_all(txn, PUSH)).await
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

#[cfg(test)]
mod tests {
    use super::*;

    crate::store_test_suite!(crate::RedbStore, async {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::RedbStore::open(&dir.path().join("store.redb")).unwrap();
        // Keep the directory alive for the test's duration.
        std::mem::forget(dir);
        store
    });

    #[tokio::test]
    async fn survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb");
        {
            let store = RedbStore::open(&path).unwrap();
            store
                .commit(crate::suite::new_commit("t1", 0, 1))
                .await
                .unwrap();
        }
        // The writer thread holds the database until its queue closes; wait for release.
        let mut reopened = None;
        for _ in 0..100 {
            match RedbStore::open(&path) {
                Ok(s) => {
                    reopened = Some(s);
                    break;
                }
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        }
        let store = reopened.expect("store reopens");
        let rec = store.get("t1").await.unwrap().unwrap();
        assert_eq!(rec.seq, 1);
        assert_eq!(store.events_after("t1", 0, 10).await.unwrap().len(), 1);
    }
}
