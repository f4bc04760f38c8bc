//! The writer thread: every write request waiting in the queue goes into one transaction
//! and one journal frame (group commit). Under concurrent load it waits a moment for more
//! requests before committing (see [`gather`]); the records it
//! commits also keep the [`Hot`](super::hot::Hot) cache current, since this thread is the
//! only one that changes the file. A batch is durable once its journal frame is on disk
//! ([`super::journal`]); task commits reach the redb file a few batches at a time, in one
//! non-durable commit ([`super::checkpoints::Deferred`]), other requests in a commit of
//! their own, and a checkpoint every [`CHECKPOINT_EVERY`] makes the redb file itself
//! durable, on a thread of its own ([`super::checkpoints`]) while acknowledgments go on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use redb::Database;
use tokio::sync::{mpsc, oneshot};

use super::Lag;
use super::batch::{Mode, apply_batch};
use super::checkpoints::{Checkpointer, Deferred, Running, finish, start, wait_for};
use super::dropper::Dropper;
use super::gather::gather;
use super::hot::SharedHot;
use super::journal::Journal;
use super::tables::checkpoint;
use crate::record::{DeadLetter, PushConfigRecord, TaskCommit};
use crate::traits::{StoreError, StoreResult};

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
    /// The registry's agent by name, and its stored form.
    PutAgent(String, Vec<u8>, oneshot::Sender<StoreResult<()>>),
    RemoveAgent(String, oneshot::Sender<StoreResult<bool>>),
    /// The stored signing key, storing this generated one first if there is none:
    /// decided here, the one writer, so callers racing all get the first key stored.
    SigningKey(Vec<u8>, oneshot::Sender<StoreResult<Vec<u8>>>),
    /// A write of the fleet layer ([`crate::FleetStore`]).
    Fleet(super::fleet::FleetOp),
}

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
