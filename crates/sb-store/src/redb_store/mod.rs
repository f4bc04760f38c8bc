//! The embedded durable backend: one redb file with a redo journal in front of it
//! ([`journal`]), group commit ([`writer`]); running tasks, their latest events and push
//! configs answered from memory ([`Hot`]).
//!
//! redb allows one writer at a time, so all writes go to one writer thread that takes
//! every request waiting in its queue, applies them in one transaction, appends them to
//! the journal as one frame and fsyncs that once: a burst of transitions costs one small
//! sequential write and one fsync, not one each, and not redb's own page writes. Each
//! request's compare-and-set is checked inside that transaction, so batching never
//! weakens atomicity. The redb commits are non-durable; a periodic checkpoint makes the
//! file durable on its own and empties the journal ([`tables`]), on a thread of its own
//! while the writer goes on journaling ([`checkpoints`]). Reads run on the
//! blocking pool with their own MVCC snapshot and never wait for the writer.

mod checkpoints;
mod journal;
mod runs;
mod tables;
mod writer;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::{mpsc, oneshot};

use crate::record::{
    DeadLetter, PushConfigRecord, StoredEvent, TaskCommit, TaskPage, TaskQuery, TaskRecord,
};
use crate::traits::{DeadLetterStore, PushConfigStore, StoreError, StoreResult, TaskStore};

const TASKS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("tasks");
/// A task's events by (task, first sequence number): one value per commit ([`runs`]).
const EVENTS: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("events");
const PUSH: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("push_configs");
const DEAD: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("dead_letters");
/// Finished tasks by the time they finished (milliseconds), for the TTL eviction.
const FINISHED: TableDefinition<'_, (u64, &str), ()> = TableDefinition::new("finished");
/// Tasks not finished yet, for recovery and the deadlines at startup.
const UNFINISHED: TableDefinition<'_, &str, ()> = TableDefinition::new("unfinished");

use writer::{Queued, WriteOp};

#[derive(Debug, Clone)]
pub struct RedbStore {
    db: Arc<Database>,
    writer: mpsc::Sender<Queued>,
    hot: SharedHot,
    /// Why the store takes no more writes until it is reopened, if it does not.
    fault: writer::Fault,
    lag: tokio::sync::watch::Receiver<Lag>,
}

/// Whether the file is behind the acknowledged writes (batches journaled and
/// acknowledged wait to be applied: deferred, or while a checkpoint runs): a read that
/// misses the cache waits until it is not.
#[derive(Debug, Default, Clone)]
struct Lag {
    behind: bool,
    /// How many times the file has caught up: a reader waits for the next one.
    caught_up: u64,
    /// Acknowledged writes that could not be applied to the file: reads would miss
    /// them, so they fail instead, until a restart replays the journal.
    lost: Option<String>,
}

/// What the store answers from memory. Only the writer thread changes the file, and it
/// updates this after each durable batch and before replying, so it is never behind a
/// caller's own writes.
#[derive(Debug, Default)]
struct Hot {
    /// The latest record of each unfinished task written since the store opened, and
    /// of the last [`RECENTLY_FINISHED`] tasks that finished: the transitions of running
    /// tasks and the reads that follow a task's end need no disk read.
    records: crate::IdMap<String, Arc<TaskRecord>>,
    /// Finished tasks still in `records`, oldest first.
    finished: std::collections::VecDeque<String>,
    /// For each task in `records`, its latest events (at most [`RECENT_EVENTS`], oldest
    /// first, no gap up to the latest): a subscriber or the webhook dispatcher reading
    /// what was just committed needs no disk read.
    events: crate::IdMap<std::sync::Arc<str>, std::collections::VecDeque<StoredEvent>>,
    /// Every event put in `events`, oldest first, to drop the oldest beyond
    /// [`RECENT_EVENTS_IN_ALL`]: without that bound the cache grew with the number of
    /// open tasks (a task held open for hours kept its first events, its full snapshot
    /// among them, ~1.7 KB, the whole time).
    events_in_order: std::collections::VecDeque<(std::sync::Arc<str>, u64)>,
    /// Every task with at least one push config (loaded when the store opens), so a
    /// task without one costs no read per event. May also hold tasks whose last
    /// config was deleted one by one: it only ever answers "none" for sure.
    with_push: crate::IdSet<String>,
    /// For tasks in `records` whose configs were written since the store opened: all
    /// their configs, exactly as the file has them (the dispatcher reads a task's
    /// config before each delivery).
    push: crate::IdMap<String, Vec<PushConfigRecord>>,
    /// Set while the file is behind (see [`Lag`]): finished tasks are not forgotten,
    /// since the file may not have their last record yet.
    pinned: bool,
    /// What was forgotten since the last [`Hot::take_forgotten`], to be freed after
    /// the lock is released (see [`Forgotten`]).
    forgotten: Vec<Forgotten>,
}

