//! Each request of a batch ([`apply_op`]): what it checks (a commit's compare-and-set,
//! whether what it removes exists) and the journal entries it writes, through the
//! batch's [`BatchWriter`].

use std::collections::HashSet;

use redb::ReadableTable;

use super::batch::{BatchWriter, Changes, Reply};
use super::hot::SharedHot;
use super::journal::Entry;
use super::tables::PushTable;
use super::writer::WriteOp;
use super::{decode, encode, fleet_writes, registry};
use crate::record::{DeadLetter, PushConfigRecord, TaskCommit, TaskHead};
use crate::traits::{StoreError, StoreResult};

/// Applies one request; `Err` only for a storage failure, which fails the batch.
pub(super) fn apply_op(
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
        WriteOp::PutAgent(name, value, tx) => {
            writer.write(Entry::PutAgent {
                name: &name,
                value: &value,
            })?;
            Reply::Unit(tx, Ok(()))
        }
        WriteOp::RemoveAgent(name, tx) => {
            let existed = registry::has_agent(writer.tables()?.registry()?, &name)?;
            if existed {
                writer.write(Entry::RemoveAgent { name: &name })?;
            }
            Reply::Bool(tx, Ok(existed))
        }
        WriteOp::SigningKey(generated, tx) => {
            // Read and written in this one transaction, by the one writer: atomic.
            let key = match registry::signing_key(writer.tables()?.registry()?)? {
                Some(stored) => stored,
                None => {
                    writer.write(Entry::PutRegistryMeta {
                        key: registry::SIGNING_KEY,
                        value: &generated,
                    })?;
                    generated
                }
            };
            Reply::Bytes(tx, Ok(key))
        }
        WriteOp::Fleet(op) => fleet_writes::apply(writer, op)?,
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
