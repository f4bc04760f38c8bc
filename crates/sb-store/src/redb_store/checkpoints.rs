//! The redb file behind the journal. Task commits are journaled and acknowledged
//! without the file ([`Deferred`]), and applied to it a few batches at a time: one
//! non-durable redb transaction for several batches instead of one each. Their
//! compare-and-set is answered from the cache, which keeps every task it holds until
//! the file has caught up, or from a read of the file.
//!
//! A checkpoint runs on a thread of its own ([`checkpoint_loop`]): the journal moves to
//! its other file, and while redb's durable commit holds the file, task commits are
//! journaled the same way and applied when it ends. Reads that miss the cache wait for
//! the file to catch up ([`super::Lag`]), and ask the writer to catch up at once. Any
//! other request waits for the checkpoint to end, and has the deferred batches applied
//! first.

use redb::Database;
use tokio::sync::mpsc;

use super::hot::Hot;
use super::journal::Journal;
use super::tables::{apply_payloads, record_epoch};
use super::writer::{Queued, Writer};
use crate::traits::{StoreError, StoreResult};

/// The writer's ends of the checkpoint thread's channels: the epoch to record, and the
/// outcome.
pub(super) struct Checkpointer {
    pub(super) ask: std::sync::mpsc::Sender<u64>,
    pub(super) done: std::sync::mpsc::Receiver<StoreResult<()>>,
}

impl Checkpointer {
    /// The running checkpoint's outcome, if it has ended.
    pub(super) fn ended(&self) -> Option<StoreResult<()>> {
        match self.done.try_recv() {
            Ok(outcome) => Some(outcome),
            Err(std::sync::mpsc::TryRecvError::Empty) => None,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => Some(Err(thread_stopped())),
        }
    }

    /// The running checkpoint's outcome, once it ends.
    fn outcome(&self) -> StoreResult<()> {
        self.done.recv().unwrap_or_else(|_| Err(thread_stopped()))
    }
}

fn thread_stopped() -> StoreError {
    StoreError::Backend("the checkpoint thread stopped".into())
}

/// The checkpoint thread: a durable commit recording each epoch it is asked for. Each
/// outcome also wakes the writer (which only looks when a request or reminder comes):
/// until it applies what it journaled meanwhile, reads that miss the cache wait.
pub(super) fn checkpoint_loop(
    db: &Database,
    asks: std::sync::mpsc::Receiver<u64>,
    done: std::sync::mpsc::Sender<StoreResult<()>>,
    wake: mpsc::WeakSender<Queued>,
) {
    for epoch in asks {
        if done.send(record_epoch(db, epoch)).is_err() {
            return;
        }
        if let Some(queue) = wake.upgrade() {
            // A full queue means the writer is busy, and it looks after every batch.
            let _ = queue.try_send(Queued::Tick);
        }
    }
}

/// A checkpoint under way on the checkpoint thread.
#[derive(Debug)]
pub(super) struct Running {
    /// The epoch it records.
    pub(super) epoch: u64,
    /// The payloads of the batches journaled since it started: not in the file yet.
    pub(super) backlog: Vec<Vec<u8>>,
}

/// Starts a checkpoint on the checkpoint thread. The journal moves to its other file
/// under the next epoch, which the checkpoint records, unless that file still holds
/// what no checkpoint has made durable (the last one failed): then it records the
/// current epoch, whose file a restart replays again (replaying is idempotent).
pub(super) fn start(
    writer: &Writer<'_>,
    journal: &mut Journal,
    durable_epoch: u64,
) -> StoreResult<Running> {
    let epoch = if journal.can_rotate(durable_epoch) {
        journal.rotate()?
    } else {
        journal.epoch()
    };
    fall_behind(writer);
    if writer.checkpointer.ask.send(epoch).is_err() {
        finish_lag(writer, None);
        return Err(thread_stopped());
    }
    Ok(Running {
        epoch,
        backlog: Vec::new(),
    })
}

/// Waits for the running checkpoint to end, then [`finish`]es it.
pub(super) fn wait_for(
    writer: &Writer<'_>,
    checkpoint: Running,
    durable_epoch: &mut u64,
    lost: &mut Option<String>,
) -> bool {
    let outcome = writer.checkpointer.outcome();
    finish(writer, checkpoint, outcome, durable_epoch, lost)
}

