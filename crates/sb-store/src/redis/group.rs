//! `subscribe_all`: the global stream `P events`, read through one consumer group per
//! group name. Redis hands each entry to one consumer of a group, which is what splits the
//! work among replicas; every group gets every entry.
//!
//! A reader forwards an entry to its local broadcast channel, then acknowledges it. Entries
//! a consumer read but never acknowledged (its process died) are claimed by a live consumer
//! after [`ClaimTiming::min_idle`] and forwarded again: consumers may see an event twice,
//! never zero times.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ::redis::aio::{ConnectionManager, MultiplexedConnection};
use ::redis::streams::{StreamAutoClaimReply, StreamId, StreamInfoConsumersReply, StreamReadReply};
use ::redis::{AsyncConnectionConfig, Client, RedisError, RedisResult, Value};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::{CONNECT_TIMEOUT, Keys, RESPONSE_TIMEOUT, backend_error};
use crate::backoff::Backoff;
use crate::record::{EventNotice, StoredEvent};
use crate::traits::StoreResult;

/// How far the all-tasks channel may run ahead of its slowest receiver.
const ALL_CAPACITY: usize = 8192;
/// How long one XREADGROUP waits for entries; also bounds how late a reader notices
/// that its receivers are gone.
const BLOCK: Duration = Duration::from_secs(2);
const READ_BATCH: usize = 256;
const CLAIM_BATCH: usize = 256;
/// Claim rounds per interval, so a huge backlog is taken over gradually.
const MAX_CLAIM_ROUNDS: usize = 16;
/// Consumers idle this long with nothing pending are gone (restarted replicas); removing
/// them keeps `XINFO CONSUMERS` readable.
const FORGET_CONSUMER_AFTER: Duration = Duration::from_secs(3600);
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// When pending entries of other consumers are taken over.
#[derive(Clone, Copy, Debug)]
pub(super) struct ClaimTiming {
    pub(super) every: Duration,
    pub(super) min_idle: Duration,
}

impl Default for ClaimTiming {
    fn default() -> Self {
        ClaimTiming {
            every: Duration::from_secs(10),
            min_idle: Duration::from_secs(30),
        }
    }
}

/// The consumer-group side of a bus: one reader task per group name.
pub(super) struct Groups {
    client: Client,
    keys: Keys,
    place: String,
    consumer: String,
    /// For XGROUP CREATE; readers use their own connection, as a blocking read would
    /// hold up every command queued behind it.
    commands: ConnectionManager,
    shutdown: CancellationToken,
    timing: ClaimTiming,
    readers: tokio::sync::Mutex<HashMap<String, broadcast::Sender<EventNotice>>>,
}

impl Groups {
    pub(super) fn new(
        client: Client,
        keys: Keys,
        place: String,
        commands: ConnectionManager,
        shutdown: CancellationToken,
        timing: ClaimTiming,
    ) -> Arc<Groups> {
        Arc::new(Groups {
            client,
            keys,
            place,
            consumer: consumer_name(),
            commands,
            shutdown,
            timing,
            readers: tokio::sync::Mutex::default(),
        })
    }

    pub(super) fn consumer(&self) -> &str {
        &self.consumer
    }

    pub(super) async fn subscribe(
        self: &Arc<Self>,
        group: &str,
    ) -> StoreResult<broadcast::Receiver<EventNotice>> {
        let mut readers = self.readers.lock().await;
        if let Some(sender) = readers.get(group) {
            return Ok(sender.subscribe());
        }
        // Created before returning, at the stream's end: every event committed after this
        // returns reaches the group.
        create_group(&mut self.commands.clone(), &self.keys, group)
            .await
            .map_err(|e| backend_error(&self.place, "create a consumer group", &e))?;
        let (sender, rx) = broadcast::channel(ALL_CAPACITY);
        readers.insert(group.to_owned(), sender.clone());
        tokio::spawn(self.clone().read_group(group.to_owned(), sender));
        Ok(rx)
    }

