//! [`FleetStore`] in memory: one mutex over every primitive, so each call is atomic, and
//! an index of what expires, by when, so expired entries are dropped as writes go by.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use async_trait::async_trait;

use super::MemoryStore;
use crate::fleet::{FleetStore, add_deltas, now_ms};
use crate::traits::StoreResult;

/// Which primitive an entry of [`FleetState::expiring`] belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Counters,
    Claim,
}

/// A value and when it stops counting (milliseconds since the epoch).
#[derive(Debug)]
struct Expiring<T> {
    value: T,
    expires_at_ms: u64,
}

impl<T> Expiring<T> {
    fn live(&self, now: u64) -> bool {
        self.expires_at_ms > now
    }
}

#[derive(Debug, Default)]
pub(super) struct FleetState {
    counters: HashMap<String, Expiring<BTreeMap<String, i64>>>,
    /// Each claim's holder.
    claims: HashMap<String, Expiring<String>>,
    /// Every counter map and claim by when it expires: each write drops what has expired
    /// from the front, so nothing expired stays around for long as long as writes come,
    /// and no write walks every entry.
    expiring: BTreeSet<(u64, Kind, String)>,
    /// Each set's scores by member.
    sets: HashMap<String, BTreeMap<String, i64>>,
    /// Each collection's documents by id (ordered, as `doc_list` returns them).
    docs: HashMap<String, BTreeMap<String, Vec<u8>>>,
}

impl FleetState {
    /// Drops every counter map and claim that has expired by `now`.
    fn drop_expired(&mut self, now: u64) {
        while let Some((at, kind, key)) = self.expiring.first().cloned() {
            if at > now {
                break;
            }
            self.expiring.pop_first();
            match kind {
                Kind::Counters => drop(self.counters.remove(&key)),
                Kind::Claim => drop(self.claims.remove(&key)),
            }
        }
    }

    /// Moves `key`'s entry in the expiry index from `from` (if it had one) to `to`.
    fn reindex(&mut self, kind: Kind, key: &str, from: Option<u64>, to: u64) {
        if from == Some(to) {
            return;
        }
        if let Some(from) = from {
            self.expiring.remove(&(from, kind, key.to_owned()));
        }
        self.expiring.insert((to, kind, key.to_owned()));
    }
}

#[async_trait]
impl FleetStore for MemoryStore {
    async fn add_counters(
        &self,
        key: &str,
        deltas: &[(String, i64)],
        expires_at_ms: u64,
    ) -> StoreResult<()> {
        let now = now_ms();
        let mut state = self.fleet.lock();
        state.drop_expired(now);
        // Whatever is left has not expired.
        let current = state.counters.get(key);
        let before = current.map(|c| c.expires_at_ms);
        let nothing_to_keep = current.is_none() && deltas.is_empty();
        // Computed before anything changes: a refused add changes nothing.
        let counters = add_deltas(current.map(|c| c.value.clone()).unwrap_or_default(), deltas)?;
        if expires_at_ms <= now || nothing_to_keep {
            // Expired as soon as written (gone at once, as Redis drops it), or nothing
            // to keep.
            if let Some(at) = before {
                state.expiring.remove(&(at, Kind::Counters, key.to_owned()));
                state.counters.remove(key);
            }
            return Ok(());
        }
        state.reindex(Kind::Counters, key, before, expires_at_ms);
        state.counters.insert(
            key.to_owned(),
            Expiring {
                value: counters,
                expires_at_ms,
            },
        );
        Ok(())
    }

    async fn read_counters(&self, keys: &[String]) -> StoreResult<Vec<BTreeMap<String, i64>>> {
        let now = now_ms();
        let state = self.fleet.lock();
        Ok(keys
            .iter()
            .map(|key| match state.counters.get(key) {
                Some(map) if map.live(now) => map.value.clone(),
                _ => BTreeMap::new(),
            })
            .collect())
    }

    async fn set_put(&self, set: &str, member: &str, score: i64) -> StoreResult<()> {
        let mut state = self.fleet.lock();
        let members = state.sets.entry(set.to_owned()).or_default();
        members.insert(member.to_owned(), score);
        Ok(())
    }

    async fn set_remove(&self, set: &str, member: &str) -> StoreResult<bool> {
        let mut state = self.fleet.lock();
        let Some(members) = state.sets.get_mut(set) else {
            return Ok(false);
        };
        let existed = members.remove(member).is_some();
        if members.is_empty() {
            state.sets.remove(set);
        }
        Ok(existed)
    }

    async fn set_members(&self, set: &str) -> StoreResult<Vec<(String, i64)>> {
        let state = self.fleet.lock();
        let mut members: Vec<(String, i64)> = match state.sets.get(set) {
            Some(members) => members.iter().map(|(m, s)| (m.clone(), *s)).collect(),
            None => Vec::new(),
        };
        // Stable, over members in order: equal scores stay by member.
        members.sort_by_key(|(_, score)| *score);
        Ok(members)
    }

    async fn doc_put(&self, collection: &str, id: &str, value: Vec<u8>) -> StoreResult<()> {
        let mut state = self.fleet.lock();
        let docs = state.docs.entry(collection.to_owned()).or_default();
        docs.insert(id.to_owned(), value);
        Ok(())
    }

    async fn doc_swap(
        &self,
        collection: &str,
        id: &str,
        expected: Option<&[u8]>,
        new: Option<Vec<u8>>,
    ) -> StoreResult<bool> {
        let mut state = self.fleet.lock();
        let current = state
            .docs
            .get(collection)
            .and_then(|docs| docs.get(id))
            .map(Vec::as_slice);
        if current != expected {
            return Ok(false);
        }
        match new {
            Some(value) => {
                let docs = state.docs.entry(collection.to_owned()).or_default();
                docs.insert(id.to_owned(), value);
            }
            None => remove_doc(&mut state, collection, id),
        }
        Ok(true)
    }

    async fn doc_get(&self, collection: &str, id: &str) -> StoreResult<Option<Vec<u8>>> {
        let state = self.fleet.lock();
        Ok(state.docs.get(collection).and_then(|d| d.get(id)).cloned())
    }

    async fn doc_list(&self, collection: &str) -> StoreResult<Vec<(String, Vec<u8>)>> {
        let state = self.fleet.lock();
        let Some(docs) = state.docs.get(collection) else {
            return Ok(Vec::new());
        };
        Ok(docs.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    async fn doc_remove(&self, collection: &str, id: &str) -> StoreResult<bool> {
        let mut state = self.fleet.lock();
        let existed = state
            .docs
            .get(collection)
            .is_some_and(|d| d.contains_key(id));
        remove_doc(&mut state, collection, id);
        Ok(existed)
    }

    async fn claim(&self, key: &str, holder: &str, expires_at_ms: u64) -> StoreResult<bool> {
        let now = now_ms();
        let mut state = self.fleet.lock();
        state.drop_expired(now);
        if state.claims.contains_key(key) {
            return Ok(false);
        }
        // One already expired is won and held by no one, as Redis does.
        if expires_at_ms > now {
            state.reindex(Kind::Claim, key, None, expires_at_ms);
            let claim = Expiring {
                value: holder.to_owned(),
                expires_at_ms,
            };
            state.claims.insert(key.to_owned(), claim);
        }
        Ok(true)
    }
}

/// Removes the document, and its collection once empty.
fn remove_doc(state: &mut FleetState, collection: &str, id: &str) {
    if let Some(docs) = state.docs.get_mut(collection) {
        docs.remove(id);
        if docs.is_empty() {
            state.docs.remove(collection);
        }
    }
}