/// Ends a checkpoint: applies the batches journaled meanwhile to the file, lets the
/// cache forget again, and lets the reads that waited go. Returns whether all went well.
pub(super) fn finish(
    writer: &Writer<'_>,
    checkpoint: Running,
    outcome: StoreResult<()>,
    durable_epoch: &mut u64,
    lost: &mut Option<String>,
) -> bool {
    let recorded = match outcome {
        Ok(()) => {
            *durable_epoch = checkpoint.epoch;
            true
        }
        Err(e) => {
            tracing::error!(error = %e, "store checkpoint failed; the journal keeps every batch meanwhile");
            false
        }
    };
    let applied = catch_up(writer, &checkpoint.backlog, lost);
    recorded && applied
}

/// Task commits journaled and acknowledged but not applied to the file yet, outside a
/// checkpoint: applied together when the oldest is [`Deferred::FOR`] old, when a read
/// needs the file, or before any other request or checkpoint.
#[derive(Debug, Default)]
pub(super) struct Deferred {
    /// Their journal payloads, oldest first.
    pub(super) backlog: Vec<Vec<u8>>,
    since: Option<std::time::Instant>,
}

impl Deferred {
    /// How long the file may stay behind under steady commits. The acknowledgment then
    /// waits for the journal only, not for its batch's B-tree inserts and redb commit,
    /// and a transaction's fixed costs are shared by the batches it takes. Short, since
    /// the cache keeps every task meanwhile and a read of the file makes it catch up.
    const FOR: std::time::Duration = std::time::Duration::from_millis(12);
    /// A backlog this long is applied whatever its age.
    const MOST_BATCHES: usize = 64;

    /// Makes room for one more batch, which is acknowledged without the file: the cache
    /// must keep every task, and reads that miss it must wait.
    pub(super) fn take(&mut self, writer: &Writer<'_>) -> &mut Vec<Vec<u8>> {
        if self.since.is_none() {
            self.since = Some(std::time::Instant::now());
            fall_behind(writer);
        }
        &mut self.backlog
    }

    /// After a batch from [`Deferred::take`] was journaled and acknowledged: the file's
    /// lag counts from the first one's acknowledgment, so a batch whose fsync was slow
    /// (a busy disk) is not applied right after it for that.
    pub(super) fn acknowledged(&mut self) {
        if self.backlog.len() == 1 {
            self.since = Some(std::time::Instant::now());
        }
    }

    pub(super) fn due(&self) -> bool {
        self.since.is_some_and(|since| since.elapsed() >= Self::FOR)
            || self.backlog.len() >= Self::MOST_BATCHES
    }

    /// Applies the backlog to the file (see [`catch_up`]).
    pub(super) fn apply(&mut self, writer: &Writer<'_>, lost: &mut Option<String>) -> bool {
        if self.since.take().is_none() {
            return true;
        }
        let applied = catch_up(writer, &self.backlog, lost);
        self.backlog.clear();
        applied
    }
}

/// Applies journaled batches to the file in one non-durable commit, lets the cache
/// forget again, and lets the reads that waited go. A failure leaves acknowledged writes
/// out of the file: reads fail from then on (they would miss them) until a restart
/// replays the journal. Returns whether the batches were applied.
fn catch_up(writer: &Writer<'_>, backlog: &[Vec<u8>], lost: &mut Option<String>) -> bool {
    let applied = apply_payloads(writer.db, backlog);
    if let Err(e) = &applied {
        *lost = Some(format!(
            "the store file could not take writes already journaled ({e}; is the disk full?); they are safe in the journal, and a restart replays them"
        ));
    }
    finish_lag(writer, lost.as_deref());
    applied.is_ok()
}

/// Before any batch is acknowledged without the file: the cache keeps every task, and
/// reads that miss it wait for [`finish_lag`].
fn fall_behind(writer: &Writer<'_>) {
    writer.hot.write().pinned = true;
    writer.lag.send_modify(|lag| lag.behind = true);
}

fn finish_lag(writer: &Writer<'_>, lost: Option<&str>) {
    writer.dropper.change_cache(writer.hot, Hot::unpin);
    writer.lag.send_modify(|lag| {
        lag.behind = false;
        lag.caught_up += 1;
        lag.lost = lost.map(str::to_owned);
    });
}
