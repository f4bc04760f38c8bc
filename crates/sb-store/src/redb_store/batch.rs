//! One batch of the writer's requests ([`apply_batch`]): its transaction, or for task
//! commits alone a journal frame only ([`Mode`]); the cache's changes once it is durable
//! ([`Changes`]); and its replies, sent only then ([`Reply`]).

use std::collections::HashSet;

use redb::{Database, ReadableDatabase, ReadableTable};
use tokio::sync::oneshot;

use super::dropper::Dropper;
use super::hot::SharedHot;
use super::journal::{Entry, Journal};
use super::ops::apply_op;
use super::tables::Tables;
use super::writer::WriteOp;
use super::{TASKS, configs_of};
use crate::record::{DeadLetter, PushConfigRecord, StoredEvent, TaskHead, TaskRecord};
use crate::traits::{StoreError, StoreResult};

/// The outcome of one request inside a batch, sent only once the batch is durable.
pub(super) enum Reply {
    Unit(oneshot::Sender<StoreResult<()>>, StoreResult<()>),
    Bool(oneshot::Sender<StoreResult<bool>>, StoreResult<bool>),
    Dead(
        oneshot::Sender<StoreResult<Option<DeadLetter>>>,
        StoreResult<Option<DeadLetter>>,
    ),
    Bytes(oneshot::Sender<StoreResult<Vec<u8>>>, StoreResult<Vec<u8>>),
}

impl Reply {
    /// The request's reply slot, for a batch that failed before reaching it.
    fn unreached(op: WriteOp) -> Reply {
        match op {
            WriteOp::Commit(_, tx)
            | WriteOp::PutPush(_, tx)
            | WriteOp::DeletePushAll(_, tx)
            | WriteOp::AdvancePush(_, _, _, tx)
            | WriteOp::PutDead(_, tx)
            | WriteOp::PutAgent(_, _, tx) => Reply::Unit(tx, Ok(())),
            WriteOp::DeletePush(_, _, tx)
            | WriteOp::DeleteTask(_, tx)
            | WriteOp::RemoveAgent(_, tx) => Reply::Bool(tx, Ok(false)),
            WriteOp::TakeDead(_, tx) => Reply::Dead(tx, Ok(None)),
            WriteOp::SigningKey(_, tx) => Reply::Bytes(tx, Ok(Vec::new())),
            WriteOp::Fleet(op) => op.unreached(),
        }
    }

    fn send(self, batch: &StoreResult<()>) {
        // A failed batch fails every request in it: none of them is durable.
        let failed = |e: &StoreError| StoreError::Backend(e.to_string());
        match (self, batch) {
            (Reply::Unit(tx, result), Ok(())) => drop(tx.send(result)),
            (Reply::Bool(tx, result), Ok(())) => drop(tx.send(result)),
            (Reply::Dead(tx, result), Ok(())) => drop(tx.send(result)),
            (Reply::Bytes(tx, result), Ok(())) => drop(tx.send(result)),
            (Reply::Unit(tx, _), Err(e)) => drop(tx.send(Err(failed(e)))),
            (Reply::Bool(tx, _), Err(e)) => drop(tx.send(Err(failed(e)))),
            (Reply::Dead(tx, _), Err(e)) => drop(tx.send(Err(failed(e)))),
            (Reply::Bytes(tx, _), Err(e)) => drop(tx.send(Err(failed(e)))),
        }
    }
}

/// One batch's writes: each goes into the journal frame and into the transaction, in
/// the same order, through the same [`Tables::apply`] a replay uses. A batch of task
/// commits goes into the journal frame only, and reaches the file later (deferred, or
/// when the running checkpoint ends).
pub(super) struct BatchWriter<'txn, 'j> {
    /// The transaction's tables; `None` for a journal-only batch.
    tables: Option<Tables<'txn>>,
    /// What a journal-only batch reads: the file as it stands (what was journaled since
    /// it last caught up is all in the cache, which forgets nothing meanwhile).
    snapshot: Option<redb::ReadTransaction>,
    journal: &'j mut Journal,
}

impl<'txn> BatchWriter<'txn, '_> {
    pub(super) fn write(&mut self, entry: Entry<'_>) -> StoreResult<()> {
        self.journal.add(&entry)?;
        match &mut self.tables {
            Some(tables) => tables.apply(&entry),
            None => Ok(()),
        }
    }

    pub(super) fn tables(&mut self) -> StoreResult<&mut Tables<'txn>> {
        self.tables.as_mut().ok_or_else(|| {
            StoreError::Backend(
                "internal: a journal-only batch took a request that reads the file".into(),
            )
        })
    }

    /// The task as the file has it.
    pub(super) fn stored(&mut self, task_id: &str) -> StoreResult<Option<TaskHead>> {
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
pub(super) enum Mode<'r> {
    /// Journaled and applied to the file in one non-durable commit.
    Apply,
    /// Journaled only, its payload kept here to be applied later: with the deferred
    /// batches, or once the running checkpoint ends.
    JournalOnly(&'r mut Vec<Vec<u8>>),
}

/// Returns whether the batch was written.
pub(super) fn apply_batch(
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

/// What a batch changed, for the [`Hot`](super::hot::Hot) cache once the batch is durable.
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
