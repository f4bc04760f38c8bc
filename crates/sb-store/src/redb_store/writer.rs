//! The writer thread: every write request waiting in the queue goes into one transaction
//! and one journal frame (group commit). Under concurrent load it waits a moment for
//! more requests before committing (see [`gather`]); the records it commits also keep
//! the [`Hot`](super::Hot) cache current, since this thread is the only one that changes
//! the file. A batch is durable once its journal frame is on disk ([`super::journal`]);
//! task commits reach the redb file a few batches at a time, in one non-durable commit
//! ([`super::checkpoints::Deferred`]), other requests in a commit of their own, and a
//! checkpoint every [`CHECKPOINT_EVERY`] makes the redb file itself durable, on a thread
//! of its own ([`super::checkpoints`]) while acknowledgments go on.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redb::{Database, ReadableDatabase, ReadableTable};
use tokio::sync::{mpsc, oneshot};

use super::checkpoints::{Checkpointer, Deferred, Running, finish, start, wait_for};
use super::journal::{Entry, Journal};
use super::tables::{PushTable, Tables, checkpoint};
use super::{Forgotten, Hot, Lag, SharedHot, TASKS, configs_of, decode, encode};
use crate::record::{DeadLetter, PushConfigRecord, StoredEvent, TaskCommit, TaskHead, TaskRecord};
use crate::traits::{StoreError, StoreResult};

/// Most write requests folded into one transaction.
const MAX_BATCH: usize = 512;

/// How often the redb file catches up with the journal under steady writes. A
/// checkpoint writes the pages changed since the last one and fsyncs the file. The
/// writer used to wait meanwhile (the figures below are from then; now only requests
/// other than task commits do), so checkpoints are kept small: every 2 s, they took 30–90 ms
/// each at 3k tasks/s (a visible stall in the acks' p99); every 200 ms, 8–17 ms (5.3 ms
/// at the median at 2.4k tasks/s); every 80 ms, the acks' p99 at 2.4k tasks/s went from
/// ~9 ms to ~5.2 ms with no change in CPU per task that a run could tell.
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_millis(80);
/// A journal this long is checkpointed at once, whatever the time.
const CHECKPOINT_BYTES: u64 = 16 * 1024 * 1024;

/// What the writer's queue carries: requests, and the ticker's reminders that let an
/// idle store checkpoint (a checkpoint otherwise only follows a batch).
#[derive(Debug)]
pub(super) enum Queued {
    /// A request, and when it was queued.
    Op(WriteOp, Instant),
    Tick,
    /// Checkpoint now (a graceful shutdown), then reply.
    Checkpoint(oneshot::Sender<StoreResult<()>>),
}

#[derive(Debug)]
pub(super) enum WriteOp {
    Commit(Box<TaskCommit>, oneshot::Sender<StoreResult<()>>),
    PutPush(Box<PushConfigRecord>, oneshot::Sender<StoreResult<()>>),
    DeletePush(String, String, oneshot::Sender<StoreResult<bool>>),
    DeletePushAll(String, oneshot::Sender<StoreResult<()>>),
    AdvancePush(String, String, u64, oneshot::Sender<StoreResult<()>>),
    PutDead(Box<DeadLetter>, oneshot::Sender<StoreResult<()>>),
    TakeDead(String, oneshot::Sender<StoreResult<Option<DeadLetter>>>),
    DeleteTask(String, oneshot::Sender<StoreResult<bool>>),
}

/// Longest a request waits for others to share its commit. Short: under load, batches
/// form on their own while the previous one is being fsynced, and a longer wait only
/// adds latency (a 1 ms window held B1's requests back: bench/profile.md).
const GATHER_WINDOW: Duration = Duration::from_micros(150);
/// A pause this long with nothing new ends the gathering early.
const GATHER_QUIET: Duration = Duration::from_micros(100);
const GATHER_POLL: Duration = Duration::from_micros(50);

