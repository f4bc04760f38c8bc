//! Test doubles shared by this crate's tests.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use sb_store::{
    MemoryStore, StoreError, StoreResult, StoredEvent, TaskCommit, TaskPage, TaskQuery, TaskRecord,
    TaskStore,
};

/// A memory store that counts commits, and fails them on request.
#[derive(Debug, Default)]
pub(crate) struct CountingStore {
    inner: MemoryStore,
    pub(crate) commits: AtomicUsize,
    pub(crate) gets: AtomicUsize,
    pub(crate) failing: AtomicBool,
    /// The record of the last commit, as handed to the store.
    pub(crate) last_committed: parking_lot::Mutex<Option<std::sync::Arc<TaskRecord>>>,
}

#[async_trait]
impl TaskStore for CountingStore {
    async fn get(&self, task_id: &str) -> StoreResult<Option<TaskRecord>> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        self.inner.get(task_id).await
    }
    async fn commit(&self, commit: TaskCommit) -> StoreResult<()> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(StoreError::backend("the disk is on fire"));
        }
        self.commits.fetch_add(1, Ordering::SeqCst);
        *self.last_committed.lock() = Some(commit.record.clone());
        self.inner.commit(commit).await
    }
    async fn events_after(&self, id: &str, after: u64, n: usize) -> StoreResult<Vec<StoredEvent>> {
        self.inner.events_after(id, after, n).await
    }
    async fn list(&self, query: &TaskQuery) -> StoreResult<TaskPage> {
        self.inner.list(query).await
    }
    async fn list_all(&self) -> StoreResult<Vec<TaskRecord>> {
        self.inner.list_all().await
    }
    async fn list_unfinished(&self) -> StoreResult<Vec<TaskRecord>> {
        self.inner.list_unfinished().await
    }

    async fn finished_before(&self, cutoff_millis: u64, limit: usize) -> StoreResult<Vec<String>> {
        self.inner.finished_before(cutoff_millis, limit).await
    }
    async fn delete(&self, task_id: &str) -> StoreResult<bool> {
        self.inner.delete(task_id).await
    }
}