/// A task's cached state once forgotten, held only to be freed: outside the cache's
/// lock, and where possible on the runtime's threads, which allocated it (see
/// [`writer::Dropper`]).
#[derive(Debug)]
pub(super) struct Forgotten {
    _record: Option<Arc<TaskRecord>>,
    _events: Option<std::collections::VecDeque<StoredEvent>>,
    _push: Option<Vec<PushConfigRecord>>,
}

type SharedHot = Arc<parking_lot::RwLock<Hot>>;

/// Finished tasks kept in memory (a finished task never changes again, short of deletion).
/// Few: a finished task kept is a tree of allocations (the task, its history, its
/// artifacts, a few KB), freed cold when forgotten ([`writer::Dropper`]), its blocks then
/// reused cold by the next tasks' allocations; the fewer kept, the warmer (bench/profile.md,
/// "Figures behind constants in the code", has the runs that chose this number). While
/// the file is behind nothing is forgotten anyway; a task forgotten is read from the
/// file, which has it by then.
const RECENTLY_FINISHED: usize = 128;

/// redb's page cache. Its default (1 GiB) let a busy server's memory grow with every task
/// until it reached a gigabyte, and faulting in the fresh pages cost CPU of its own.
/// Running tasks are answered from [`Hot`] anyway; the page cache mostly holds the
/// B-trees' upper levels, which this keeps many times over.
const PAGE_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// Events kept in memory per task in [`Hot::records`].
const RECENT_EVENTS: usize = 8;

/// Events kept in memory over all tasks: what was committed in the last few tens of
/// milliseconds at full speed (~60k events/s), which is when its readers come (a new
/// stream's replay after its snapshot, the dispatcher behind by a batch, a subscriber
/// that lagged the bus). Older events are read from the file.
const RECENT_EVENTS_IN_ALL: usize = 4096;

impl Hot {
    fn seq_of(&self, task_id: &str) -> Option<u64> {
        self.records.get(task_id).map(|r| r.seq)
    }

    /// Forgets the oldest finished tasks beyond [`RECENTLY_FINISHED`], unless pinned.
    fn trim(&mut self) {
        while !self.pinned && self.finished.len() > RECENTLY_FINISHED {
            if let Some(task_id) = self.finished.pop_front() {
                self.forget(&task_id);
            }
        }
    }

    /// The file has caught up: what finished meanwhile may be forgotten again. Here, not
    /// at the next batch: under steady commits the next batch is deferred again, so the
    /// cache is pinned whenever a batch is applied to it.
    fn unpin(&mut self) {
        self.pinned = false;
        self.trim();
    }

    fn apply(&mut self, changes: writer::Changes) {
        for (task_id, record) in changes.records {
            if record.task.status.state.is_terminal() {
                self.finished.push_back(task_id.clone());
            }
            self.records.insert(task_id, record);
        }
        for event in changes.events {
            self.events_in_order
                .push_back((event.task_id.clone(), event.seq));
            let recent = self.events.entry(event.task_id.clone()).or_default();
            recent.push_back(event);
            if recent.len() > RECENT_EVENTS {
                recent.pop_front();
            }
        }
        self.drop_oldest_events();
        self.trim();
        for task_id in changes.deleted {
            self.forget(&task_id);
        }
        for task_id in changes.without_push {
            self.with_push.remove(&task_id);
        }
        self.with_push.extend(changes.with_push);
        for (task_id, configs) in changes.push {
            if configs.is_empty() || !self.records.contains_key(&task_id) {
                self.push.remove(&task_id);
            } else {
                self.push.insert(task_id, configs);
            }
        }
    }

