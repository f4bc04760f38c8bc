//! The embedded durable backend: one redb file with a redo journal in front of it
//! (`journal`), group commit (`writer`); running tasks, their latest events and push
//! configs answered from memory (`Hot`).
//!
//! redb allows one writer at a time, so all writes go to one writer thread that takes
//! every request waiting in its queue, applies them in one transaction, appends them to
//! the journal as one frame and fsyncs that once: a burst of transitions costs one small
//! sequential write and one fsync, not one each, and not redb's own page writes. Each
//! request's compare-and-set is checked inside that transaction, so batching never
//! weakens atomicity. The redb commits are non-durable; a periodic checkpoint makes the
//! file durable on its own and empties the journal (`tables`), on a thread of its own
//! while the writer goes on journaling (`checkpoints`). Reads run on the
//! blocking pool with their own MVCC snapshot and never wait for the writer.
//!
//! # Layout
//! - this file: the tables, the [`RedbStore`] handle, and how it asks the writer thread
//!   and reads the file.
//! - `api`: what the store answers: its own methods and the storage traits, from the
//!   cache when it can, else from the file.
//! - `open`: opening the store: the file, the replay of its journal, the cache's first
//!   contents, the threads.
//! - `hot`: the cache of running tasks, their latest events and push configs.
//! - `writer`: the writer thread's loop and what its queue carries; `gather` takes a
//!   batch from the queue, `batch` applies one (its transaction, journal frame and
//!   replies), `ops` each request in it; `dropper` frees what the cache forgets.
//! - `checkpoints`: deferred batches and the checkpoint thread.
//! - `journal`: the redo journal: its entries, frames and two files.
//! - `tables`: journal entries applied to the tables, checkpoints, the replay on open.
//! - `runs`: how the events table holds a task's events.
//! - `registry`: the agent registry's records ([`RegistryStore`](crate::RegistryStore)).
//! - `fleet`: the fleet layer's counters, sets, documents and claims
//!   ([`FleetStore`](crate::FleetStore)): what it answers and asks the writer;
//!   `fleet_writes` what the writer does with it, and how expired entries are reclaimed.

mod api;
mod batch;
mod checkpoints;
mod dropper;
mod fleet;
mod fleet_writes;
mod gather;
mod hot;
mod journal;
mod open;
mod ops;
mod registry;
mod runs;
mod tables;
mod writer;

use std::sync::Arc;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::{mpsc, oneshot};

use crate::record::PushConfigRecord;
use crate::traits::{StoreError, StoreResult};

const TASKS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("tasks");
/// A task's events by (task, first sequence number): one value per commit ([`runs`]).
const EVENTS: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("events");
const PUSH: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("push_configs");
const DEAD: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("dead_letters");
/// Finished tasks by the time they finished (milliseconds), for the TTL eviction.
const FINISHED: TableDefinition<'_, (u64, &str), ()> = TableDefinition::new("finished");
/// Tasks not finished yet, for recovery and the deadlines at startup.
const UNFINISHED: TableDefinition<'_, &str, ()> = TableDefinition::new("unfinished");
/// The agent registry's agents by name ([`crate::traits::RegistryStore`]).
const AGENTS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("registry_agents");
/// The agent registry's store-wide values, by [`registry`]'s keys (the signing key).
const REGISTRY_META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("registry_meta");
/// The fleet layer's counter maps by key, each with its expiry ([`fleet`]'s encoding).
const FLEET_COUNTERS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("fleet_counters");
/// The fleet layer's scored sets: the score of each (set, member).
const FLEET_SETS: TableDefinition<'_, (&str, &str), i64> = TableDefinition::new("fleet_sets");
/// The fleet layer's documents by (collection, id).
const FLEET_DOCS: TableDefinition<'_, (&str, &str), &[u8]> = TableDefinition::new("fleet_docs");
/// The fleet layer's claims by key: (expires at, holder).
const FLEET_CLAIMS: TableDefinition<'_, &str, (u64, &str)> = TableDefinition::new("fleet_claims");
/// Every counter map and claim by (expires at, kind, key), for reclaiming the expired
/// ones ([`fleet_writes`]).
const FLEET_EXPIRY: TableDefinition<'_, (u64, u8, &str), ()> = TableDefinition::new("fleet_expiry");

use hot::SharedHot;
use writer::{Queued, WriteOp};

#[derive(Debug, Clone)]
pub struct RedbStore {
    db: Arc<Database>,
    writer: mpsc::Sender<Queued>,
    hot: SharedHot,
    /// Why the store takes no more writes until it is reopened, if it does not.
    fault: writer::Fault,
    lag: tokio::sync::watch::Receiver<Lag>,
    /// The names of agents put or removed, sent once the write is acknowledged
    /// ([`RegistryStore::watch_agents`](crate::RegistryStore::watch_agents)).
    agents_changed: tokio::sync::broadcast::Sender<String>,
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

impl RedbStore {
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

#[cfg(test)]
mod fleet_tests;
#[cfg(test)]
mod registry_tests;
#[cfg(test)]
mod tests;