    async fn read_group(self: Arc<Self>, group: String, sender: broadcast::Sender<EventNotice>) {
        let mut conn: Option<MultiplexedConnection> = None;
        let mut backoff = Backoff::doubling(MIN_BACKOFF, MAX_BACKOFF);
        let mut next_claim = Instant::now();
        while !self.shutdown.is_cancelled() {
            if sender.receiver_count() == 0 && self.retire(&group, &sender).await {
                return;
            }
            let c = match conn.as_mut() {
                Some(c) => c,
                None => match self.dedicated_connection().await {
                    Ok(c) => conn.insert(c),
                    Err(e) => {
                        let error = backend_error(&self.place, "connect", &e);
                        tracing::warn!(group, %error, "event group reader cannot connect");
                        self.pause(&mut backoff).await;
                        continue;
                    }
                },
            };
            let step = async {
                if Instant::now() >= next_claim {
                    next_claim = Instant::now() + self.timing.every;
                    self.claim_abandoned(c, &group, &sender).await?;
                }
                self.read_new(c, &group, &sender).await
            };
            let outcome = tokio::select! {
                () = self.shutdown.cancelled() => break,
                outcome = step => outcome,
            };
            match outcome {
                Ok(()) => backoff.reset(),
                // The group (or the whole stream) was deleted, e.g. Redis restarted without
                // persistence: start it again rather than stalling.
                Err(e) if e.code() == Some("NOGROUP") => {
                    if let Err(e) = create_group(c, &self.keys, &group).await {
                        let error = backend_error(&self.place, "create a consumer group", &e);
                        tracing::warn!(group, %error, "cannot recreate the event group");
                        self.pause(&mut backoff).await;
                    }
                }
                Err(e) => {
                    let error = backend_error(&self.place, "read events", &e);
                    tracing::warn!(group, %error, "event group reader failed; reconnecting");
                    conn = None;
                    self.pause(&mut backoff).await;
                }
            }
        }
        let mut readers = self.readers.lock().await;
        if readers.get(&group).is_some_and(|s| s.same_channel(&sender)) {
            readers.remove(&group);
        }
    }

    /// Stops reading for `group` if nobody listens (checked under the lock `subscribe`
    /// takes, so no receiver is handed out for a reader that is leaving).
    async fn retire(&self, group: &str, sender: &broadcast::Sender<EventNotice>) -> bool {
        let mut readers = self.readers.lock().await;
        if sender.receiver_count() > 0 {
            return false;
        }
        if readers.get(group).is_some_and(|s| s.same_channel(sender)) {
            readers.remove(group);
        }
        true
    }

    async fn pause(&self, backoff: &mut Backoff) {
        tokio::select! {
            () = self.shutdown.cancelled() => {}
            () = tokio::time::sleep(backoff.next_delay().unwrap_or(MAX_BACKOFF)) => {}
        }
    }