/// Why the store takes no more writes until it is reopened (see [`RedbStore::fault`]).
///
/// [`RedbStore::fault`]: super::RedbStore::fault
pub(super) type Fault = Arc<parking_lot::Mutex<Option<String>>>;

/// What the writer thread works on.
pub(super) struct Writer<'a> {
    pub(super) db: &'a Database,
    pub(super) hot: &'a SharedHot,
    pub(super) fault: &'a Fault,
    pub(super) checkpoint_every: Duration,
    pub(super) checkpointer: Checkpointer,
    pub(super) lag: &'a tokio::sync::watch::Sender<Lag>,
    pub(super) dropper: Dropper,
}

/// Frees what the cache forgets on the async runtime that opened the store. The
/// runtime's threads allocated it (a task's record and events are built by the request
/// that commits them), so it is freed where it was allocated instead of block by block
/// across threads, and off the writer's path to the next batch's fsync, where freeing
/// it under the cache's lock showed in profiles (bench/profile.md).
#[derive(Debug)]
pub(super) struct Dropper(Option<tokio::sync::mpsc::UnboundedSender<Vec<Forgotten>>>);

impl Dropper {
    /// One on the current runtime, if there is one; without, the writer frees itself.
    pub(super) fn on_current_runtime() -> Dropper {
        Dropper(tokio::runtime::Handle::try_current().ok().map(|runtime| {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<Forgotten>>();
            runtime.spawn(async move { while rx.recv().await.is_some() {} });
            tx
        }))
    }

    /// Changes the cache under its lock, then frees what the change made it forget:
    /// the one way to change the cache where it may forget (what `Hot::forget` keeps is
    /// only freed when taken).
    pub(super) fn change_cache(&self, hot: &SharedHot, change: impl FnOnce(&mut Hot)) {
        let forgotten = {
            let mut hot = hot.write();
            change(&mut hot);
            hot.take_forgotten()
        };
        self.drop_later(forgotten);
    }

    /// Frees `forgotten` later, or now when the runtime is gone.
    fn drop_later(&self, forgotten: Vec<Forgotten>) {
        if let Some(tx) = self.0.as_ref().filter(|_| !forgotten.is_empty()) {
            // A send that fails hands the value back, freed here with the error.
            let _ = tx.send(forgotten);
        }
    }
}

