//! The Redis backend: the task store ([`RedisStore`]) and the cross-process event bus
//! ([`RedisBus`]) for deployments with several replicas.
//!
//! # Key layout (every key starts with the prefix `P` given to `connect`)
//! - `P task:{id}`: HASH `seq` (decimal), `rec` (TaskRecord JSON), `idx` (the name of the
//!   principal index below, so a delete finds it without decoding the record).
//! - `P events:{id}`: STREAM, the task's log; entry id `{seq}-0`, field `e` = StoredEvent JSON.
//! - `P events`: STREAM of a notice of every task's events (`t` task id, `s` seq, `st` the
//!   state the event left the task in, empty for none; older entries: `e` the JSON), capped at
//!   about [`GLOBAL_STREAM_CAP`] entries; read through consumer groups by `subscribe_all`.
//! - channel `P ev:{id}`: each committed event's JSON, published by the commit script.
//! - channel `P turns`: a turn's key (task id and turn id) when that agent turn is over.
//! - channel `P ended`: a task's id when a commit brought it to a terminal state.
//! - `P idx:{agent}\n{owner}`: ZSET of task ids by status time (millis), for `list`.
//! - `P tasks`: ZSET of every task id by creation time (millis), for `list_all`.
//! - `P finished`: ZSET of finished task ids by the time they finished (millis), for the
//!   TTL eviction; `P unfinished`: SET of the other task ids, for recovery and deadlines
//!   at startup. `P tasks-indexed` is set once both index every task (a store written
//!   before they existed is indexed by the first `finished_before` or `list_unfinished`).
//! - `P push:{task}`: HASH config id → PushConfigRecord JSON, written only by `put`.
//! - `P push-cursor:{task}`: HASH config id → delivery cursor (see `push.rs` for why apart).
//! - `P push-tasks`: SET of task ids that have configs.
//! - `P dead`: HASH id → DeadLetter JSON; `P dead-order`: ZSET id by failed-at millis.
//! - `P registry:agents`: HASH agent name → the registry's stored form of the agent (its
//!   JSON, opaque here).
//! - `P registry:signing-key`: STRING, the key the registry signs cards with; set once,
//!   by the first replica to start (SET NX in a script that returns what is stored).
//! - channel `P registry:changes`: an agent's name, published with each put or removal
//!   (in the same MULTI), so every replica reloads it.
//! - `P fleet:c:{key}`: HASH field → counter, a fleet counter map, expiring with PEXPIREAT
//!   (HINCRBYs and the PEXPIREAT in one MULTI).
//! - `P fleet:s:{set}`: ZSET member → score, a fleet scored set.
//! - `P fleet:d:{collection}`: HASH id → document, a fleet collection; compare-and-set by
//!   one script (`lua/doc_swap.lua`).
//! - `P fleet:k:{key}`: STRING, the holder of a fleet claim (SET NX PXAT: it expires).
//!
//! Every multi-key write is one Lua script or one MULTI, so a crash or a racing replica
//! never leaves half of a write behind. The layout needs one Redis (or a primary with
//! replicas/Sentinel), not Redis Cluster: a commit touches keys in several hash slots.

mod bus;
mod fleet;
#[cfg(test)]
mod fleet_tests;
mod group;
mod pubsub;
mod push;
mod registry;
#[cfg(test)]
mod registry_tests;
mod scripts;
mod store;
#[doc(hidden)]
pub mod testing;
#[cfg(test)]
mod tests;

use std::time::{Duration, Instant};

use ::redis::{Client, RedisError};

use crate::traits::StoreError;

pub use bus::RedisBus;
pub use store::RedisStore;

/// Rough cap of the global event stream. Consumer groups read it live, so it only has to
/// cover how far a group may fall behind (a replica restarting), not the history.
pub const GLOBAL_STREAM_CAP: usize = 1_000_000;

/// A command that takes longer than this fails rather than hanging a request.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `connect` waits for a server that is loading its data set (a large
/// append-only file takes a while).
const LOADING_WAIT: Duration = Duration::from_secs(60);

/// Key names under one prefix.
#[derive(Clone, Debug)]
struct Keys {
    prefix: String,
}

