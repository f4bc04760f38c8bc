//! [`FleetStore`] in the embedded store: counter maps in
//! [`FLEET_COUNTERS`], scored sets in
//! [`FLEET_SETS`], documents in [`FLEET_DOCS`],
//! claims in [`FLEET_CLAIMS`](super::FLEET_CLAIMS). Writes go through the writer thread
//! and the journal like every other write ([`FleetOp`], applied by [`fleet_writes`]);
//! reads open the file, and take what has expired for absent.
//!
//! [`fleet_writes`]: super::fleet_writes

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use super::batch::Reply;
use super::writer::WriteOp;
use super::{FLEET_COUNTERS, FLEET_DOCS, FLEET_SETS, RedbStore};
use crate::fleet::{FleetStore, now_ms};
use crate::traits::{StoreError, StoreResult};

/// A counter map as [`FLEET_COUNTERS`] holds it, postcard-encoded:
/// varints, and each field's name once, so a health bucket of a few counters takes a
/// few dozen bytes.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct StoredCounters {
    pub(super) expires_at_ms: u64,
    pub(super) counters: BTreeMap<String, i64>,
}

impl StoredCounters {
    pub(super) fn encode(&self) -> StoreResult<Vec<u8>> {
        postcard::to_allocvec(self)
            .map_err(|e| StoreError::Backend(format!("cannot encode a counter map: {e}")))
    }
}

pub(super) fn decode_counters(bytes: &[u8]) -> StoreResult<StoredCounters> {
    postcard::from_bytes(bytes)
        .map_err(|e| StoreError::Backend(format!("corrupt counter map: {e}")))
}

type Done = oneshot::Sender<StoreResult<()>>;
type Answer = oneshot::Sender<StoreResult<bool>>;

/// A fleet request to the writer thread, with where its answer goes.
#[derive(Debug)]
pub(super) enum FleetOp {
    AddCounters {
        key: String,
        deltas: Vec<(String, i64)>,
        expires_at_ms: u64,
        tx: Done,
    },
    SetPut(String, String, i64, Done),
    SetRemove(String, String, Answer),
    DocPut(String, String, Vec<u8>, Done),
    DocSwap {
        collection: String,
        id: String,
        expected: Option<Vec<u8>>,
        new: Option<Vec<u8>>,
        tx: Answer,
    },
    DocRemove(String, String, Answer),
    Claim {
        key: String,
        holder: String,
        expires_at_ms: u64,
        tx: Answer,
    },
}

impl FleetOp {
    /// The request's reply slot, for a batch that failed before reaching it.
    pub(super) fn unreached(self) -> Reply {
        match self {
            FleetOp::AddCounters { tx, .. } | FleetOp::SetPut(.., tx) | FleetOp::DocPut(.., tx) => {
                Reply::Unit(tx, Ok(()))
            }
            FleetOp::SetRemove(.., tx)
            | FleetOp::DocSwap { tx, .. }
            | FleetOp::DocRemove(.., tx)
            | FleetOp::Claim { tx, .. } => Reply::Bool(tx, Ok(false)),
        }
    }
}

impl RedbStore {
    async fn fleet_write<T>(
        &self,
        op: impl FnOnce(oneshot::Sender<StoreResult<T>>) -> FleetOp,
    ) -> StoreResult<T> {
        let (tx, rx) = oneshot::channel();
        self.write(WriteOp::Fleet(op(tx)), rx).await
    }
}

#[async_trait]
impl FleetStore for RedbStore {
    async fn add_counters(
        &self,
        key: &str,
        deltas: &[(String, i64)],
        expires_at_ms: u64,
    ) -> StoreResult<()> {
        self.fleet_write(|tx| FleetOp::AddCounters {
            key: key.to_owned(),
            deltas: deltas.to_vec(),
            expires_at_ms,
            tx,
        })
        .await
    }

