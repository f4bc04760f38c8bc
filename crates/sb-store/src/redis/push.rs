//! Push configs and dead letters in Redis.
//!
//! A config's delivery cursor lives apart from its record, in `P push-cursor:{task}`, and
//! is merged into `from_seq` on read. Moving it inside the record would mean decoding and
//! re-encoding the JSON in Lua, and cjson reorders keys, rounds numbers to 14 digits and
//! escapes `/`: records would not stay byte-exact. Apart, the cursor script only compares
//! two integers, and `put` resets the cursor with the record it replaces.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;

use super::{RedisStore, decode, encode, scripts};
use crate::record::{DeadLetter, PushConfigRecord};
use crate::traits::{DeadLetterStore, PushConfigStore, StoreError, StoreResult};

/// Tasks whose configs are fetched per round trip in `list_all_push_configs`.
const TASK_BATCH: usize = 200;

/// A record with its separately stored cursor folded in.
fn with_cursor(bytes: &[u8], cursor: Option<u64>) -> StoreResult<PushConfigRecord> {
    let mut record: PushConfigRecord = decode("push config", bytes)?;
    if let Some(cursor) = cursor {
        record.from_seq = record.from_seq.max(cursor);
    }
    Ok(record)
}

/// One task's configs, ordered by config id.
fn task_configs(
    records: HashMap<String, Vec<u8>>,
    cursors: &HashMap<String, u64>,
) -> StoreResult<Vec<PushConfigRecord>> {
    let ordered: BTreeMap<String, Vec<u8>> = records.into_iter().collect();
    ordered
        .iter()
        .map(|(id, bytes)| with_cursor(bytes, cursors.get(id).copied()))
        .collect()
}