/// `durable_epoch` is the epoch the store file records (see [`Journal::can_rotate`]).
pub(super) fn write_loop(
    writer: &Writer<'_>,
    mut journal: Journal,
    mut durable_epoch: u64,
    mut queue: mpsc::Receiver<Queued>,
) {
    let db = writer.db;
    let mut concurrent = false;
    let mut last_checkpoint = Instant::now();
    let mut asked = Vec::new();
    let mut faulty = false;
    let mut running: Option<Running> = None;
    // Empty whenever a checkpoint runs: applied before one starts.
    let mut deferred = Deferred::default();
    // Set for good when acknowledged batches could not be applied to the file.
    let mut lost: Option<String> = None;
    while let Some(first) = queue.blocking_recv() {
        let mut failed = false;
        if let Some(checkpoint) = running.take() {
            match writer.checkpointer.ended() {
                Some(outcome) => {
                    failed |= !finish(writer, checkpoint, outcome, &mut durable_epoch, &mut lost)
                }
                None => running = Some(checkpoint),
            }
        }
        match first {
            Queued::Op(first, queued_at) => {
                let batch = gather(first, queued_at, &mut queue, concurrent, &mut asked);
                // One request alone commits at once; several mean callers are running side
                // by side, and the next ones are likely a fraction of an fsync away.
                concurrent = batch.len() > 1;
                let journal_only = batch.iter().all(|op| matches!(op, WriteOp::Commit(..)));
                let deferring = journal_only && running.is_none();
                let mode = match running.as_mut() {
                    Some(checkpoint) if journal_only => Mode::JournalOnly(&mut checkpoint.backlog),
                    None if journal_only => Mode::JournalOnly(deferred.take(writer)),
                    _ => {
                        // In order: what was acknowledged before goes into the file first.
                        failed |= !deferred.apply(writer, &mut lost);
                        if let Some(checkpoint) = running.take() {
                            failed |= !wait_for(writer, checkpoint, &mut durable_epoch, &mut lost);
                        }
                        Mode::Apply
                    }
                };
                failed |= !apply_batch(db, writer.hot, &writer.dropper, &mut journal, batch, mode);
                if deferring {
                    deferred.acknowledged();
                }
            }
            // A reader that needs the file, the ticker, or a checkpoint's end.
            Queued::Tick => failed |= !deferred.apply(writer, &mut lost),
            Queued::Checkpoint(reply) => asked.push(reply),
        }
        if deferred.due() {
            failed |= !deferred.apply(writer, &mut lost);
        }
        let due = last_checkpoint.elapsed() >= writer.checkpoint_every
            || journal.frames_len() >= CHECKPOINT_BYTES;
        let mut outcome = Ok(());
        if !asked.is_empty() {
            // Asked for (a graceful shutdown): done here, and the journal left empty.
            failed |= !deferred.apply(writer, &mut lost);
            if let Some(checkpoint) = running.take() {
                failed |= !wait_for(writer, checkpoint, &mut durable_epoch, &mut lost);
            }
            if journal.frames_len() > 0 {
                outcome = checkpoint(db, &mut journal);
                if outcome.is_ok() {
                    durable_epoch = journal.epoch();
                }
            }
            last_checkpoint = Instant::now();
        } else if due && running.is_none() && journal.frames_len() > 0 {
            // The checkpoint records that the file holds everything journaled so far.
            failed |= !deferred.apply(writer, &mut lost);
            match start(writer, &mut journal, durable_epoch) {
                Ok(checkpoint) => running = Some(checkpoint),
                Err(e) => outcome = Err(e),
            }
            last_checkpoint = Instant::now();
        }
        if let Err(e) = &outcome {
            tracing::error!(error = %e, "store checkpoint failed; the journal keeps every batch meanwhile");
            failed = true;
        }
        for reply in asked.drain(..) {
            let answer = match &outcome {
                Ok(()) => Ok(()),
                Err(e) => Err(StoreError::Backend(format!("checkpoint failed: {e}"))),
            };
            let _ = reply.send(answer);
        }
        // Judged only after a failure, and until the store is whole again: nothing to do
        // on the way of a healthy batch.
        if failed || faulty {
            // The more specific reason first; the lost writes keep the store faulty
            // even once the file takes writes again.
            let now = lasting_fault(db, &journal).or_else(|| lost.clone());
            if let Some(reason) = &now {
                tracing::error!(
                    reason,
                    "the store takes no more writes until the server restarts"
                );
            }
            faulty = now.is_some();
            *writer.fault.lock() = now;
        }
    }
    if let Some(checkpoint) = running.take() {
        wait_for(writer, checkpoint, &mut durable_epoch, &mut lost);
    }
    deferred.apply(writer, &mut lost);
    // The store is closing: leave nothing for the next open to replay.
    if journal.frames_len() > 0
        && let Err(e) = checkpoint(db, &mut journal)
    {
        tracing::error!(error = %e, "final store checkpoint failed; the next start replays the journal");
    }
}

/// Why no write can succeed any more, short of reopening the store: a journal that could
/// not be repaired after a failed write, or a redb file that failed a write (redb then
/// refuses every transaction until it is reopened).
fn lasting_fault(db: &Database, journal: &Journal) -> Option<String> {
    if let Some(reason) = journal.broken() {
        return Some(reason.to_owned());
    }
    match db.begin_write() {
        Ok(txn) => {
            let _ = txn.abort();
            None
        }
        Err(redb::TransactionError::Storage(redb::StorageError::PreviousIo)) => Some(
            "the store file failed a write (is the disk full?) and takes no more until the server restarts"
                .to_owned(),
        ),
        Err(_) => None,
    }
}

