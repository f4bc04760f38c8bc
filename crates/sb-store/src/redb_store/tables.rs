//! The redb side of the journal: applying [`Entry`] values to the tables (the writer
//! and the replay share this one function), checkpoints, and the replay on open.

use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};

use super::fleet_writes::FleetTables;
use super::journal::{Entry, Journal, entries};
use super::registry::RegistryTables;
use super::{AGENTS, DEAD, EVENTS, FINISHED, PUSH, REGISTRY_META, TASKS, UNFINISHED};
use crate::record::TaskHead;
use crate::traits::{StoreError, StoreResult};

/// Store-wide facts: the journal epoch of the last checkpoint.
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");
const JOURNAL_EPOCH: &str = "journal_epoch";
/// Set once [`FINISHED`] and [`UNFINISHED`] index every task: a store written before
/// they existed is indexed once, when it is first opened.
const TASKS_INDEXED: &str = "tasks_indexed";

pub(super) type PushTable<'txn> = redb::Table<'txn, (&'static str, &'static str), &'static [u8]>;

/// Every table a batch writes, open in one write transaction.
pub(super) struct Tables<'txn> {
    pub(super) tasks: redb::Table<'txn, &'static str, &'static [u8]>,
    pub(super) events: redb::Table<'txn, (&'static str, u64), &'static [u8]>,
    pub(super) push: PushTable<'txn>,
    pub(super) dead: redb::Table<'txn, &'static str, &'static [u8]>,
    pub(super) finished: redb::Table<'txn, (u64, &'static str), ()>,
    pub(super) unfinished: redb::Table<'txn, &'static str, ()>,
    /// Opened on first use: a batch seldom touches the registry, and the task commits'
    /// batches should not pay for opening its tables.
    registry: Option<RegistryTables<'txn>>,
    /// The fleet layer's tables, opened on first use for the same reason.
    fleet: Option<FleetTables<'txn>>,
    txn: &'txn WriteTransaction,
}

impl<'txn> Tables<'txn> {
    pub(super) fn open(txn: &'txn WriteTransaction) -> StoreResult<Tables<'txn>> {
        Ok(Tables {
            registry: None,
            fleet: None,
            txn,
            tasks: txn.open_table(TASKS).map_err(StoreError::backend)?,
            events: txn.open_table(EVENTS).map_err(StoreError::backend)?,
            push: txn.open_table(PUSH).map_err(StoreError::backend)?,
            dead: txn.open_table(DEAD).map_err(StoreError::backend)?,
            finished: txn.open_table(FINISHED).map_err(StoreError::backend)?,
            unfinished: txn.open_table(UNFINISHED).map_err(StoreError::backend)?,
        })
    }

    /// The registry's tables, opened in this transaction on first use.
    pub(super) fn registry(&mut self) -> StoreResult<&mut RegistryTables<'txn>> {
        let tables = match self.registry.take() {
            Some(tables) => tables,
            None => RegistryTables::open(self.txn)?,
        };
        Ok(self.registry.insert(tables))
    }

    /// The fleet layer's tables, opened in this transaction on first use.
    pub(super) fn fleet(&mut self) -> StoreResult<&mut FleetTables<'txn>> {
        let tables = match self.fleet.take() {
            Some(tables) => tables,
            None => FleetTables::open(self.txn)?,
        };
        Ok(self.fleet.insert(tables))
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
            Entry::PutFinished { at, id } => self.finished.insert((at, id), ()).map(drop),
            Entry::RemoveFinished { at, id } => self.finished.remove((at, id)).map(drop),
            Entry::PutUnfinished { id } => self.unfinished.insert(id, ()).map(drop),
            Entry::RemoveUnfinished { id } => self.unfinished.remove(id).map(drop),
            Entry::PutAgent { name, value } => {
                self.registry()?.agents.insert(name, value).map(drop)
            }
            Entry::RemoveAgent { name } => self.registry()?.agents.remove(name).map(drop),
            Entry::PutRegistryMeta { key, value } => {
                self.registry()?.meta.insert(key, value).map(drop)
            }
            Entry::Fleet(entry) => return self.fleet()?.apply(entry),
        };
        done.map_err(StoreError::backend)
    }
}

/// Creates every table the store uses (a new file has none, an older one not all) and
/// returns the epoch the last checkpoint recorded (0 for a new store).
pub(super) fn create_all(db: &Database) -> StoreResult<u64> {
    let txn = db.begin_write().map_err(StoreError::backend)?;
    let epoch = {
        txn.open_table(TASKS).map_err(StoreError::backend)?;
        txn.open_table(EVENTS).map_err(StoreError::backend)?;
        txn.open_table(PUSH).map_err(StoreError::backend)?;
        txn.open_table(DEAD).map_err(StoreError::backend)?;
        txn.open_table(FINISHED).map_err(StoreError::backend)?;
        txn.open_table(UNFINISHED).map_err(StoreError::backend)?;
        // Reads open tables without creating them: a file from before the registry was
        // stored here gets its (empty) tables now, so reading it finds them.
        txn.open_table(AGENTS).map_err(StoreError::backend)?;
        txn.open_table(REGISTRY_META).map_err(StoreError::backend)?;
        FleetTables::open(&txn)?;
        let meta = txn.open_table(META).map_err(StoreError::backend)?;
        let epoch = meta.get(JOURNAL_EPOCH).map_err(StoreError::backend)?;
        epoch.map(|e| e.value()).unwrap_or(0)
    };
    txn.commit().map_err(StoreError::backend)?;
    Ok(epoch)
}