#[async_trait]
impl PushConfigStore for RedisStore {
    async fn put_push_config(&self, record: PushConfigRecord) -> StoreResult<()> {
        let task_id = record.config.task_id.as_str();
        let config_id = record.config.id.as_deref().unwrap_or_default();
        ::redis::pipe()
            .atomic()
            .cmd("HSET")
            .arg(self.keys.push(task_id))
            .arg(config_id)
            .arg(encode(&record)?)
            .ignore()
            .cmd("HDEL")
            .arg(self.keys.push_cursor(task_id))
            .arg(config_id)
            .ignore()
            .cmd("SADD")
            .arg(self.keys.push_tasks())
            .arg(task_id)
            .ignore()
            .query_async::<()>(&mut self.conn())
            .await
            .map_err(self.err("store a push config"))
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> StoreResult<Option<PushConfigRecord>> {
        let (bytes, cursor): (Option<Vec<u8>>, Option<u64>) = ::redis::pipe()
            .cmd("HGET")
            .arg(self.keys.push(task_id))
            .arg(config_id)
            .cmd("HGET")
            .arg(self.keys.push_cursor(task_id))
            .arg(config_id)
            .query_async(&mut self.conn())
            .await
            .map_err(self.err("read a push config"))?;
        bytes.map(|b| with_cursor(&b, cursor)).transpose()
    }

    async fn list_push_configs(&self, task_id: &str) -> StoreResult<Vec<PushConfigRecord>> {
        let (records, cursors): (HashMap<String, Vec<u8>>, HashMap<String, u64>) = ::redis::pipe()
            .cmd("HGETALL")
            .arg(self.keys.push(task_id))
            .cmd("HGETALL")
            .arg(self.keys.push_cursor(task_id))
            .query_async(&mut self.conn())
            .await
            .map_err(self.err("list push configs"))?;
        task_configs(records, &cursors)
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> StoreResult<bool> {
        let removed: i64 = scripts::DELETE_PUSH
            .key(self.keys.push(task_id))
            .key(self.keys.push_cursor(task_id))
            .key(self.keys.push_tasks())
            .arg(config_id)
            .arg(task_id)
            .invoke_async(&mut self.conn())
            .await
            .map_err(self.err("delete a push config"))?;
        Ok(removed == 1)
    }

    async fn delete_push_configs(&self, task_id: &str) -> StoreResult<()> {
        ::redis::pipe()
            .atomic()
            .cmd("DEL")
            .arg(self.keys.push(task_id))
            .arg(self.keys.push_cursor(task_id))
            .ignore()
            .cmd("SREM")
            .arg(self.keys.push_tasks())
            .arg(task_id)
            .ignore()
            .query_async::<()>(&mut self.conn())
            .await
            .map_err(self.err("delete a task's push configs"))
    }

    async fn list_all_push_configs(&self) -> StoreResult<Vec<PushConfigRecord>> {
        let mut task_ids: Vec<String> = ::redis::cmd("SMEMBERS")
            .arg(self.keys.push_tasks())
            .query_async(&mut self.conn())
            .await
            .map_err(self.err("list tasks with push configs"))?;
        task_ids.sort();
        let mut all = Vec::new();
        for chunk in task_ids.chunks(TASK_BATCH) {
            let mut pipe = ::redis::pipe();
            for task_id in chunk {
                pipe.cmd("HGETALL").arg(self.keys.push(task_id));
                pipe.cmd("HGETALL").arg(self.keys.push_cursor(task_id));
            }
            let replies: Vec<HashMap<String, Vec<u8>>> = pipe
                .query_async(&mut self.conn())
                .await
                .map_err(self.err("list push configs"))?;
            // Replies alternate: a task's configs, then its cursors.
            let mut replies = replies.into_iter();
            while let (Some(records), Some(cursors)) = (replies.next(), replies.next()) {
                all.extend(task_configs(records, &parse_cursors(cursors)?)?);
            }
        }
        Ok(all)
    }

    /// One SMISMEMBER on the set of tasks with configs: the dispatcher then reads configs
    /// only for those, not two hashes for every task that had an event.
    async fn with_push_configs(&self, task_ids: &[String]) -> StoreResult<Vec<String>> {
        if task_ids.is_empty() {
            return Ok(Vec::new());
        }
        let members: Vec<bool> = ::redis::cmd("SMISMEMBER")
            .arg(self.keys.push_tasks())
            .arg(task_ids)
            .query_async(&mut self.conn())
            .await
            .map_err(self.err("look up tasks with push configs"))?;
        Ok(task_ids
            .iter()
            .zip(members)
            .filter(|(_, member)| *member)
            .map(|(id, _)| id.clone())
            .collect())
    }

    async fn advance_push_cursor(
        &self,
        task_id: &str,
        config_id: &str,
        seq: u64,
    ) -> StoreResult<()> {
        let _moved: i64 = scripts::ADVANCE_CURSOR
            .key(self.keys.push(task_id))
            .key(self.keys.push_cursor(task_id))
            .arg(config_id)
            .arg(seq)
            .invoke_async(&mut self.conn())
            .await
            .map_err(self.err("advance a push cursor"))?;
        Ok(())
    }
}

fn parse_cursors(raw: HashMap<String, Vec<u8>>) -> StoreResult<HashMap<String, u64>> {
    raw.into_iter()
        .map(|(id, bytes)| {
            std::str::from_utf8(&bytes)
                .ok()
                .and_then(|s| s.parse().ok())
                .map(|seq| (id, seq))
                .ok_or_else(|| StoreError::Backend("corrupt push cursor in redis".into()))
        })
        .collect()
}

#[async_trait]
impl DeadLetterStore for RedisStore {
    async fn put_dead_letter(&self, letter: DeadLetter) -> StoreResult<()> {
        ::redis::pipe()
            .atomic()
            .cmd("HSET")
            .arg(self.keys.dead())
            .arg(&letter.id)
            .arg(encode(&letter)?)
            .ignore()
            .cmd("ZADD")
            .arg(self.keys.dead_order())
            .arg(letter.failed_at.timestamp_millis())
            .arg(&letter.id)
            .ignore()
            .query_async::<()>(&mut self.conn())
            .await
            .map_err(self.err("store a dead letter"))
    }

    async fn list_dead_letters(&self) -> StoreResult<Vec<DeadLetter>> {
        // Ties in failure time come out by id, as a sorted set orders equal scores.
        let ids: Vec<String> = ::redis::cmd("ZRANGE")
            .arg(self.keys.dead_order())
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn())
            .await
            .map_err(self.err("list dead letters"))?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let letters: Vec<Option<Vec<u8>>> = ::redis::cmd("HMGET")
            .arg(self.keys.dead())
            .arg(&ids)
            .query_async(&mut self.conn())
            .await
            .map_err(self.err("list dead letters"))?;
        letters
            .into_iter()
            .flatten()
            .map(|bytes| decode("dead letter", &bytes))
            .collect()
    }

    async fn take_dead_letter(&self, id: &str) -> StoreResult<Option<DeadLetter>> {
        let bytes: Option<Vec<u8>> = scripts::TAKE_DEAD
            .key(self.keys.dead())
            .key(self.keys.dead_order())
            .arg(id)
            .invoke_async(&mut self.conn())
            .await
            .map_err(self.err("take a dead letter"))?;
        bytes.map(|b| decode("dead letter", &b)).transpose()
    }
}