/// Reminds the writer every `every` that a checkpoint may be due, until the store is
/// dropped: without it, a store that stops being written keeps its last batches in the
/// journal only, and every restart (a graceful one too) replays them.
pub(super) fn tick(queue: mpsc::WeakSender<Queued>, every: Duration) {
    loop {
        std::thread::sleep(every);
        let Some(queue) = queue.upgrade() else {
            return;
        };
        // A full queue means the writer is busy, and it checks after every batch anyway.
        let _ = queue.try_send(Queued::Tick);
    }
}

/// Takes what is queued; when writers are concurrent, keeps taking until the queue has
/// been quiet for [`GATHER_QUIET`] or [`GATHER_WINDOW`] has passed since the first
/// request was queued. An fsync costs far more CPU than the wait, so fewer, larger
/// commits raise throughput and cut CPU. The window counts from the queueing, not from
/// here: a request that arrived while the last batch was being committed has waited
/// already (counted from here, the window added ~1 ms to the acks' median at 2.4k
/// tasks/s, where every batch waited for all of it).
fn gather(
    first: WriteOp,
    first_queued: Instant,
    queue: &mut mpsc::Receiver<Queued>,
    concurrent: bool,
    checkpoint_asked: &mut Vec<oneshot::Sender<StoreResult<()>>>,
) -> Vec<WriteOp> {
    let mut batch = vec![first];
    let started = first_queued;
    let mut last_arrival = Instant::now();
    loop {
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(Queued::Op(op, _)) => {
                    batch.push(op);
                    last_arrival = Instant::now();
                }
                // The loop checks for a due checkpoint after this batch anyway.
                Ok(Queued::Tick) => {}
                Ok(Queued::Checkpoint(reply)) => checkpoint_asked.push(reply),
                Err(_) => break,
            }
        }
        if !concurrent
            || batch.len() >= MAX_BATCH
            || started.elapsed() >= GATHER_WINDOW
            || last_arrival.elapsed() >= GATHER_QUIET
        {
            return batch;
        }
        std::thread::sleep(GATHER_POLL);
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

impl Reply {
    /// The request's reply slot, for a batch that failed before reaching it.
    fn unreached(op: WriteOp) -> Reply {
        match op {
            WriteOp::Commit(_, tx)
            | WriteOp::PutPush(_, tx)
            | WriteOp::DeletePushAll(_, tx)
            | WriteOp::AdvancePush(_, _, _, tx)
            | WriteOp::PutDead(_, tx) => Reply::Unit(tx, Ok(())),
            WriteOp::DeletePush(_, _, tx) | WriteOp::DeleteTask(_, tx) => {
                Reply::Bool(tx, Ok(false))
            }
            WriteOp::TakeDead(_, tx) => Reply::Dead(tx, Ok(None)),
        }
    }

    fn send(self, batch: &StoreResult<()>) {
        // A failed batch fails every request in it: none of them is durable.
        let failed = |e: &StoreError| StoreError::Backend(e.to_string());
        match (self, batch) {
            (Reply::Unit(tx, result), Ok(())) => drop(tx.send(result)),
            (Reply::Bool(tx, result), Ok(())) => drop(tx.send(result)),
            (Reply::Dead(tx, result), Ok(())) => drop(tx.send(result)),
            (Reply::Unit(tx, _), Err(e)) => drop(tx.send(Err(failed(e)))),
            (Reply::Bool(tx, _), Err(e)) => drop(tx.send(Err(failed(e)))),
            (Reply::Dead(tx, _), Err(e)) => drop(tx.send(Err(failed(e)))),
        }
    }
}

/// One batch's writes: each goes into the journal frame and into the transaction, in
/// the same order, through the same [`Tables::apply`] a replay uses. A batch of task
/// commits goes into the journal frame only, and reaches the file later (deferred, or
/// when the running checkpoint ends).
struct BatchWriter<'txn, 'j> {
    /// The transaction's tables; `None` for a journal-only batch.
    tables: Option<Tables<'txn>>,
    /// What a journal-only batch reads: the file as it stands (what was journaled since
    /// it last caught up is all in the cache, which forgets nothing meanwhile).
    snapshot: Option<redb::ReadTransaction>,
    journal: &'j mut Journal,
}

