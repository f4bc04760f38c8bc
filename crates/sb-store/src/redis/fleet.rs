//! [`FleetStore`] over Redis: counter maps in hashes that Redis expires itself, scored
//! sets in sorted sets, documents in one hash per collection (compare-and-set by a
//! script), claims in strings set only if absent (see the key list in `mod.rs`).

use std::collections::BTreeMap;

use ::redis::Pipeline;
use async_trait::async_trait;

use super::{RedisStore, scripts};
use crate::fleet::FleetStore;
use crate::traits::StoreResult;

/// `expires_at_ms` as Redis takes it: it refuses 0 and anything past an i64, and 1 is
/// as expired as any time past.
fn redis_time(expires_at_ms: u64) -> u64 {
    expires_at_ms.clamp(1, i64::MAX as u64)
}

impl RedisStore {
    /// Sends a pipeline of reads, once more if the connection had dropped (see
    /// [`RedisStore::read`]).
    async fn read_pipe<T: ::redis::FromRedisValue>(
        &self,
        pipe: &Pipeline,
        what: &str,
    ) -> StoreResult<T> {
        match pipe.query_async(&mut self.conn()).await {
            Err(e) if e.is_connection_dropped() || e.is_io_error() => pipe
                .query_async(&mut self.conn())
                .await
                .map_err(self.err(what)),
            other => other.map_err(self.err(what)),
        }
    }
}

#[async_trait]
impl FleetStore for RedisStore {
    async fn add_counters(
        &self,
        key: &str,
        deltas: &[(String, i64)],
        expires_at_ms: u64,
    ) -> StoreResult<()> {
        let key = self.keys.fleet_counters(key);
        // One MULTI: no counter added without the expiry, and no reader sees half.
        // (Redis rolls nothing back: a counter that would overflow an i64 fails the
        // call but leaves the other fields added, where the other backends add none.)
        let mut pipe = ::redis::pipe();
        pipe.atomic();
        for (field, delta) in deltas {
            pipe.cmd("HINCRBY").arg(&key).arg(field).arg(delta).ignore();
        }
        // A time already past deletes the map at once.
        pipe.cmd("PEXPIREAT")
            .arg(&key)
            .arg(redis_time(expires_at_ms))
            .ignore();
        // Not sent again on a dropped connection: the first may have counted already.
        pipe.query_async::<()>(&mut self.conn())
            .await
            .map_err(self.err("add counters"))
    }

    async fn read_counters(&self, keys: &[String]) -> StoreResult<Vec<BTreeMap<String, i64>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        // One round trip for all; an absent (or expired) hash reads empty.
        let mut pipe = ::redis::pipe();
        for key in keys {
            pipe.cmd("HGETALL").arg(self.keys.fleet_counters(key));
        }
        self.read_pipe(&pipe, "read counters").await
    }

    async fn set_put(&self, set: &str, member: &str, score: i64) -> StoreResult<()> {
        let mut cmd = ::redis::cmd("ZADD");
        cmd.arg(self.keys.fleet_set(set)).arg(score).arg(member);
        // Safe to send again: a put leaves the same state however often it runs.
        self.read::<()>(&cmd, "put a set member").await
    }

    async fn set_remove(&self, set: &str, member: &str) -> StoreResult<bool> {
        // Not sent again: a second run would report the member absent.
        let removed: i64 = ::redis::cmd("ZREM")
            .arg(self.keys.fleet_set(set))
            .arg(member)
            .query_async(&mut self.conn())
            .await
            .map_err(self.err("remove a set member"))?;
        Ok(removed > 0)
    }

    async fn set_members(&self, set: &str) -> StoreResult<Vec<(String, i64)>> {
        let mut cmd = ::redis::cmd("ZRANGE");
        cmd.arg(self.keys.fleet_set(set))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES");
        // Equal scores come back by member, as the trait says. Redis keeps scores as
        // doubles: exact up to 2^53, far beyond any time in milliseconds.
        let members: Vec<(String, f64)> = self.read(&cmd, "list a set").await?;
        Ok(members
            .into_iter()
            .map(|(member, score)| (member, score as i64))
            .collect())
    }

    async fn doc_put(&self, collection: &str, id: &str, value: Vec<u8>) -> StoreResult<()> {
        let mut cmd = ::redis::cmd("HSET");
        cmd.arg(self.keys.fleet_docs(collection)).arg(id).arg(value);
        // Safe to send again: a put leaves the same state however often it runs.
        self.read::<()>(&cmd, "store a document").await
    }

    async fn doc_swap(
        &self,
        collection: &str,
        id: &str,
        expected: Option<&[u8]>,
        new: Option<Vec<u8>>,
    ) -> StoreResult<bool> {
        let mut invocation = scripts::DOC_SWAP.prepare_invoke();
        invocation
            .key(self.keys.fleet_docs(collection))
            .arg(id)
            .arg(if expected.is_some() { "1" } else { "0" })
            .arg(expected.unwrap_or_default())
            .arg(if new.is_some() { "1" } else { "0" })
            .arg(new.unwrap_or_default());
        // Not sent again: a second run would find its own write and report a conflict.
        let swapped: i64 = invocation
            .invoke_async(&mut self.conn())
            .await
            .map_err(self.err("swap a document"))?;
        Ok(swapped == 1)
    }

    async fn doc_get(&self, collection: &str, id: &str) -> StoreResult<Option<Vec<u8>>> {
        let mut cmd = ::redis::cmd("HGET");
        cmd.arg(self.keys.fleet_docs(collection)).arg(id);
        self.read(&cmd, "read a document").await
    }

    async fn doc_list(&self, collection: &str) -> StoreResult<Vec<(String, Vec<u8>)>> {
        let mut cmd = ::redis::cmd("HGETALL");
        cmd.arg(self.keys.fleet_docs(collection));
        // A BTreeMap: sorted by id, as the trait says.
        let docs: BTreeMap<String, Vec<u8>> = self.read(&cmd, "list documents").await?;
        Ok(docs.into_iter().collect())
    }

    async fn doc_remove(&self, collection: &str, id: &str) -> StoreResult<bool> {
        // Not sent again: a second run would report the document absent.
        let removed: i64 = ::redis::cmd("HDEL")
            .arg(self.keys.fleet_docs(collection))
            .arg(id)
            .query_async(&mut self.conn())
            .await
            .map_err(self.err("remove a document"))?;
        Ok(removed > 0)
    }

    async fn claim(&self, key: &str, holder: &str, expires_at_ms: u64) -> StoreResult<bool> {
        // NX first: an unexpired claim stands; a time already past wins and holds
        // nothing, as the other backends do.
        let set: Option<String> = ::redis::cmd("SET")
            .arg(self.keys.fleet_claim(key))
            .arg(holder)
            .arg("NX")
            .arg("PXAT")
            .arg(redis_time(expires_at_ms))
            .query_async(&mut self.conn())
            .await
            // Not sent again: a second run would find the first's claim and lose.
            .map_err(self.err("claim"))?;
        Ok(set.is_some())
    }
}
