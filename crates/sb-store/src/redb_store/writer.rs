//! The writer thread: every write request waiting in the queue goes into one transaction
//! and one fsync (group commit). Under concurrent load it waits a moment for more
//! requests before committing (see [`gather`]); the records it commits also keep the
//! [`Hot`] cache current, since this thread is the only one that changes the file.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use redb::{Database, ReadableTable};
use tokio::sync::{mpsc, oneshot};

use super::{DEAD, EVENTS, PUSH, SharedHot, TASKS, configs_of, decode, encode};
use crate::record::*;
use crate::traits::*;

/// Most write requests folded into one transaction.
const MAX_BATCH: usize = 512;

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

/// Longest a request waits for others to share its commit.
const GATHER_WINDOW: Duration = Duration::from_micros(1000);
/// A pause this long with nothing new ends the gathering early.
const GATHER_QUIET: Duration = Duration::from_micros(500);
const GATHER_POLL: Duration = Duration::from_micros(100);

pub(super) fn write_loop(db: &Database, hot: &SharedHot, mut queue: mpsc::Receiver<WriteOp>) {
    let mut concurrent = false;
    while let Some(first) = queue.blocking_recv() {
        let batch = gather(first, &mut queue, concurrent);
        // One request alone commits at once; several mean callers are running side by
        // side, and the next ones are likely a fraction of an fsync away.
        concurrent = batch.len() > 1;
        apply_batch(db, hot, batch);
    }
}

/// Takes what is queued; when writers are concurrent, keeps taking until the queue has
/// been quiet for [`GATHER_QUIET`] or [`GATHER_WINDOW`] has passed. An fsync costs far
/// more CPU than the wait, so fewer, larger commits raise throughput and cut CPU.
fn gather(first: WriteOp, queue: &mut mpsc::Receiver<WriteOp>, concurrent: bool) -> Vec<WriteOp> {
    let mut batch = vec![first];
    let started = Instant::now();
    let mut last_arrival = started;
    loop {
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(op) => {
                    batch.push(op);
                    last_arrival = Instant::now();
                }
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

fn apply_batch(db: &Database, hot: &SharedHot, batch: Vec<WriteOp>) {
    let mut replies = Vec::with_capacity(batch.len());
    // What this batch changes in the cache, applied only once it is durable.
    let mut changes = Changes::default();
    let mut touched_push = std::collections::HashSet::new();
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
                        let result = apply_commit(&mut tasks, &mut events, hot, &changes, &commit);
                        if result.is_ok() {
                            let TaskCommit { record, events, .. } = *commit;
                            changes.records.insert(record.task.id.clone(), record);
                            changes.events.extend(events);
                        }
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
                        if result.is_ok() {
                            changes.with_push.push(record.config.task_id.clone());
                        }
                        touched_push.insert(record.config.task_id.clone());
                        replies.push(Reply::Unit(tx, result));
                    }
                    WriteOp::DeletePushAll(task_id, tx) => {
                        let result = push
                            .retain_in(
                                (task_id.as_str(), "")..=(task_id.as_str(), "\u{10ffff}"),
                                |(t, _), _| t != task_id,
                            )
                            .map_err(StoreError::backend);
                        if result.is_ok() {
                            changes.without_push.push(task_id.clone());
                        }
                        touched_push.insert(task_id);
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
                        touched_push.insert(task_id);
                    }
                    WriteOp::DeleteTask(task_id, tx) => {
                        let result = events
                            .retain_in(
                                (task_id.as_str(), 0)..=(task_id.as_str(), u64::MAX),
                                |_, _| false,
                            )
                            .and_then(|()| tasks.remove(task_id.as_str()).map(|old| old.is_some()))
                            .map_err(StoreError::backend);
                        if result.is_ok() {
                            changes.records.remove(&task_id);
                            changes.deleted.push(task_id);
                        }
                        replies.push(Reply::Bool(tx, result));
                    }
                    WriteOp::DeletePush(task_id, config_id, tx) => {
                        let result = push
                            .remove((task_id.as_str(), config_id.as_str()))
                            .map(|old| old.is_some())
                            .map_err(StoreError::backend);
                        replies.push(Reply::Bool(tx, result));
                        touched_push.insert(task_id);
                    }
                }
            }
            // The cache takes each changed task's configs as the file now has them.
            for task_id in touched_push {
                let configs = configs_of(&push, &task_id)?;
                changes.push.insert(task_id, configs);
            }
        }
        txn.commit().map_err(StoreError::backend)
    })();
    if outcome.is_ok() {
        // Before any reply: a caller that hears "committed" reads what it wrote.
        hot.write().apply(changes);
    }
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

/// What a batch changed, for the [`Hot`] cache once the batch is durable.
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// The latest record of each task committed in the batch.
    pub(super) records: HashMap<String, TaskRecord>,
    /// Every event committed in the batch, in commit order.
    pub(super) events: Vec<StoredEvent>,
    /// The configs, after the batch, of each task whose configs it changed.
    pub(super) push: HashMap<String, Vec<PushConfigRecord>>,
    pub(super) deleted: Vec<String>,
    pub(super) with_push: Vec<String>,
    pub(super) without_push: Vec<String>,
}

fn apply_commit(
    tasks: &mut redb::Table<'_, &str, &[u8]>,
    events: &mut redb::Table<'_, (&str, u64), &[u8]>,
    hot: &SharedHot,
    changes: &Changes,
    commit: &TaskCommit,
) -> StoreResult<()> {
    let task_id = commit.record.task.id.as_str();
    // The sequence now stored: from this batch, else the cache, else the file.
    let known = changes
        .records
        .get(task_id)
        .map(|r| r.seq)
        .or_else(|| hot.read().seq_of(task_id));
    let current_seq = match known {
        Some(seq) => seq,
        None => match tasks.get(task_id).map_err(StoreError::backend)? {
            Some(bytes) => decode::<TaskRecord>(bytes.value())?.seq,
            None => 0,
        },
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