    /// Drops the oldest events beyond [`RECENT_EVENTS_IN_ALL`]. A task's events are in
    /// sequence order in both lists, so each one dropped is at the front of its task's,
    /// unless the per-task bound or `forget` dropped it already.
    fn drop_oldest_events(&mut self) {
        while self.events_in_order.len() > RECENT_EVENTS_IN_ALL {
            let Some((task_id, seq)) = self.events_in_order.pop_front() else {
                break;
            };
            let Some(recent) = self.events.get_mut(&task_id) else {
                continue;
            };
            while recent.front().is_some_and(|e| e.seq <= seq) {
                recent.pop_front();
            }
            if recent.is_empty() {
                self.events.remove(&task_id);
            }
        }
    }

    fn forget(&mut self, task_id: &str) {
        let forgotten = Forgotten {
            _record: self.records.remove(task_id),
            _events: self.events.remove(task_id),
            _push: self.push.remove(task_id),
        };
        self.forgotten.push(forgotten);
    }

    fn take_forgotten(&mut self) -> Vec<Forgotten> {
        std::mem::take(&mut self.forgotten)
    }

    /// `events_after` from memory, when the kept events reach back far enough.
    fn events_after(&self, task_id: &str, after: u64, limit: usize) -> Option<Vec<StoredEvent>> {
        let latest = self.seq_of(task_id)?;
        if after >= latest {
            return Some(Vec::new());
        }
        let recent = self.events.get(task_id)?;
        let oldest = recent.front()?.seq;
        (oldest <= after.saturating_add(1)).then(|| {
            recent
                .iter()
                .filter(|e| e.seq > after)
                .take(limit)
                .cloned()
                .collect()
        })
    }

    /// The task's configs: `Some` when known without a read.
    fn push_configs(&self, task_id: &str) -> Option<&[PushConfigRecord]> {
        if !self.with_push.contains(task_id) {
            return Some(&[]);
        }
        self.push.get(task_id).map(Vec::as_slice)
    }
}

impl RedbStore {
    /// Opens (or creates) the store file and starts its writer thread.
    pub fn open(path: &Path) -> StoreResult<RedbStore> {
        RedbStore::open_checkpointing(path, writer::CHECKPOINT_EVERY)
    }

    fn open_checkpointing(path: &Path, checkpoint_every: Duration) -> StoreResult<RedbStore> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Backend(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        let db = redb::Builder::new()
            .set_cache_size(PAGE_CACHE_BYTES)
            .create(path)
            .map_err(|e| StoreError::Backend(format!("cannot open {}: {e}", path.display())))?;
        let epoch = tables::create_all(&db)?;
        let mut journal_path = path.as_os_str().to_owned();
        journal_path.push(".journal");
        let (mut journal, unapplied) = journal::Journal::open(Path::new(&journal_path), epoch)?;
        let mut durable_epoch = epoch;
        if !unapplied.is_empty() {
            tables::replay(&db, &mut journal, &unapplied)?;
            durable_epoch = journal.epoch();
            tracing::info!(
                batches = unapplied.len(),
                "replayed the store journal: the last run ended without a checkpoint"
            );
        }
        if let Some(indexed) = tables::index_tasks(&db)?.filter(|n| *n > 0) {
            tracing::info!(
                indexed,
                "indexed the store's tasks as finished or not (once, on the first start of this version)"
            );
        }
        let hot = SharedHot::default();
        {
            let txn = db.begin_read().map_err(StoreError::backend)?;
            let push = txn.open_table(PUSH).map_err(StoreError::backend)?;
            let mut hot = hot.write();
            for entry in push.iter().map_err(StoreError::backend)? {
                let (key, _) = entry.map_err(StoreError::backend)?;
                hot.with_push.insert(key.value().0.to_owned());
            }
        }
        let db = Arc::new(db);
        let (writer, queue) = mpsc::channel(4096);
        let (ask, asks) = std::sync::mpsc::channel();
        let (done, dones) = std::sync::mpsc::channel();
        let checkpoint_db = db.clone();
        let wake = writer.downgrade();
        std::thread::Builder::new()
            .name("sb-store-checkpoint".into())
            .spawn(move || checkpoints::checkpoint_loop(&checkpoint_db, asks, done, wake))
            .map_err(|e| StoreError::Backend(format!("cannot start the checkpoint thread: {e}")))?;
        let checkpointer = checkpoints::Checkpointer { ask, done: dones };
        let (lag_tx, lag) = tokio::sync::watch::channel(Lag::default());
        let (writer_db, writer_hot) = (db.clone(), hot.clone());
        let fault = writer::Fault::default();
        let writer_fault = fault.clone();
        let ticker = writer.downgrade();
        let dropper = writer::Dropper::on_current_runtime();
        std::thread::Builder::new()
            .name("sb-store-ticker".into())
            .spawn(move || writer::tick(ticker, checkpoint_every))
            .map_err(|e| StoreError::Backend(format!("cannot start the ticker thread: {e}")))?;
        std::thread::Builder::new()
            .name("sb-store-writer".into())
            .spawn(move || {
                let writer = writer::Writer {
                    db: &writer_db,
                    hot: &writer_hot,
                    fault: &writer_fault,
                    checkpoint_every,
                    checkpointer,
                    lag: &lag_tx,
                    dropper,
                };
                writer::write_loop(&writer, journal, durable_epoch, queue)
            })
            .map_err(|e| StoreError::Backend(format!("cannot start the writer thread: {e}")))?;
        Ok(RedbStore {
            db,
            writer,
            hot,
            fault,
            lag,
        })
    }

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

