//! The durable per-agent queue of turns that remote workers take from.
//!
//! A turn is leased to one consumer (a worker connection) when taken; the holder renews
//! the lease while the worker lives and finishes the entry when the turn is over. An
//! entry whose lease expired (its holder died with it) is reclaimed by another
//! replica, which re-queues or fails it by the agent's policy.

use std::time::Duration;

use async_trait::async_trait;
use sb_protocol::Message;
use serde::{Deserialize, Serialize};

use crate::traits::StoreResult;

/// One queued turn: the task, whose agent runs it, and the message it answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkItem {
    pub task_id: String,
    pub agent: String,
    pub owner: String,
    pub message: Message,
    /// Names this turn among the task's turns: the end of a turn is announced under
    /// [`WorkItem::turn_key`], so a late end of the previous turn is not taken for it.
    #[serde(default)]
    pub turn_id: String,
    /// How many times the turn was handed out before (after lost workers).
    #[serde(default)]
    pub redeliveries: u32,
    /// W3C trace context of the request that queued the turn ("" = none).
    #[serde(default)]
    pub traceparent: String,
}

impl WorkItem {
    /// The key its end is announced under on the bus.
    pub fn turn_key(&self) -> String {
        format!("{}/{}", self.task_id, self.turn_id)
    }
}

/// A taken turn, identified by its queue entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Leased {
    pub entry_id: String,
    pub item: WorkItem,
}

#[async_trait]
pub trait WorkQueue: Send + Sync + std::fmt::Debug + 'static {
    /// Queues a turn unless the agent already has `limit` turns queued or running;
    /// returns whether it was queued.
    async fn push(&self, item: &WorkItem, limit: usize) -> StoreResult<bool>;
    /// Takes the next turns of `agents` for `consumer`, at most `max` (at least one is
    /// asked for), waiting at most `wait` for the first. Every turn returned is leased to
    /// `consumer`; none is returned that the caller did not ask room for.
    async fn take(
        &self,
        agents: &[String],
        consumer: &str,
        max: usize,
        wait: Duration,
    ) -> StoreResult<Vec<Leased>>;
    /// Keeps `consumer`'s leases on these entries of `agent` alive.
    async fn renew(&self, agent: &str, consumer: &str, entry_ids: &[String]) -> StoreResult<()>;
    /// Whether the turn `entry_id` of `agent` is still leased to a worker.
    async fn is_leased(&self, agent: &str, entry_id: &str) -> StoreResult<bool>;
    /// Removes a finished turn.
    async fn finish(&self, agent: &str, entry_id: &str) -> StoreResult<()>;
    /// Takes over `agent`'s turns whose lease was not renewed for `min_idle` (their
    /// holder is gone); they are now leased to `consumer`.
    async fn reclaim(
        &self,
        agent: &str,
        consumer: &str,
        min_idle: Duration,
    ) -> StoreResult<Vec<Leased>>;
    /// Turns queued or running for `agent` (a scaling signal).
    async fn depth(&self, agent: &str) -> StoreResult<u64>;
}
