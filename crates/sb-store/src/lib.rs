//! Storage for Switchboard: the task store (records, per-task event logs, push configs)
//! and the live event bus, as traits with interchangeable backends.
//!
//! # Layout
//! - [`record`]: what is stored: task records, sequenced events, push configs, queries.
//! - [`traits`]: the seams the services use: [`TaskStore`], [`PushConfigStore`], [`EventBus`],
//!   [`RegistryStore`] (the agent registry's records).
//! - [`fleet`]: [`FleetStore`], the fleet layer's counters, sets, documents and claims.
//! - [`memory`]: an in-memory backend for tests.
//! - [`redb_store`]: the embedded durable backend (one file, group commit).
//! - [`queue`]: the durable per-agent turn queue remote workers take from;
//!   [`redis_queue`] keeps it in Redis Streams.
//! - [`bus`]: the in-process event bus (one broadcast channel per watched task).
//! - [`mod@redis`]: the shared backend for several replicas: [`RedisStore`] (hashes, streams,
//!   one Lua script per commit) and [`RedisBus`] (pub/sub per task, consumer groups for
//!   all tasks); `redis::testing` starts a real redis-server for tests.
//! - [`watchers`]: one-shot watchers by key (a turn's end, a task's end), for both buses.
//! - [`backoff`]: the one backoff: jittered pauses between attempts at something that
//!   may work later.
//! - [`suite`]: the conformance tests every backend runs.
//!
//! The backends are features, both on by default: `redb` ([`redb_store`]) and `redis`
//! ([`mod@redis`], [`redis_queue`]). A crate that needs only the traits (an agent, a
//! program embedding Switchboard, a worker) depends with `default-features = false`
//! and compiles neither redb nor redis and its TLS stack.
//!
//! Every write is a compare-and-set on the task's sequence number, so the state machine
//! above it (sb-tasks) can check and write in one step whatever the backend.

pub mod backoff;
pub mod bus;
pub mod fleet;
pub mod memory;
pub mod queue;
pub mod record;
#[cfg(feature = "redb")]
pub mod redb_store;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "redis")]
pub mod redis_queue;
#[doc(hidden)]
pub mod suite;
pub mod traits;
pub mod watchers;

/// Maps and sets keyed by task ids (and, for open-task counts, authenticated
/// principals), on foldhash: std's SipHash costs far more per lookup on these short
/// keys, and every task does several (bench/profile.md has the figures). foldhash
/// is seeded per process, so colliding keys cannot be prepared in advance (and new
/// task ids are ours, not the caller's).
pub type IdMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub type IdSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// Keeps only the entries of `map` that `keep` holds live, once the map has doubled
/// since the last sweep (`sweep_at` remembers when that is): for maps whose entries go
/// stale when their watchers leave, so an insertion costs O(1) amortised, not a walk
/// over every live entry.
pub(crate) fn sweep_when_doubled<K, V>(
    map: &mut IdMap<K, V>,
    sweep_at: &mut usize,
    keep: impl FnMut(&K, &mut V) -> bool,
) {
    if map.len() < *sweep_at {
        return;
    }
    map.retain(keep);
    *sweep_at = (map.len() * 2).max(64);
}

pub use bus::LocalBus;
pub use fleet::FleetStore;
pub use memory::MemoryStore;
pub use queue::{Leased, WorkItem, WorkQueue};
pub use record::*;
#[cfg(feature = "redb")]
pub use redb_store::RedbStore;
#[cfg(feature = "redis")]
pub use redis::{RedisBus, RedisStore};
#[cfg(feature = "redis")]
pub use redis_queue::RedisWorkQueue;
pub use traits::*;