impl<'txn> BatchWriter<'txn, '_> {
    fn write(&mut self, entry: Entry<'_>) -> StoreResult<()> {
        self.journal.add(&entry)?;
        match &mut self.tables {
            Some(tables) => tables.apply(&entry),
            None => Ok(()),
        }
    }

    fn tables(&mut self) -> StoreResult<&mut Tables<'txn>> {
        self.tables.as_mut().ok_or_else(|| {
            StoreError::Backend(
                "internal: a journal-only batch took a request that reads the file".into(),
            )
        })
    }

    /// The task as the file has it.
    fn stored(&mut self, task_id: &str) -> StoreResult<Option<TaskHead>> {
        let stored = |found: Option<redb::AccessGuard<'_, &'static [u8]>>| {
            found
                .map(|bytes| TaskHead::of_stored(bytes.value()))
                .transpose()
                .map_err(|e| StoreError::Backend(format!("corrupt task record: {e}")))
        };
        match (&self.tables, &self.snapshot) {
            (Some(tables), _) => stored(tables.tasks.get(task_id).map_err(StoreError::backend)?),
            (None, Some(snapshot)) => {
                let table = snapshot.open_table(TASKS).map_err(StoreError::backend)?;
                stored(table.get(task_id).map_err(StoreError::backend)?)
            }
            (None, None) => Err(StoreError::Backend(
                "internal: a batch with nothing to read".into(),
            )),
        }
    }
}

/// How a batch reaches the file.
enum Mode<'r> {
    /// Journaled and applied to the file in one non-durable commit.
    Apply,
    /// Journaled only, its payload kept here to be applied later: with the deferred
    /// batches, or once the running checkpoint ends.
    JournalOnly(&'r mut Vec<Vec<u8>>),
}

/// Returns whether the batch was written.
fn apply_batch(
    db: &Database,
    hot: &SharedHot,
    dropper: &Dropper,
    journal: &mut Journal,
    batch: Vec<WriteOp>,
    mode: Mode<'_>,
) -> bool {
    let mut replies = Vec::with_capacity(batch.len());
    // What this batch changes in the cache, applied only once it is durable.
    let mut changes = Changes::default();
    let mut ops = batch.into_iter();
    let outcome = (|| -> StoreResult<()> {
        let (txn, snapshot) = match mode {
            Mode::Apply => {
                let mut txn = db.begin_write().map_err(StoreError::backend)?;
                // Durable through the journal frame written below, before this commit.
                txn.set_durability(redb::Durability::None)
                    .map_err(StoreError::backend)?;
                (Some(txn), None)
            }
            Mode::JournalOnly(_) => (None, Some(db.begin_read().map_err(StoreError::backend)?)),
        };
        journal.begin();
        {
            let mut writer = BatchWriter {
                tables: txn.as_ref().map(Tables::open).transpose()?,
                snapshot,
                journal: &mut *journal,
            };
            let mut touched_push = HashSet::new();
            for op in ops.by_ref() {
                // An error here is the storage failing: the whole batch is abandoned.
                replies.push(apply_op(
                    &mut writer,
                    hot,
                    &mut changes,
                    &mut touched_push,
                    op,
                )?);
            }
            // The cache takes each changed task's configs as the file now has them.
            for task_id in touched_push {
                let configs = configs_of(&writer.tables()?.push, &task_id)?;
                changes.push.insert(task_id, configs);
            }
        }
        if !journal.has_entries() {
            // Nothing changed (refusals, reads of missing keys): nothing to make durable.
            return match txn {
                Some(txn) => txn.abort().map_err(StoreError::backend),
                None => Ok(()),
            };
        }
        journal.write_frame()?;
        match (txn, mode) {
            (Some(txn), _) => txn.commit().map_err(|e| {
                journal.undo_last_frame();
                StoreError::backend(e)
            }),
            (None, Mode::JournalOnly(backlog)) => {
                backlog.push(journal.payload().to_vec());
                Ok(())
            }
            (None, Mode::Apply) => Ok(()),
        }
    })();
    replies.extend(ops.map(Reply::unreached));
    if outcome.is_ok() {
        // Before any reply: a caller that hears "committed" reads what it wrote.
        dropper.change_cache(hot, |hot| hot.apply(changes));
    }
    for reply in replies {
        reply.send(&outcome);
    }
    if let Err(e) = &outcome {
        tracing::error!(error = %e, "store batch commit failed");
    }
    outcome.is_ok()
}