/// Indexes every task in [`FINISHED`] or [`UNFINISHED`], once: a store written before
/// those existed has nothing there. Returns how many it indexed (`None`: it had been
/// done).
pub(super) fn index_tasks(db: &Database) -> StoreResult<Option<usize>> {
    let txn = db.begin_write().map_err(StoreError::backend)?;
    let indexed = {
        let mut meta = txn.open_table(META).map_err(StoreError::backend)?;
        if meta
            .get(TASKS_INDEXED)
            .map_err(StoreError::backend)?
            .is_some()
        {
            None
        } else {
            let tasks = txn.open_table(TASKS).map_err(StoreError::backend)?;
            let mut finished = txn.open_table(FINISHED).map_err(StoreError::backend)?;
            let mut unfinished = txn.open_table(UNFINISHED).map_err(StoreError::backend)?;
            let mut indexed = 0;
            for row in tasks.iter().map_err(StoreError::backend)? {
                let (id, value) = row.map_err(StoreError::backend)?;
                let head = TaskHead::of_stored(value.value())
                    .map_err(|e| StoreError::Backend(format!("corrupt task record: {e}")))?;
                match head.finished_at {
                    Some(at) => finished.insert((at, id.value()), ()),
                    None => unfinished.insert(id.value(), ()),
                }
                .map_err(StoreError::backend)?;
                indexed += 1;
            }
            meta.insert(TASKS_INDEXED, 1).map_err(StoreError::backend)?;
            Some(indexed)
        }
    };
    match indexed {
        Some(_) => txn.commit().map_err(StoreError::backend)?,
        None => txn.abort().map_err(StoreError::backend)?,
    }
    Ok(indexed)
}

/// Makes the file look like one written before [`FINISHED`] and [`UNFINISHED`] existed.
#[cfg(test)]
pub(super) fn forget_task_indexes(db: &Database) {
    let txn = db.begin_write().unwrap();
    txn.delete_table(FINISHED).unwrap();
    txn.delete_table(UNFINISHED).unwrap();
    txn.open_table(META).unwrap().remove(TASKS_INDEXED).unwrap();
    txn.commit().unwrap();
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

/// Applies journaled payloads inside `txn`, as if in order.
///
/// When they only put tasks and events (task commits, the deferred batches), they go in
/// key order instead, which leaves the same file: a key put twice keeps its last value
/// (the sort is stable), and no put depends on another. Task ids grow with time, but
/// tasks commit in whatever order their agents finish: in key order, a batch's tasks
/// land at the end of each B-tree, where redb appends to its last leaf, instead of just
/// before it, where it splits a leaf in two half-empty ones.
fn apply_all(txn: &WriteTransaction, payloads: &[Vec<u8>]) -> StoreResult<()> {
    let mut tables = Tables::open(txn)?;
    let mut all = Vec::new();
    for payload in payloads {
        all.extend(entries(payload)?);
    }
    let puts_only = all.iter().all(|e| {
        matches!(
            e,
            Entry::PutTask { .. }
                | Entry::PutEvent { .. }
                | Entry::PutFinished { .. }
                | Entry::PutUnfinished { .. }
        )
    });
    if puts_only {
        all.sort_by(|a, b| put_key(a).cmp(&put_key(b)));
    }
    for entry in &all {
        tables.apply(entry)?;
    }
    Ok(())
}

/// Where a put goes: its table, then its key there.
fn put_key<'e>(entry: &'e Entry<'_>) -> (u8, &'e str, u64) {
    match *entry {
        Entry::PutTask { id, .. } => (0, id, 0),
        Entry::PutEvent { task_id, seq, .. } => (1, task_id, seq),
        Entry::PutFinished { at, id } => (2, id, at),
        Entry::PutUnfinished { id } => (3, id, 0),
        _ => (4, "", 0),
    }
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

#[cfg(test)]
mod tests {
    use redb::ReadableDatabase;

    use super::*;

    fn payload(entries: &[Entry<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        for entry in entries {
            out.extend(postcard::to_allocvec(entry).unwrap());
        }
        out
    }

    fn put(id: &str, value: &'static [u8]) -> Vec<u8> {
        payload(&[Entry::PutTask { id, value }])
    }

    fn remove(id: &str) -> Vec<u8> {
        payload(&[Entry::RemoveTask { id }])
    }

    /// The tasks table after `payloads` are applied to a new file.
    fn tasks_after(payloads: &[Vec<u8>]) -> Vec<(String, Vec<u8>)> {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("t.redb")).unwrap();
        create_all(&db).unwrap();
        apply_payloads(&db, payloads).unwrap();
        let txn = db.begin_read().unwrap();
        let table = txn.open_table(TASKS).unwrap();
        let rows = table.iter().unwrap().map(|row| {
            let (k, v) = row.unwrap();
            (k.value().to_owned(), v.value().to_vec())
        });
        rows.collect()
    }

    #[test]
    fn puts_in_key_order_leave_what_puts_in_order_leave() {
        let task_and_event = [
            Entry::PutTask {
                id: "b",
                value: b"b1",
            },
            Entry::PutEvent {
                task_id: "b",
                seq: 1,
                value: b"e",
            },
        ];
        let payloads = [payload(&task_and_event), put("a", b"a1"), put("b", b"b2")];
        assert_eq!(
            tasks_after(&payloads),
            [("a".into(), b"a1".to_vec()), ("b".into(), b"b2".to_vec())]
        );
    }

    #[test]
    fn anything_but_puts_goes_in_order() {
        let payloads = [
            put("b", b"b1"),
            remove("b"),
            put("b", b"b2"),
            put("a", b"a1"),
            remove("a"),
        ];
        assert_eq!(tasks_after(&payloads), [("b".into(), b"b2".to_vec())]);
    }
}