    async fn read_counters(&self, keys: &[String]) -> StoreResult<Vec<BTreeMap<String, i64>>> {
        let keys = keys.to_vec();
        self.read(move |txn| {
            let now = now_ms();
            let table = txn
                .open_table(FLEET_COUNTERS)
                .map_err(StoreError::backend)?;
            let mut maps = Vec::with_capacity(keys.len());
            for key in &keys {
                let found = table.get(key.as_str()).map_err(StoreError::backend)?;
                let stored = found.map(|b| decode_counters(b.value())).transpose()?;
                maps.push(match stored {
                    Some(stored) if stored.expires_at_ms > now => stored.counters,
                    // Expired, and not reclaimed yet.
                    _ => BTreeMap::new(),
                });
            }
            Ok(maps)
        })
        .await
    }

    async fn set_put(&self, set: &str, member: &str, score: i64) -> StoreResult<()> {
        self.fleet_write(|tx| FleetOp::SetPut(set.to_owned(), member.to_owned(), score, tx))
            .await
    }

    async fn set_remove(&self, set: &str, member: &str) -> StoreResult<bool> {
        self.fleet_write(|tx| FleetOp::SetRemove(set.to_owned(), member.to_owned(), tx))
            .await
    }

    async fn set_members(&self, set: &str) -> StoreResult<Vec<(String, i64)>> {
        let set = set.to_owned();
        let mut members = self
            .read(move |txn| {
                let table = txn.open_table(FLEET_SETS).map_err(StoreError::backend)?;
                let mut members = Vec::new();
                // By member: the sort below is stable, so equal scores stay that way.
                for row in table
                    .range((set.as_str(), "")..)
                    .map_err(StoreError::backend)?
                {
                    let (key, score) = row.map_err(StoreError::backend)?;
                    let (of, member) = key.value();
                    if of != set {
                        break;
                    }
                    members.push((member.to_owned(), score.value()));
                }
                Ok(members)
            })
            .await?;
        members.sort_by_key(|(_, score)| *score);
        Ok(members)
    }

    async fn doc_put(&self, collection: &str, id: &str, value: Vec<u8>) -> StoreResult<()> {
        self.fleet_write(|tx| FleetOp::DocPut(collection.to_owned(), id.to_owned(), value, tx))
            .await
    }

    async fn doc_swap(
        &self,
        collection: &str,
        id: &str,
        expected: Option<&[u8]>,
        new: Option<Vec<u8>>,
    ) -> StoreResult<bool> {
        self.fleet_write(|tx| FleetOp::DocSwap {
            collection: collection.to_owned(),
            id: id.to_owned(),
            expected: expected.map(<[u8]>::to_vec),
            new,
            tx,
        })
        .await
    }

    async fn doc_get(&self, collection: &str, id: &str) -> StoreResult<Option<Vec<u8>>> {
        let key = (collection.to_owned(), id.to_owned());
        self.read(move |txn| {
            let table = txn.open_table(FLEET_DOCS).map_err(StoreError::backend)?;
            let found = table
                .get((key.0.as_str(), key.1.as_str()))
                .map_err(StoreError::backend)?;
            Ok(found.map(|bytes| bytes.value().to_vec()))
        })
        .await
    }

    async fn doc_list(&self, collection: &str) -> StoreResult<Vec<(String, Vec<u8>)>> {
        let collection = collection.to_owned();
        self.read(move |txn| {
            let table = txn.open_table(FLEET_DOCS).map_err(StoreError::backend)?;
            let mut docs = Vec::new();
            // redb keeps keys in order: sorted by id already.
            let rows = table
                .range((collection.as_str(), "")..)
                .map_err(StoreError::backend)?;
            for row in rows {
                let (key, value) = row.map_err(StoreError::backend)?;
                let (of, id) = key.value();
                if of != collection {
                    break;
                }
                docs.push((id.to_owned(), value.value().to_vec()));
            }
            Ok(docs)
        })
        .await
    }

    async fn doc_remove(&self, collection: &str, id: &str) -> StoreResult<bool> {
        self.fleet_write(|tx| FleetOp::DocRemove(collection.to_owned(), id.to_owned(), tx))
            .await
    }

    async fn claim(&self, key: &str, holder: &str, expires_at_ms: u64) -> StoreResult<bool> {
        self.fleet_write(|tx| FleetOp::Claim {
            key: key.to_owned(),
            holder: holder.to_owned(),
            expires_at_ms,
            tx,
        })
        .await
    }
}