/// Applies one request; `Err` only for a storage failure, which fails the batch.
fn apply_op(
    writer: &mut BatchWriter<'_, '_>,
    hot: &SharedHot,
    changes: &mut Changes,
    touched_push: &mut HashSet<String>,
    op: WriteOp,
) -> StoreResult<Reply> {
    Ok(match op {
        WriteOp::Commit(commit, tx) => match apply_commit(writer, hot, changes, &commit)? {
            Ok(()) => {
                let TaskCommit { record, events, .. } = *commit;
                changes.records.insert(record.task.id.clone(), record);
                changes.events.extend(events);
                Reply::Unit(tx, Ok(()))
            }
            Err(refused) => Reply::Unit(tx, Err(refused)),
        },
        WriteOp::PutPush(record, tx) => {
            let value = encode(&*record)?;
            let task_id = record.config.task_id.as_str();
            writer.write(Entry::PutPush {
                task_id,
                config_id: record.config.id.as_deref().unwrap_or_default(),
                value: &value,
            })?;
            changes.with_push.push(task_id.to_owned());
            touched_push.insert(task_id.to_owned());
            Reply::Unit(tx, Ok(()))
        }
        WriteOp::DeletePushAll(task_id, tx) => {
            writer.write(Entry::RemoveTaskPush { task_id: &task_id })?;
            changes.without_push.push(task_id.clone());
            touched_push.insert(task_id);
            Reply::Unit(tx, Ok(()))
        }
        WriteOp::PutDead(letter, tx) => {
            let value = encode(&*letter)?;
            writer.write(Entry::PutDead {
                id: &letter.id,
                value: &value,
            })?;
            Reply::Unit(tx, Ok(()))
        }
        WriteOp::TakeDead(id, tx) => {
            let letter = match writer
                .tables()?
                .dead
                .get(id.as_str())
                .map_err(StoreError::backend)?
            {
                Some(bytes) => Some(decode::<DeadLetter>(bytes.value())?),
                None => None,
            };
            if letter.is_some() {
                writer.write(Entry::RemoveDead { id: &id })?;
            }
            Reply::Dead(tx, Ok(letter))
        }
        WriteOp::AdvancePush(task_id, config_id, seq, tx) => {
            if let Some(value) = advanced_cursor(&writer.tables()?.push, &task_id, &config_id, seq)?
            {
                writer.write(Entry::PutPush {
                    task_id: &task_id,
                    config_id: &config_id,
                    value: &value,
                })?;
            }
            touched_push.insert(task_id);
            Reply::Unit(tx, Ok(()))
        }
        WriteOp::DeleteTask(task_id, tx) => {
            writer.tables()?; // a delete writes the file: never in a journal-only batch
            let stored = writer.stored(&task_id)?;
            match stored.map(|head| head.finished_at) {
                Some(Some(at)) => writer.write(Entry::RemoveFinished { at, id: &task_id })?,
                Some(None) => writer.write(Entry::RemoveUnfinished { id: &task_id })?,
                None => {}
            }
            let existed = stored.is_some();
            writer.write(Entry::RemoveTask { id: &task_id })?;
            changes.records.remove(&task_id);
            changes.deleted.push(task_id);
            Reply::Bool(tx, Ok(existed))
        }
        WriteOp::DeletePush(task_id, config_id, tx) => {
            let key = (task_id.as_str(), config_id.as_str());
            let existed = writer
                .tables()?
                .push
                .get(key)
                .map_err(StoreError::backend)?
                .is_some();
            if existed {
                writer.write(Entry::RemovePush {
                    task_id: &task_id,
                    config_id: &config_id,
                })?;
            }
            touched_push.insert(task_id);
            Reply::Bool(tx, Ok(existed))
        }
    })
}