    async fn dedicated_connection(&self) -> RedisResult<MultiplexedConnection> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(BLOCK + RESPONSE_TIMEOUT));
        self.client
            .get_multiplexed_async_connection_with_config(&config)
            .await
    }

    async fn read_new(
        &self,
        conn: &mut MultiplexedConnection,
        group: &str,
        sender: &broadcast::Sender<EventNotice>,
    ) -> RedisResult<()> {
        let reply: Option<StreamReadReply> = ::redis::cmd("XREADGROUP")
            .arg("GROUP")
            .arg(group)
            .arg(&self.consumer)
            .arg("COUNT")
            .arg(READ_BATCH)
            .arg("BLOCK")
            .arg(BLOCK.as_millis() as u64)
            .arg("STREAMS")
            .arg(self.keys.all_events())
            .arg(">")
            .query_async(conn)
            .await?;
        let entries = reply
            .into_iter()
            .flat_map(|r| r.keys)
            .flat_map(|k| k.ids)
            .collect();
        self.forward(conn, group, sender, entries).await
    }

    /// Takes over entries other consumers left unacknowledged for too long.
    async fn claim_abandoned(
        &self,
        conn: &mut MultiplexedConnection,
        group: &str,
        sender: &broadcast::Sender<EventNotice>,
    ) -> RedisResult<()> {
        let mut start = "0-0".to_owned();
        for _ in 0..MAX_CLAIM_ROUNDS {
            let reply: StreamAutoClaimReply = ::redis::cmd("XAUTOCLAIM")
                .arg(self.keys.all_events())
                .arg(group)
                .arg(&self.consumer)
                .arg(self.timing.min_idle.as_millis() as u64)
                .arg(&start)
                .arg("COUNT")
                .arg(CLAIM_BATCH)
                .query_async(conn)
                .await?;
            if !reply.claimed.is_empty() {
                tracing::info!(
                    group,
                    count = reply.claimed.len(),
                    "took over events a stopped replica left unacknowledged"
                );
            }
            self.forward(conn, group, sender, reply.claimed).await?;
            if reply.next_stream_id == "0-0" {
                break;
            }
            start = reply.next_stream_id;
        }
        self.forget_departed(conn, group).await
    }

    async fn forget_departed(
        &self,
        conn: &mut MultiplexedConnection,
        group: &str,
    ) -> RedisResult<()> {
        let info: StreamInfoConsumersReply = ::redis::cmd("XINFO")
            .arg("CONSUMERS")
            .arg(self.keys.all_events())
            .arg(group)
            .query_async(conn)
            .await?;
        for consumer in info.consumers {
            let departed = consumer.pending == 0
                && consumer.idle as u128 > FORGET_CONSUMER_AFTER.as_millis()
                && consumer.name != self.consumer;
            if departed {
                ::redis::cmd("XGROUP")
                    .arg("DELCONSUMER")
                    .arg(self.keys.all_events())
                    .arg(group)
                    .arg(&consumer.name)
                    .query_async::<i64>(conn)
                    .await?;
            }
        }
        Ok(())
    }

    /// Forwards entries to the local receivers, then acknowledges the ones delivered. An
    /// entry nobody received stays pending, for another replica to claim.
    async fn forward(
        &self,
        conn: &mut MultiplexedConnection,
        group: &str,
        sender: &broadcast::Sender<EventNotice>,
        entries: Vec<StreamId>,
    ) -> RedisResult<()> {
        let mut done = Vec::with_capacity(entries.len());
        for entry in entries {
            let delivered = match notice_of(&entry) {
                Some(notice) => sender.send(notice).is_ok(),
                None => {
                    // Acknowledged anyway: retrying cannot make it decodable.
                    tracing::warn!(id = %entry.id, "undecodable entry in the redis event stream");
                    true
                }
            };
            if delivered {
                done.push(entry.id);
            }
        }
        if done.is_empty() {
            return Ok(());
        }
        ::redis::cmd("XACK")
            .arg(self.keys.all_events())
            .arg(group)
            .arg(&done)
            .query_async::<i64>(conn)
            .await
            .map(drop)
    }
}

/// An entry of the all-tasks stream: `t` task id, `s` seq, `st` the state the event
/// left the task in (empty: unchanged). Entries written before `st` existed carry the
/// whole event as `e` instead.
fn notice_of(entry: &StreamId) -> Option<EventNotice> {
    let field = |name: &str| match entry.map.get(name) {
        Some(Value::BulkString(bytes)) => Some(bytes.as_slice()),
        _ => None,
    };
    if let (Some(task_id), Some(seq), Some(state)) = (field("t"), field("s"), field("st")) {
        let state = match std::str::from_utf8(state).ok()? {
            "" => None,
            text => Some(sb_protocol::TaskState::parse(text)?),
        };
        return Some(EventNotice {
            task_id: std::str::from_utf8(task_id).ok()?.into(),
            seq: std::str::from_utf8(seq).ok()?.parse().ok()?,
            state,
        });
    }
    let event: StoredEvent = serde_json::from_slice(field("e")?).ok()?;
    Some(EventNotice::from(&event))
}

/// XGROUP CREATE at the stream's end, creating the stream if needed; an existing group is
/// fine (another replica, or this one earlier, created it).
async fn create_group<C: ::redis::aio::ConnectionLike>(
    conn: &mut C,
    keys: &Keys,
    group: &str,
) -> Result<(), RedisError> {
    let created: RedisResult<()> = ::redis::cmd("XGROUP")
        .arg("CREATE")
        .arg(keys.all_events())
        .arg(group)
        .arg("$")
        .arg("MKSTREAM")
        .query_async(conn)
        .await;
    match created {
        Err(e) if e.code() == Some("BUSYGROUP") => Ok(()),
        other => other,
    }
}

/// `host-pid-random`: unique per bus, and tells an operator reading `XINFO CONSUMERS`
/// which replica a consumer is.
fn consumer_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    format!("{host}-{}-{:08x}", std::process::id(), random as u32)
}