    async fn write<T>(&self, op: WriteOp, rx: oneshot::Receiver<StoreResult<T>>) -> StoreResult<T> {
        self.ask(Queued::Op(op, std::time::Instant::now()), rx)
            .await
    }

    /// Hands `request` to the writer thread and waits for its answer on `rx`.
    async fn ask<T>(
        &self,
        request: Queued,
        rx: oneshot::Receiver<StoreResult<T>>,
    ) -> StoreResult<T> {
        self.writer
            .send(request)
            .await
            .map_err(|_| StoreError::Backend("the store writer has stopped".into()))?;
        rx.await
            .map_err(|_| StoreError::Backend("the store writer dropped a request".into()))?
    }

    /// Reads the file, once it holds every write acknowledged so far.
    async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&redb::ReadTransaction) -> StoreResult<T> + Send + 'static,
    {
        self.caught_up().await?;
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || {
            let txn = db.begin_read().map_err(StoreError::backend)?;
            f(&txn)
        })
        .await
        .map_err(StoreError::backend)?
    }

    /// Returns once the file holds every write acknowledged before the call.
    async fn caught_up(&self) -> StoreResult<()> {
        let mut lag = self.lag.clone();
        let seen = {
            let now = lag.borrow_and_update();
            if let Some(lost) = &now.lost {
                return Err(StoreError::Backend(lost.clone()));
            }
            if !now.behind {
                return Ok(());
            }
            now.caught_up
        };
        // Deferred batches are applied at once when asked (a running checkpoint's only
        // when it ends); a full queue means the writer is busy, and it catches up soon.
        let _ = self.writer.try_send(Queued::Tick);
        let caught = lag
            .wait_for(|now| now.caught_up > seen || now.lost.is_some())
            .await
            .map_err(|_| StoreError::Backend("the store writer has stopped".into()))?;
        match &caught.lost {
            Some(lost) => Err(StoreError::Backend(lost.clone())),
            None => Ok(()),
        }
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

/// Every config of one task, in config-id order.
fn configs_of(
    push: &impl ReadableTable<(&'static str, &'static str), &'static [u8]>,
    task_id: &str,
) -> StoreResult<Vec<PushConfigRecord>> {
    let mut configs = Vec::new();
    for entry in push.range((task_id, "")..).map_err(StoreError::backend)? {
        let (key, bytes) = entry.map_err(StoreError::backend)?;
        if key.value().0 != task_id {
            break;
        }
        configs.push(decode(bytes.value())?);
    }
    Ok(configs)
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> StoreResult<T> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Backend(format!("corrupt record: {e}")))
}

fn encode<T: serde::Serialize>(value: &T) -> StoreResult<Vec<u8>> {
    serde_json::to_vec(value).map_err(StoreError::backend)
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

#[cfg(test)]
mod tests;
