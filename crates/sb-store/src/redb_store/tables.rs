//! The redb side of the journal: applying [`Entry`] values to the tables (the writer
//! and the replay share this one function), checkpoints, and the replay on open.

use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};

use super::journal::{Entry, Journal, entries};
use super::{DEAD, EVENTS, PUSH, TASKS};
use crate::traits::{StoreError, StoreResult};

/// Store-wide facts: the journal epoch of the last checkpoint.
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");
const JOURNAL_EPOCH: &str = "journal_epoch";

pub(super) type PushTable<'txn> = redb::Table<'txn, (&'static str, &'static str), &'static [u8]>;

/// Every table a batch writes, open in one write transaction.
pub(super) struct Tables<'txn> {
    pub(super) tasks: redb::Table<'txn, &'static str, &'static [u8]>,
    pub(super) events: redb::Table<'txn, (&'static str, u64), &'static [u8]>,
    pub(super) push: PushTable<'txn>,
    pub(super) dead: redb::Table<'txn, &'static str, &'static [u8]>,
}

impl<'txn> Tables<'txn> {
    pub(super) fn open(txn: &'txn WriteTransaction) -> StoreResult<Tables<'txn>> {
        Ok(Tables {
            tasks: txn.open_table(TASKS).map_err(StoreError::backend)?,
            events: txn.open_table(EVENTS).map_err(StoreError::backend)?,
            push: txn.open_table(PUSH).map_err(StoreError::backend)?,
            dead: txn.open_table(DEAD).map_err(StoreError::backend)?,
        })
    }

    pub(super) fn apply(&mut self, entry: &Entry<'_>) -> StoreResult<()> {
        let done = match *entry {
            Entry::PutTask { id, value } => self.tasks.insert(id, value).map(drop),
            Entry::PutEvent {
                task_id,
                seq,
                value,
            } => self.events.insert((task_id, seq), value).map(drop),
            Entry::RemoveTask { id } => self
                .events
                .retain_in((id, 0)..=(id, u64::MAX), |_, _| false)
                .and_then(|()| self.tasks.remove(id).map(drop)),
            Entry::PutPush {
                task_id,
                config_id,
                value,
            } => self.push.insert((task_id, config_id), value).map(drop),
            Entry::RemovePush { task_id, config_id } => {
                self.push.remove((task_id, config_id)).map(drop)
            }
            Entry::RemoveTaskPush { task_id } => self
                .push
                .retain_in((task_id, "")..=(task_id, "\u{10ffff}"), |(t, _), _| {
                    t != task_id
                }),
            Entry::PutDead { id, value } => self.dead.insert(id, value).map(drop),
            Entry::RemoveDead { id } => self.dead.remove(id).map(drop),
        };
        done.map_err(StoreError::backend)
    }
}

/// Creates every table the store uses (a new file has none) and returns the epoch the
/// last checkpoint recorded (0 for a new store).
pub(super) fn create_all(db: &Database) -> StoreResult<u64> {
    let txn = db.begin_write().map_err(StoreError::backend)?;
    let epoch = {
        txn.open_table(TASKS).map_err(StoreError::backend)?;
        txn.open_table(EVENTS).map_err(StoreError::backend)?;
        txn.open_table(PUSH).map_err(StoreError::backend)?;
        txn.open_table(DEAD).map_err(StoreError::backend)?;
        let meta = txn.open_table(META).map_err(StoreError::backend)?;
        let epoch = meta.get(JOURNAL_EPOCH).map_err(StoreError::backend)?;
        epoch.map(|e| e.value()).unwrap_or(0)
    };
    txn.commit().map_err(StoreError::backend)?;
    Ok(epoch)
}

/// Applies what the journal holds beyond the last checkpoint (after a crash), then
/// checkpoints.
pub(super) fn replay(
    db: &Database,
    journal: &mut Journal,
    payloads: &[Vec<u8>],
) -> StoreResult<()> {
    checkpoint_with(db, journal, |txn| apply_all(txn, payloads))
}

/// Applies journaled payloads, in order, inside `txn`.
fn apply_all(txn: &WriteTransaction, payloads: &[Vec<u8>]) -> StoreResult<()> {
    let mut tables = Tables::open(txn)?;
    for payload in payloads {
        for entry in entries(payload)? {
            tables.apply(&entry)?;
        }
    }
    Ok(())
}

/// A durable commit recording `epoch` as the journal's oldest live one: everything
/// journaled under earlier epochs must already be in the file (committed non-durably).
/// The checkpoint thread's whole job; the writer journals on meanwhile.
pub(super) fn record_epoch(db: &Database, epoch: u64) -> StoreResult<()> {
    let txn = db.begin_write().map_err(StoreError::backend)?;
    {
        let mut meta = txn.open_table(META).map_err(StoreError::backend)?;
        meta.insert(JOURNAL_EPOCH, epoch)
            .map_err(StoreError::backend)?;
    }
    txn.commit().map_err(StoreError::backend)
}

/// Applies journaled payloads to the file in one non-durable commit (they are durable
/// in the journal already): the batches acknowledged while a checkpoint ran. None, no
/// commit.
pub(super) fn apply_payloads(db: &Database, payloads: &[Vec<u8>]) -> StoreResult<()> {
    if payloads.is_empty() {
        return Ok(());
    }
    let mut txn = db.begin_write().map_err(StoreError::backend)?;
    txn.set_durability(redb::Durability::None)
        .map_err(StoreError::backend)?;
    apply_all(&txn, payloads)?;
    txn.commit().map_err(StoreError::backend)
}

/// The epoch the last checkpoint recorded.
#[cfg(test)]
pub(super) fn recorded_epoch(db: &impl redb::ReadableDatabase) -> u64 {
    let txn = db.begin_read().unwrap();
    let meta = txn.open_table(META).unwrap();
    meta.get(JOURNAL_EPOCH).unwrap().map_or(0, |e| e.value())
}

/// Makes every journaled batch durable in the redb file (a durable commit, recording
/// the next epoch), then empties the journal under that epoch.
pub(super) fn checkpoint(db: &Database, journal: &mut Journal) -> StoreResult<()> {
    checkpoint_with(db, journal, |_| Ok(()))
}

fn checkpoint_with(
    db: &Database,
    journal: &mut Journal,
    also: impl FnOnce(&WriteTransaction) -> StoreResult<()>,
) -> StoreResult<()> {
    let next = journal.epoch() + 1;
    let txn = db.begin_write().map_err(StoreError::backend)?;
    also(&txn)?;
    {
        let mut meta = txn.open_table(META).map_err(StoreError::backend)?;
        meta.insert(JOURNAL_EPOCH, next)
            .map_err(StoreError::backend)?;
    }
    txn.commit().map_err(StoreError::backend)?;
    journal.reset(next)
}
