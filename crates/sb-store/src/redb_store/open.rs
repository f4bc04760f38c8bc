//! Opening the store: the file and its tables, the replay of what its journal holds
//! beyond the last checkpoint (recovery), the cache's first contents, and the threads
//! that write, checkpoint and tick.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use redb::{ReadableDatabase, ReadableTable};
use tokio::sync::mpsc;

use super::hot::SharedHot;
use super::{Lag, PUSH, RedbStore, checkpoints, dropper, journal, tables, writer};
use crate::traits::{AGENT_CHANGES_CAPACITY, StoreError, StoreResult};

/// redb's page cache. Its default (1 GiB) let a busy server's memory grow with every task
/// until it reached a gigabyte, and faulting in the fresh pages cost CPU of its own.
/// Running tasks are answered from [`Hot`](super::hot::Hot) anyway; the page cache mostly
/// holds the B-trees' upper levels, which this keeps many times over.
const PAGE_CACHE_BYTES: usize = 64 * 1024 * 1024;

impl RedbStore {
    /// Opens (or creates) the store file and starts its writer thread.
    pub fn open(path: &Path) -> StoreResult<RedbStore> {
        RedbStore::open_checkpointing(path, writer::CHECKPOINT_EVERY)
    }

    pub(super) fn open_checkpointing(
        path: &Path,
        checkpoint_every: Duration,
    ) -> StoreResult<RedbStore> {
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
        let dropper = dropper::Dropper::on_current_runtime();
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
            agents_changed: tokio::sync::broadcast::channel(AGENT_CHANGES_CAPACITY).0,
        })
    }
}
