//! [`WorkQueue`] on Redis Streams: one stream per agent (`{prefix}queue:{agent}`) read
//! through one consumer group, so each turn is leased to one worker connection at a time
//! (the stream's pending-entries list is the lease table, its idle time the lease age).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::streams::{StreamAutoClaimReply, StreamId, StreamReadReply};
use redis::{AsyncConnectionConfig, Client, Script};

use crate::queue::{Leased, WorkItem, WorkQueue};
use crate::traits::{StoreError, StoreResult};

const GROUP: &str = "workers";

/// Queues only below the limit, atomically with the length check. Idempotent per turn
/// (`KEYS[2]` marks the turn queued for a day), so a push whose answer was lost with its
/// connection can be sent again without queuing the turn twice.
const PUSH: &str = r#"
if redis.call('EXISTS', KEYS[2]) == 1 then return 1 end
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('XADD', KEYS[1], '*', 'i', ARGV[2])
redis.call('SET', KEYS[2], '1', 'EX', 86400)
return 1
"#;

#[derive(Clone)]
pub struct RedisWorkQueue {
    client: Client,
    conn: ConnectionManager,
    prefix: String,
    push: Script,
    /// Agents whose group is known to exist.
    groups: std::sync::Arc<Mutex<HashSet<String>>>,
    /// Connections for blocking reads, which must not share the multiplexed one (a
    /// blocked read would hold up every command queued behind it).
    idle: std::sync::Arc<Mutex<Vec<MultiplexedConnection>>>,
    /// Where the next read starts among a worker's agents when it has room for fewer
    /// turns than it serves agents.
    rotation: std::sync::Arc<AtomicUsize>,
}

impl std::fmt::Debug for RedisWorkQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisWorkQueue")
            .field("prefix", &self.prefix)
            .finish()
    }
}

fn backend(e: redis::RedisError) -> StoreError {
    StoreError::Backend(format!("redis: {e}"))
}

fn decode(entry: &StreamId) -> Option<Leased> {
    let raw: Vec<u8> = entry.get("i")?;
    let item: WorkItem = serde_json::from_slice(&raw).ok()?;
    Some(Leased {
        entry_id: entry.id.clone(),
        item,
    })
}

impl RedisWorkQueue {
    pub async fn connect(url: &str, prefix: &str) -> StoreResult<RedisWorkQueue> {
        let client = Client::open(url).map_err(|e| {
            StoreError::Backend(format!(
                "invalid Redis URL {}: {e}",
                crate::redis::redact_url(url)
            ))
        })?;
        let conn = ConnectionManager::new(client.clone()).await.map_err(|e| {
            StoreError::Backend(format!(
                "redis at {} unreachable: {e}",
                crate::redis::redact_url(url)
            ))
        })?;
        Ok(RedisWorkQueue {
            client,
            conn,
            prefix: prefix.to_owned(),
            push: Script::new(PUSH),
            groups: Default::default(),
            idle: Default::default(),
            rotation: Default::default(),
        })
    }

    fn key(&self, agent: &str) -> String {
        format!("{}queue:{agent}", self.prefix)
    }

    async fn ensure_group(&self, agent: &str) -> StoreResult<()> {
        if self.groups.lock().contains(agent) {
            return Ok(());
        }
        let mut conn = self.conn.clone();
        let created: redis::RedisResult<()> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(self.key(agent))
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut conn)
            .await;
        match created {
            Ok(()) => {}
            Err(e) if e.code() == Some("BUSYGROUP") => {}
            Err(e) => return Err(backend(e)),
        }
        self.groups.lock().insert(agent.to_owned());
        Ok(())
    }

    /// Which of `agents`' streams one read takes from, and how many entries from each
    /// (XREADGROUP's COUNT is per stream), so that it leases at most `max` turns: every
    /// stream with `max / streams` each, or, when there is room for fewer turns than
    /// there are agents, one each from as many streams as there is room, starting
    /// further along at each read so that no agent waits behind the others.
    fn streams_to_read(&self, agents: &[String], max: usize) -> (Vec<String>, usize) {
        let max = max.max(1);
        if agents.len() <= max {
            return (agents.to_vec(), max / agents.len().max(1));
        }
        let start = self.rotation.fetch_add(1, Ordering::Relaxed);
        let chosen = (0..max)
            .map(|i| agents[(start + i) % agents.len()].clone())
            .collect();
        (chosen, 1)
    }

    async fn blocking_connection(&self) -> StoreResult<MultiplexedConnection> {
        if let Some(conn) = self.idle.lock().pop() {
            return Ok(conn);
        }
        let config = AsyncConnectionConfig::new().set_response_timeout(None);
        self.client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(backend)
    }
}

