//! [`TaskStore`] over Redis: records in hashes, logs in streams, commits in one script.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use ::redis::streams::StreamRangeReply;
use ::redis::{RedisError, Value};
use async_trait::async_trait;

use super::registry::RegistryWatch;
use super::{
    CONNECT_TIMEOUT, GLOBAL_STREAM_CAP, Keys, RESPONSE_TIMEOUT, backend_error, decode, open_client,
    probe, scripts,
};
use crate::record::{StoredEvent, TaskCommit, TaskPage, TaskQuery, TaskRecord};
use crate::traits::{StoreError, StoreResult, TaskStore};

/// Records fetched per round trip when listing.
const FETCH_BATCH: usize = 500;

/// Reconnection attempts per failed command before it reports the failure; the manager
/// keeps trying again on later commands.
const RECONNECT_RETRIES: usize = 6;
const MAX_RECONNECT_DELAY: Duration = Duration::from_secs(2);

/// The Redis task store. Cheap to clone: clones share one multiplexed, self-reconnecting
/// connection.
#[derive(Clone)]
pub struct RedisStore {
    pub(super) conn: ConnectionManager,
    pub(super) keys: Keys,
    /// `host:port/db`, for messages.
    pub(super) place: Arc<str>,
    /// Set once `P finished` and `P unfinished` are known to index every task.
    tasks_indexed: Arc<tokio::sync::OnceCell<()>>,
    /// Watching the agent registry (`registry.rs`), started by the first watcher.
    pub(super) registry: Arc<RegistryWatch>,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("place", &self.place)
            .field("prefix", &self.keys.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (`redis://[user][:password@]host[:port][/db]`, or `rediss://` for
    /// TLS) and namespaces every key under `prefix` (e.g. `"sb:"`). Fails if the server
    /// cannot be reached now; later outages are retried on each command.
    pub async fn connect(url: &str, prefix: &str) -> StoreResult<RedisStore> {
        let (client, place) = open_client(url)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(RECONNECT_RETRIES)
            .set_max_delay(MAX_RECONNECT_DELAY);
        probe(&client, &place).await?;
        let registry = Arc::new(RegistryWatch::new(client.clone()));
        let conn = ConnectionManager::new_lazy_with_config(client, config)
            .map_err(|e| backend_error(&place, "connect", &e))?;
        Ok(RedisStore {
            conn,
            keys: Keys {
                prefix: prefix.to_owned(),
            },
            place: place.into(),
            tasks_indexed: Arc::default(),
            registry,
        })
    }

    pub(super) fn err<'a>(&'a self, what: &'a str) -> impl Fn(RedisError) -> StoreError + 'a {
        move |e| backend_error(&self.place, what, &e)
    }

    pub(super) fn conn(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// Sends a read, once more if the connection had dropped: after Redis restarts, the
    /// first command on the old connection fails while the manager reconnects behind
    /// it, and a read is safe to repeat.
    pub(super) async fn read<T: ::redis::FromRedisValue>(
        &self,
        cmd: &::redis::Cmd,
        what: &str,
    ) -> StoreResult<T> {
        match cmd.query_async(&mut self.conn()).await {
            Err(e) if e.is_connection_dropped() || e.is_io_error() => cmd
                .query_async(&mut self.conn())
                .await
                .map_err(self.err(what)),
            other => other.map_err(self.err(what)),
        }
    }

    /// Indexes every task in `P finished` or `P unfinished`, unless done already (a
    /// store written before they existed has nothing there). Replicas doing it at once
    /// add the same entries; a task deleted meanwhile may be left indexed, and is
    /// skipped when read (its records are gone) or taken out by its eviction's delete.
    async fn index_tasks(&self) -> StoreResult<()> {
        let mut done = ::redis::cmd("EXISTS");
        done.arg(self.keys.tasks_indexed());
        if self.read::<bool>(&done, "read the task indexes").await? {
            return Ok(());
        }
        let mut all = ::redis::cmd("ZRANGE");
        all.arg(self.keys.tasks()).arg(0).arg(-1);
        let ids: Vec<String> = self.read(&all, "list all tasks").await?;
        for chunk in ids.chunks(FETCH_BATCH) {
            let records = self.records(chunk).await?;
            if records.is_empty() {
                continue;
            }
            let mut pipe = ::redis::pipe();
            for record in &records {
                let id = &record.task.id;
                match record.finished_at_millis() {
                    Some(at) => pipe.cmd("ZADD").arg(self.keys.finished()).arg(at).arg(id),
                    None => pipe.cmd("SADD").arg(self.keys.unfinished()).arg(id),
                }
                .ignore();
            }
            pipe.query_async::<()>(&mut self.conn())
                .await
                .map_err(self.err("index tasks"))?;
        }
        ::redis::cmd("SET")
            .arg(self.keys.tasks_indexed())
            .arg(1)
            .query_async::<()>(&mut self.conn())
            .await
            .map_err(self.err("index tasks"))?;
        if !ids.is_empty() {
            tracing::info!(
                tasks = ids.len(),
                "indexed the tasks in redis as finished or not (once, on the first start of this version)"
            );
        }
        Ok(())
    }

    /// The records of these tasks, skipping any deleted meanwhile.
    async fn records(&self, ids: &[String]) -> StoreResult<Vec<TaskRecord>> {
        let mut records = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(FETCH_BATCH) {
            let mut pipe = ::redis::pipe();
            for id in chunk {
                pipe.cmd("HGET").arg(self.keys.task(id)).arg("rec");
            }
            let values: Vec<Option<Vec<u8>>> = match pipe.query_async(&mut self.conn()).await {
                Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                    pipe.query_async(&mut self.conn()).await
                }
                other => other,
            }
            .map_err(self.err("read task records"))?;
            for bytes in values.into_iter().flatten() {
                records.push(decode("task record", &bytes)?);
            }
        }
        Ok(records)
    }
}

#[async_trait]
impl TaskStore for RedisStore {
    async fn get(&self, task_id: &str) -> StoreResult<Option<TaskRecord>> {
        let mut cmd = ::redis::cmd("HGET");
        cmd.arg(self.keys.task(task_id)).arg("rec");
        let bytes: Option<Vec<u8>> = self.read(&cmd, "read a task").await?;
        bytes.map(|b| decode("task record", &b)).transpose()
    }

    async fn commit(&self, commit: TaskCommit) -> StoreResult<()> {
        let record = &commit.record;
        let task_id = record.task.id.as_str();
        // Stream ids must increase; checking here keeps a bad commit from reaching the
        // script, where it would be refused only after the CAS.
        let mut previous = commit.expected_seq;
        for event in &commit.events {
            if event.seq <= previous {
                return Err(StoreError::Backend(format!(
                    "commit of task {task_id} carries event {} after seq {previous}",
                    event.seq
                )));
            }
            previous = event.seq;
        }
        let mut invocation = scripts::COMMIT.prepare_invoke();
        invocation
            .key(self.keys.task(task_id))
            .key(self.keys.events(task_id))
            .key(self.keys.all_events())
            .key(self.keys.index(&record.agent, &record.owner))
            .key(self.keys.tasks())
            .key(self.keys.open(&record.agent, &record.owner))
            .key(self.keys.finished())
            .key(self.keys.unfinished())
            .arg(commit.expected_seq)
            .arg(record.seq)
            .arg(record.to_stored_json().map_err(StoreError::backend)?)
            .arg(task_id)
            .arg(record.status_time().timestamp_millis())
            .arg(record.created_at.timestamp_millis())
            .arg(self.keys.channel(task_id))
            .arg(GLOBAL_STREAM_CAP)
            .arg(if record.state().is_terminal() {
                "0"
            } else {
                "1"
            })
            .arg(commit.open_limit.unwrap_or(0))
            .arg(self.keys.ended_channel());
        for event in &commit.events {
            invocation
                .arg(event.seq)
                .arg(event.to_stored_json().map_err(StoreError::backend)?)
                .arg(event.event.state().map_or("", |s| s.as_str()));
        }
        let (current, resent) = match invocation.invoke_async(&mut self.conn()).await {
            // The connection dropped (Redis restarted): the script may or may not have
            // run. Sending it again is safe, it is conditional on the sequence number;
            // a conflict at exactly our number is then checked against what is stored.
            Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                (invocation.invoke_async(&mut self.conn()).await, true)
            }
            first => (first, false),
        };
        let current: Option<String> = current.map_err(self.err("commit a task"))?;
        let Some(current) = current else {
            return Ok(());
        };
        if current == "limit" {
            return Err(StoreError::LimitReached {
                limit: commit.open_limit.unwrap_or(0),
            });
        }
        let current_seq = current.parse().map_err(|_| {
            StoreError::Backend(format!(
                "corrupt seq {current:?} of task {task_id} in redis"
            ))
        })?;
        if resent && current_seq == record.seq && self.get(task_id).await?.as_ref() == Some(record)
        {
            return Ok(());
        }
        Err(StoreError::Conflict {
            task_id: task_id.to_owned(),
            current_seq,
        })
    }

    async fn events_after(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<StoredEvent>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        // Entry ids are `{seq}-0`, so `{after}-1` is the first id past `after` (and, unlike
        // `(` ranges, works on every Redis with streams).
        let mut cmd = ::redis::cmd("XRANGE");
        cmd.arg(self.keys.events(task_id))
            .arg(format!("{after}-1"))
            .arg("+")
            .arg("COUNT")
            .arg(limit.min(i64::MAX as usize));
        let reply: StreamRangeReply = self.read(&cmd, "read a task's events").await?;
        reply
            .ids
            .iter()
            .map(|entry| match entry.map.get("e") {
                Some(Value::BulkString(bytes)) => decode("event", bytes),
                _ => Err(StoreError::Backend(format!(
                    "corrupt event {} of task {task_id} in redis: no `e` field",
                    entry.id
                ))),
            })
            .collect()
    }

    async fn list(&self, query: &TaskQuery) -> StoreResult<TaskPage> {
        // Scores are whole millis, so this bound keeps a superset; `matches` is exact.
        let min = query
            .status_after
            .map_or_else(|| "-inf".to_owned(), |t| t.timestamp_millis().to_string());
        let mut cmd = ::redis::cmd("ZREVRANGEBYSCORE");
        cmd.arg(self.keys.index(&query.agent, &query.owner))
            .arg("+inf")
            .arg(min);
        let ids: Vec<String> = self.read(&cmd, "list tasks").await?;
        let matching = self
            .records(&ids)
            .await?
            .into_iter()
            .filter(|r| query.matches(r))
            .collect();
        Ok(query.paginate(matching))
    }

    async fn list_all(&self) -> StoreResult<Vec<TaskRecord>> {
        let mut cmd = ::redis::cmd("ZRANGE");
        cmd.arg(self.keys.tasks()).arg(0).arg(-1);
        let ids: Vec<String> = self.read(&cmd, "list all tasks").await?;
        self.records(&ids).await
    }

    async fn delete(&self, task_id: &str) -> StoreResult<bool> {
        let existed: i64 = scripts::DELETE_TASK
            .key(self.keys.task(task_id))
            .key(self.keys.events(task_id))
            .key(self.keys.tasks())
            .key(self.keys.finished())
            .key(self.keys.unfinished())
            .arg(task_id)
            .invoke_async(&mut self.conn())
            .await
            .map_err(self.err("delete a task"))?;
        Ok(existed == 1)
    }

    async fn list_unfinished(&self) -> StoreResult<Vec<TaskRecord>> {
        self.tasks_indexed
            .get_or_try_init(|| self.index_tasks())
            .await?;
        let mut cmd = ::redis::cmd("SMEMBERS");
        cmd.arg(self.keys.unfinished());
        let ids: Vec<String> = self.read(&cmd, "list unfinished tasks").await?;
        self.records(&ids).await
    }

    async fn finished_before(&self, cutoff_millis: u64, limit: usize) -> StoreResult<Vec<String>> {
        self.tasks_indexed
            .get_or_try_init(|| self.index_tasks())
            .await?;
        let mut cmd = ::redis::cmd("ZRANGEBYSCORE");
        cmd.arg(self.keys.finished())
            .arg("-inf")
            .arg(cutoff_millis)
            .arg("LIMIT")
            .arg(0)
            .arg(limit.min(i64::MAX as usize));
        self.read(&cmd, "list finished tasks").await
    }
}