impl Keys {
    fn task(&self, id: &str) -> String {
        format!("{}task:{id}", self.prefix)
    }
    fn events(&self, id: &str) -> String {
        format!("{}events:{id}", self.prefix)
    }
    fn all_events(&self) -> String {
        format!("{}events", self.prefix)
    }
    fn channel(&self, id: &str) -> String {
        format!("{}ev:{id}", self.prefix)
    }
    fn turns_channel(&self) -> String {
        format!("{}turns", self.prefix)
    }
    fn ended_channel(&self) -> String {
        format!("{}ended", self.prefix)
    }
    fn index(&self, agent: &str, owner: &str) -> String {
        format!("{}idx:{agent}\n{owner}", self.prefix)
    }
    /// The principal's unfinished tasks (the in-flight limit counts them).
    fn open(&self, agent: &str, owner: &str) -> String {
        format!("{}open:{agent}\n{owner}", self.prefix)
    }
    fn tasks(&self) -> String {
        format!("{}tasks", self.prefix)
    }
    fn finished(&self) -> String {
        format!("{}finished", self.prefix)
    }
    fn unfinished(&self) -> String {
        format!("{}unfinished", self.prefix)
    }
    fn tasks_indexed(&self) -> String {
        format!("{}tasks-indexed", self.prefix)
    }
    fn push(&self, task_id: &str) -> String {
        format!("{}push:{task_id}", self.prefix)
    }
    fn push_cursor(&self, task_id: &str) -> String {
        format!("{}push-cursor:{task_id}", self.prefix)
    }
    fn push_tasks(&self) -> String {
        format!("{}push-tasks", self.prefix)
    }
    fn dead(&self) -> String {
        format!("{}dead", self.prefix)
    }
    fn dead_order(&self) -> String {
        format!("{}dead-order", self.prefix)
    }
    fn registry_agents(&self) -> String {
        format!("{}registry:agents", self.prefix)
    }
    fn registry_signing_key(&self) -> String {
        format!("{}registry:signing-key", self.prefix)
    }
    fn registry_changes(&self) -> String {
        format!("{}registry:changes", self.prefix)
    }
    /// The fleet layer's names, one letter per primitive after `fleet:`, so a name used
    /// by two primitives is two keys.
    fn fleet_counters(&self, key: &str) -> String {
        format!("{}fleet:c:{key}", self.prefix)
    }
    fn fleet_set(&self, set: &str) -> String {
        format!("{}fleet:s:{set}", self.prefix)
    }
    fn fleet_docs(&self, collection: &str) -> String {
        format!("{}fleet:d:{collection}", self.prefix)
    }
    fn fleet_claim(&self, key: &str) -> String {
        format!("{}fleet:k:{key}", self.prefix)
    }
}

/// A parsed URL and where it points, for messages (never with its credentials).
fn open_client(url: &str) -> Result<(Client, String), StoreError> {
    let client = Client::open(url)
        .map_err(|e| StoreError::Backend(format!("invalid Redis URL {}: {e}", redact_url(url))))?;
    let info = client.get_connection_info();
    let place = format!("{}/{}", info.addr(), info.redis_settings().db());
    Ok((client, place))
}

/// A connection and a PING, so startup reports a wrong URL, password or TLS setting at once
/// (the connection manager would retry each for seconds first). Waits while the server is
/// still loading its data set, as it does when restarted together with us.
async fn probe(client: &Client, place: &str) -> Result<(), StoreError> {
    let deadline = Instant::now() + LOADING_WAIT;
    loop {
        match ping(client).await {
            Err(e) if e.code() == Some("LOADING") && Instant::now() < deadline => {
                tracing::info!(place, "redis is loading its data set; waiting for it");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            outcome => return outcome.map_err(|e| backend_error(place, "connect", &e)),
        }
    }
}

async fn ping(client: &Client) -> Result<(), RedisError> {
    let config = ::redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(RESPONSE_TIMEOUT));
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    ::redis::cmd("PING").query_async::<()>(&mut conn).await
}

/// `url` with any password replaced by `***`, for logs and errors.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // Not a URL we can take apart: show nothing that might be a secret.
        return "(unparsable URL)".to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let Some((userinfo, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let user = match userinfo.split_once(':') {
        Some((user, _password)) => format!("{user}:***"),
        // `redis://secret@host` is a password alone.
        None => "***".to_owned(),
    };
    format!("{scheme}://{user}@{host}{tail}")
}

/// A Redis error as a store error that says where and what, so the operator knows whether
/// to look at the network, the server, or the data.
fn backend_error(place: &str, what: &str, err: &RedisError) -> StoreError {
    if err.is_connection_refusal()
        || err.is_connection_dropped()
        || err.is_timeout()
        || err.is_io_error()
    {
        StoreError::Backend(format!("redis at {place} unreachable ({what}): {err}"))
    } else {
        StoreError::Backend(format!("redis at {place} failed ({what}): {err}"))
    }
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StoreError::Backend(format!("corrupt {what} in redis: {e}")))
}

fn encode<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(StoreError::backend)
}