#[async_trait]
impl WorkQueue for RedisWorkQueue {
    async fn push(&self, item: &WorkItem, limit: usize) -> StoreResult<bool> {
        self.ensure_group(&item.agent).await?;
        let json = serde_json::to_vec(item).map_err(StoreError::backend)?;
        // Re-queued turns (a lost worker) keep their turn id: mark each delivery apart.
        let marker = format!(
            "{}queued:{}:{}",
            self.prefix, item.turn_id, item.redeliveries
        );
        let mut invocation = self.push.prepare_invoke();
        invocation
            .key(self.key(&item.agent))
            .key(marker)
            .arg(limit.min(i64::MAX as usize) as i64)
            .arg(json);
        let queued: i64 = match invocation.invoke_async(&mut self.conn.clone()).await {
            // After Redis restarts, the first command on the old connection fails; the
            // script is idempotent per turn, so sending it again is safe.
            Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                invocation.invoke_async(&mut self.conn.clone()).await
            }
            other => other,
        }
        .map_err(backend)?;
        Ok(queued == 1)
    }

    async fn take(
        &self,
        agents: &[String],
        consumer: &str,
        max: usize,
        wait: Duration,
    ) -> StoreResult<Vec<Leased>> {
        for agent in agents {
            self.ensure_group(agent).await?;
        }
        let (streams, count) = self.streams_to_read(agents, max);
        if streams.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.blocking_connection().await?;
        let mut cmd = redis::cmd("XREADGROUP");
        // COUNT is per stream: `streams.len() * count` never exceeds `max`.
        cmd.arg("GROUP")
            .arg(GROUP)
            .arg(consumer)
            .arg("COUNT")
            .arg(count)
            .arg("BLOCK")
            .arg(wait.as_millis().max(1) as u64)
            .arg("STREAMS");
        for agent in &streams {
            cmd.arg(self.key(agent));
        }
        for _ in &streams {
            cmd.arg(">");
        }
        let reply: Option<StreamReadReply> = cmd.query_async(&mut conn).await.map_err(backend)?;
        self.idle.lock().push(conn);
        let mut taken = Vec::new();
        for stream in reply.iter().flat_map(|r| &r.keys) {
            for entry in &stream.ids {
                match decode(entry) {
                    Some(leased) => taken.push(leased),
                    None => {
                        // Not ours to run: a malformed entry would otherwise be retried
                        // forever.
                        tracing::error!(entry = %entry.id, "dropping a malformed queue entry");
                        let agent = streams.iter().find(|a| stream.key == self.key(a));
                        if let Some(agent) = agent {
                            self.finish(agent, &entry.id).await?;
                        }
                    }
                }
            }
        }
        Ok(taken)
    }

    async fn renew(&self, agent: &str, consumer: &str, entry_ids: &[String]) -> StoreResult<()> {
        if entry_ids.is_empty() {
            return Ok(());
        }
        // Claiming one's own entries resets their idle time: that is the lease renewal.
        let mut cmd = redis::cmd("XCLAIM");
        cmd.arg(self.key(agent)).arg(GROUP).arg(consumer).arg(0);
        for id in entry_ids {
            cmd.arg(id);
        }
        cmd.arg("JUSTID");
        let mut conn = self.conn.clone();
        let _: redis::Value = cmd.query_async(&mut conn).await.map_err(backend)?;
        Ok(())
    }

    async fn is_leased(&self, agent: &str, entry_id: &str) -> StoreResult<bool> {
        // The group's pending entries are the lease table: a finished or re-queued turn
        // has left it.
        let mut xpending = redis::cmd("XPENDING");
        xpending
            .arg(self.key(agent))
            .arg(GROUP)
            .arg(entry_id)
            .arg(entry_id)
            .arg(1);
        let pending: redis::Value = match xpending.query_async(&mut self.conn.clone()).await {
            // After Redis restarts, the first command on the old connection fails; a read
            // is safe to send again (a worker's update must not fail on that).
            Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                xpending.query_async(&mut self.conn.clone()).await
            }
            other => other,
        }
        .map_err(backend)?;
        Ok(matches!(pending, redis::Value::Array(entries) if !entries.is_empty()))
    }

    async fn finish(&self, agent: &str, entry_id: &str) -> StoreResult<()> {
        let key = self.key(agent);
        let mut conn = self.conn.clone();
        let _: () = redis::pipe()
            .atomic()
            .cmd("XACK")
            .arg(&key)
            .arg(GROUP)
            .arg(entry_id)
            .ignore()
            .cmd("XDEL")
            .arg(&key)
            .arg(entry_id)
            .ignore()
            .query_async(&mut conn)
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn reclaim(
        &self,
        agent: &str,
        consumer: &str,
        min_idle: Duration,
    ) -> StoreResult<Vec<Leased>> {
        self.ensure_group(agent).await?;
        let mut conn = self.conn.clone();
        let mut start = "0-0".to_owned();
        let mut claimed = Vec::new();
        loop {
            let reply: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
                .arg(self.key(agent))
                .arg(GROUP)
                .arg(consumer)
                .arg(min_idle.as_millis() as u64)
                .arg(&start)
                .arg("COUNT")
                .arg(100)
                .query_async(&mut conn)
                .await
                .map_err(backend)?;
            for entry in &reply.claimed {
                match decode(entry) {
                    Some(leased) => claimed.push(leased),
                    None => self.finish(agent, &entry.id).await?,
                }
            }
            if reply.next_stream_id == "0-0" || reply.claimed.is_empty() {
                return Ok(claimed);
            }
            start = reply.next_stream_id;
        }
    }

    async fn depth(&self, agent: &str) -> StoreResult<u64> {
        let mut conn = self.conn.clone();
        redis::cmd("XLEN")
            .arg(self.key(agent))
            .query_async(&mut conn)
            .await
            .map_err(backend)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::redis::testing::TestRedis;

    fn item(agent: &str, n: usize) -> WorkItem {
        WorkItem {
            task_id: format!("{agent}-{n}"),
            agent: agent.to_owned(),
            owner: String::new(),
            message: sb_protocol::Message::agent_text("work"),
            turn_id: format!("turn-{agent}-{n}"),
            redeliveries: 0,
            traceparent: String::new(),
        }
    }

    /// One read leases as many queued turns as the caller has room for, across its
    /// agents, and never more (COUNT is per stream: a worker with room for one turn
    /// and two agents with turns queued must not be leased two).
    #[tokio::test]
    async fn one_read_leases_up_to_max_turns_across_agents() {
        let redis = TestRedis::shared();
        let prefix = TestRedis::prefix("queue-batch");
        let queue = RedisWorkQueue::connect(redis.url(), &prefix).await.unwrap();
        for n in 0..5 {
            assert!(queue.push(&item("a", n), 100).await.unwrap());
        }
        for n in 0..3 {
            assert!(queue.push(&item("b", n), 100).await.unwrap());
        }
        let agents = ["a".to_owned(), "b".to_owned()];
        let wait = Duration::from_millis(10);
        let four = queue.take(&agents, "w", 4, wait).await.unwrap();
        assert_eq!(four.len(), 4, "{four:?}");
        let one = queue.take(&agents, "w", 1, wait).await.unwrap();
        assert_eq!(one.len(), 1, "{one:?}");
        let rest = queue.take(&agents, "w", 64, wait).await.unwrap();
        assert_eq!(rest.len(), 3, "{rest:?}");
        let mut tasks = Vec::new();
        for leased in four.iter().chain(&one).chain(&rest) {
            assert!(
                queue
                    .is_leased(&leased.item.agent, &leased.entry_id)
                    .await
                    .unwrap()
            );
            tasks.push(leased.item.task_id.clone());
        }
        tasks.sort();
        tasks.dedup();
        assert_eq!(tasks.len(), 8, "every turn taken once: {tasks:?}");
        assert!(queue.take(&agents, "w", 64, wait).await.unwrap().is_empty());
    }
}
