//! [`FleetStore`]: what the fleet layer (fleet health, the inbox, ceremonies) keeps, as
//! four small primitives every backend makes atomic, so replicas sharing a backend
//! agree: counter maps that expire (health buckets), scored sets (the tasks waiting for
//! a person), documents with compare-and-set (ceremony definitions and runs), and
//! claims (a ceremony's firing, taken by one replica).

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::traits::{StoreError, StoreResult};

/// The fleet layer's storage. Names (`key`, `set`, `collection`) are chosen by the
/// caller; the backends keep each primitive's names apart.
#[async_trait]
pub trait FleetStore: Send + Sync + std::fmt::Debug + 'static {
    /// Adds each `(field, delta)` to that counter of the map at `key` (an absent counter
    /// starts at 0), all in one atomic step, and has the map expire at `expires_at_ms`
    /// (milliseconds since the epoch; a later call may move it). An expired map reads as
    /// empty, and its space is reclaimed without anyone reading it.
    async fn add_counters(
        &self,
        key: &str,
        deltas: &[(String, i64)],
        expires_at_ms: u64,
    ) -> StoreResult<()>;

    /// The counter maps at `keys`, in that order: empty for one absent or expired.
    async fn read_counters(&self, keys: &[String]) -> StoreResult<Vec<BTreeMap<String, i64>>>;

    /// Puts `member` in `set` with `score`, replacing the score it had.
    async fn set_put(&self, set: &str, member: &str, score: i64) -> StoreResult<()>;

    /// Removes `member` from `set`; whether it was there.
    async fn set_remove(&self, set: &str, member: &str) -> StoreResult<bool>;

    /// Every member of `set` with its score, lowest score first (equal scores by member).
    async fn set_members(&self, set: &str) -> StoreResult<Vec<(String, i64)>>;

    /// Stores the document `id` of `collection`, replacing any.
    async fn doc_put(&self, collection: &str, id: &str, value: Vec<u8>) -> StoreResult<()>;

    /// Compare-and-set: if the stored document is `expected` (`None`: absent), stores
    /// `new` (`None`: removes it) and returns `true`; otherwise changes nothing and
    /// returns `false`. Atomic across replicas.
    async fn doc_swap(
        &self,
        collection: &str,
        id: &str,
        expected: Option<&[u8]>,
        new: Option<Vec<u8>>,
    ) -> StoreResult<bool>;

    async fn doc_get(&self, collection: &str, id: &str) -> StoreResult<Option<Vec<u8>>>;

    /// Every document of `collection` as (id, value), sorted by id.
    async fn doc_list(&self, collection: &str) -> StoreResult<Vec<(String, Vec<u8>)>>;

    /// Removes the document; whether it was there.
    async fn doc_remove(&self, collection: &str, id: &str) -> StoreResult<bool>;

    /// Claims `key` for `holder` until `expires_at_ms` if no unexpired claim of it
    /// exists; whether this call got it. Of concurrent claims of one key, from any
    /// replicas sharing the backend, exactly one wins.
    async fn claim(&self, key: &str, holder: &str, expires_at_ms: u64) -> StoreResult<bool>;
}

/// Milliseconds since the epoch, as `expires_at_ms` counts them. A clock before the
/// epoch reads 0: nothing has expired yet, rather than an error on every call.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `counters` with each of `deltas` added, or why not: a counter would overflow (then
/// the caller changes nothing, as the whole add is one step).
pub(crate) fn add_deltas(
    mut counters: BTreeMap<String, i64>,
    deltas: &[(String, i64)],
) -> StoreResult<BTreeMap<String, i64>> {
    for (field, delta) in deltas {
        let counter = counters.entry(field.clone()).or_default();
        *counter = counter.checked_add(*delta).ok_or_else(|| {
            StoreError::Backend(format!("counter {field:?} would overflow an i64"))
        })?;
    }
    Ok(counters)
}