/// The config with its cursor moved to `seq`, encoded; `None` when there is nothing
/// to move (no such config, or its cursor is already there).
fn advanced_cursor(
    push: &PushTable<'_>,
    task_id: &str,
    config_id: &str,
    seq: u64,
) -> StoreResult<Option<Vec<u8>>> {
    let current = match push
        .get((task_id, config_id))
        .map_err(StoreError::backend)?
    {
        Some(bytes) => decode::<PushConfigRecord>(bytes.value())?,
        None => return Ok(None),
    };
    if current.from_seq >= seq {
        return Ok(None);
    }
    encode(&PushConfigRecord {
        from_seq: seq,
        ..current
    })
    .map(Some)
}

/// What a batch changed, for the [`Hot`](super::Hot) cache once the batch is durable.
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// The latest record of each task committed in the batch.
    pub(super) records: crate::IdMap<String, std::sync::Arc<TaskRecord>>,
    /// Every event committed in the batch, in commit order.
    pub(super) events: Vec<StoredEvent>,
    /// The configs, after the batch, of each task whose configs it changed.
    pub(super) push: crate::IdMap<String, Vec<PushConfigRecord>>,
    pub(super) deleted: Vec<String>,
    pub(super) with_push: Vec<String>,
    pub(super) without_push: Vec<String>,
}

/// Checks the commit's expected sequence and writes it: the inner `Err` is the refusal
/// (the task moved on), the outer one a storage failure.
fn apply_commit(
    writer: &mut BatchWriter<'_, '_>,
    hot: &SharedHot,
    changes: &Changes,
    commit: &TaskCommit,
) -> StoreResult<StoreResult<()>> {
    let task_id = commit.record.task.id.as_str();
    // The task as now stored: from this batch, else the cache, else the file.
    let known = match changes.records.get(task_id) {
        Some(record) => Some(TaskHead::of(record)),
        None => hot.read().records.get(task_id).map(|r| TaskHead::of(r)),
    };
    let current = match known {
        Some(current) => Some(current),
        None => writer.stored(task_id)?,
    };
    let current_seq = current.map_or(0, |c| c.seq);
    if current_seq != commit.expected_seq {
        return Ok(Err(StoreError::Conflict {
            task_id: task_id.to_owned(),
            current_seq,
        }));
    }
    let record = commit
        .record
        .to_stored_json()
        .map_err(StoreError::backend)?;
    writer.write(Entry::PutTask {
        id: task_id,
        value: &record,
    })?;
    // The indexes of finished and unfinished tasks. A task created finished (an agent
    // that answers at once) touches one; one created running, each index once more.
    match (current, commit.record.finished_at_millis()) {
        (None, None) => writer.write(Entry::PutUnfinished { id: task_id })?,
        (Some(_), None) => {}
        (before, Some(at)) => {
            match before.map(|b| b.finished_at) {
                Some(None) => writer.write(Entry::RemoveUnfinished { id: task_id })?,
                // A finished task committed again (its end restamped) keeps one entry.
                Some(Some(before)) if before != at => writer.write(Entry::RemoveFinished {
                    at: before,
                    id: task_id,
                })?,
                Some(Some(_)) | None => {}
            }
            writer.write(Entry::PutFinished { at, id: task_id })?;
        }
    }
    if let Some(first) = commit.events.first() {
        let run = super::runs::encode(&commit.events)?;
        writer.write(Entry::PutEvent {
            task_id,
            seq: first.seq,
            value: &run,
        })?;
    }
    Ok(Ok(()))
}
