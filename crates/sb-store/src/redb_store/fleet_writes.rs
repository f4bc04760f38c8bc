//! The fleet layer's requests ([`FleetOp`]) on the writer thread ([`apply`]): each
//! one's checks and journal entries ([`FleetEntry`]), the tables they go to
//! ([`FleetTables`]), and the reclaiming of expired counter maps and claims.
//!
//! Expired entries read as absent at once; their space is reclaimed by later writes:
//! [`FLEET_EXPIRY`] holds every counter map and claim by (expires at, kind, key), and
//! each write of counters or a claim first removes up to [`RECLAIM_PER_WRITE`] of the
//! expired ones from its front. So no write scans the tables, and as long as such
//! writes go on, expired entries leave faster than they come.

use redb::{ReadableTable, WriteTransaction};

use super::batch::{BatchWriter, Reply};
use super::fleet::{FleetOp, StoredCounters, decode_counters};
use super::journal::{Entry, FleetEntry};
use super::{FLEET_CLAIMS, FLEET_COUNTERS, FLEET_DOCS, FLEET_EXPIRY, FLEET_SETS};
use crate::fleet::{add_deltas, now_ms};
use crate::traits::{StoreError, StoreResult};

/// The kind of a counter map in [`FLEET_EXPIRY`].
const COUNTERS: u8 = 0;
/// The kind of a claim in [`FLEET_EXPIRY`].
const CLAIM: u8 = 1;
/// How many expired entries one write reclaims at most: enough to outpace the writes
/// that create them (each creates at most one), few enough that no write stalls.
pub(super) const RECLAIM_PER_WRITE: usize = 16;

/// The fleet layer's tables, open in one write transaction.
pub(super) struct FleetTables<'txn> {
    counters: redb::Table<'txn, &'static str, &'static [u8]>,
    sets: redb::Table<'txn, (&'static str, &'static str), i64>,
    docs: redb::Table<'txn, (&'static str, &'static str), &'static [u8]>,
    claims: redb::Table<'txn, &'static str, (u64, &'static str)>,
    expiry: redb::Table<'txn, (u64, u8, &'static str), ()>,
}

impl<'txn> FleetTables<'txn> {
    pub(super) fn open(txn: &'txn WriteTransaction) -> StoreResult<FleetTables<'txn>> {
        Ok(FleetTables {
            counters: txn
                .open_table(FLEET_COUNTERS)
                .map_err(StoreError::backend)?,
            sets: txn.open_table(FLEET_SETS).map_err(StoreError::backend)?,
            docs: txn.open_table(FLEET_DOCS).map_err(StoreError::backend)?,
            claims: txn.open_table(FLEET_CLAIMS).map_err(StoreError::backend)?,
            expiry: txn.open_table(FLEET_EXPIRY).map_err(StoreError::backend)?,
        })
    }

    /// Applies one journal entry: the writer and the replay share this.
    pub(super) fn apply(&mut self, entry: FleetEntry<'_>) -> StoreResult<()> {
        let done = match entry {
            FleetEntry::PutCounters { key, value } => self.counters.insert(key, value).map(drop),
            FleetEntry::RemoveCounters { key } => self.counters.remove(key).map(drop),
            FleetEntry::PutMember { set, member, score } => {
                self.sets.insert((set, member), score).map(drop)
            }
            FleetEntry::RemoveMember { set, member } => self.sets.remove((set, member)).map(drop),
            FleetEntry::PutDoc {
                collection,
                id,
                value,
            } => self.docs.insert((collection, id), value).map(drop),
            FleetEntry::RemoveDoc { collection, id } => {
                self.docs.remove((collection, id)).map(drop)
            }
            FleetEntry::PutClaim {
                key,
                holder,
                expires_at_ms,
            } => self.claims.insert(key, (expires_at_ms, holder)).map(drop),
            FleetEntry::RemoveClaim { key } => self.claims.remove(key).map(drop),
            FleetEntry::PutExpiry { at, kind, key } => {
                self.expiry.insert((at, kind, key), ()).map(drop)
            }
            FleetEntry::RemoveExpiry { at, kind, key } => {
                self.expiry.remove((at, kind, key)).map(drop)
            }
        };
        done.map_err(StoreError::backend)
    }

    /// When the counter map (`kind` [`COUNTERS`]) or claim at `key` expires, if stored.
    fn expiry_of(&self, kind: u8, key: &str) -> StoreResult<Option<u64>> {
        if kind == CLAIM {
            let claim = self.claims.get(key).map_err(StoreError::backend)?;
            return Ok(claim.map(|c| c.value().0));
        }
        let counters = self.counters.get(key).map_err(StoreError::backend)?;
        match counters {
            Some(bytes) => Ok(Some(decode_counters(bytes.value())?.expires_at_ms)),
            None => Ok(None),
        }
    }
}

fn write(writer: &mut BatchWriter<'_, '_>, entry: FleetEntry<'_>) -> StoreResult<()> {
    writer.write(Entry::Fleet(entry))
}

fn tables<'w, 'txn>(
    writer: &'w mut BatchWriter<'txn, '_>,
) -> StoreResult<&'w mut FleetTables<'txn>> {
    writer.tables()?.fleet()
}

/// Applies one request; `Err` only for a storage failure, which fails the batch.
pub(super) fn apply(writer: &mut BatchWriter<'_, '_>, op: FleetOp) -> StoreResult<Reply> {
    Ok(match op {
        FleetOp::AddCounters {
            key,
            deltas,
            expires_at_ms,
            tx,
        } => {
            let now = now_ms();
            reclaim_expired(writer, now)?;
            Reply::Unit(tx, add_counters(writer, &key, &deltas, expires_at_ms, now)?)
        }
        FleetOp::SetPut(set, member, score, tx) => {
            let entry = FleetEntry::PutMember {
                set: &set,
                member: &member,
                score,
            };
            write(writer, entry)?;
            Reply::Unit(tx, Ok(()))
        }
        FleetOp::SetRemove(set, member, tx) => {
            let key = (set.as_str(), member.as_str());
            let found = tables(writer)?.sets.get(key).map_err(StoreError::backend);
            let existed = found?.is_some();
            if existed {
                write(
                    writer,
                    FleetEntry::RemoveMember {
                        set: &set,
                        member: &member,
                    },
                )?;
            }
            Reply::Bool(tx, Ok(existed))
        }
        FleetOp::DocPut(collection, id, value, tx) => {
            let entry = FleetEntry::PutDoc {
                collection: &collection,
                id: &id,
                value: &value,
            };
            write(writer, entry)?;
            Reply::Unit(tx, Ok(()))
        }
        FleetOp::DocSwap {
            collection,
            id,
            expected,
            new,
            tx,
        } => {
            let current = stored_doc(writer, &collection, &id)?;
            // Read and written in this one transaction, by the one writer: atomic.
            let swapped = current == expected;
            match (&new, swapped) {
                (Some(value), true) => {
                    let entry = FleetEntry::PutDoc {
                        collection: &collection,
                        id: &id,
                        value,
                    };
                    write(writer, entry)?;
                }
                (None, true) if current.is_some() => {
                    write(
                        writer,
                        FleetEntry::RemoveDoc {
                            collection: &collection,
                            id: &id,
                        },
                    )?;
                }
                _ => {}
            }
            Reply::Bool(tx, Ok(swapped))
        }
        FleetOp::DocRemove(collection, id, tx) => {
            let existed = stored_doc(writer, &collection, &id)?.is_some();
            if existed {
                write(
                    writer,
                    FleetEntry::RemoveDoc {
                        collection: &collection,
                        id: &id,
                    },
                )?;
            }
            Reply::Bool(tx, Ok(existed))
        }
        FleetOp::Claim {
            key,
            holder,
            expires_at_ms,
            tx,
        } => {
            let now = now_ms();
            reclaim_expired(writer, now)?;
            Reply::Bool(tx, Ok(claim(writer, &key, &holder, expires_at_ms, now)?))
        }
    })
}

fn stored_doc(
    writer: &mut BatchWriter<'_, '_>,
    collection: &str,
    id: &str,
) -> StoreResult<Option<Vec<u8>>> {
    let found = tables(writer)?
        .docs
        .get((collection, id))
        .map_err(StoreError::backend)?;
    Ok(found.map(|bytes| bytes.value().to_vec()))
}

/// The inner `Err` is the refusal (a counter would overflow; nothing written), the
/// outer one a storage failure.
fn add_counters(
    writer: &mut BatchWriter<'_, '_>,
    key: &str,
    deltas: &[(String, i64)],
    expires_at_ms: u64,
    now: u64,
) -> StoreResult<StoreResult<()>> {
    let current = {
        let found = tables(writer)?
            .counters
            .get(key)
            .map_err(StoreError::backend)?;
        found
            .map(|bytes| decode_counters(bytes.value()))
            .transpose()?
    };
    let before = current.as_ref().map(|c| c.expires_at_ms);
    let live = current.filter(|c| c.expires_at_ms > now);
    // Adding nothing to nothing stores nothing, as in Redis.
    let keep = expires_at_ms > now && (live.is_some() || !deltas.is_empty());
    let counters = match add_deltas(live.map(|c| c.counters).unwrap_or_default(), deltas) {
        Ok(counters) => counters,
        Err(refused) => return Ok(Err(refused)),
    };
    if let Some(at) = before.filter(|at| !keep || *at != expires_at_ms) {
        let entry = FleetEntry::RemoveExpiry {
            at,
            kind: COUNTERS,
            key,
        };
        write(writer, entry)?;
    }
    if keep {
        let value = StoredCounters {
            expires_at_ms,
            counters,
        }
        .encode()?;
        write(writer, FleetEntry::PutCounters { key, value: &value })?;
        if before != Some(expires_at_ms) {
            let entry = FleetEntry::PutExpiry {
                at: expires_at_ms,
                kind: COUNTERS,
                key,
            };
            write(writer, entry)?;
        }
    } else if before.is_some() {
        write(writer, FleetEntry::RemoveCounters { key })?;
    }
    Ok(Ok(()))
}

/// Whether `holder` got the claim.
fn claim(
    writer: &mut BatchWriter<'_, '_>,
    key: &str,
    holder: &str,
    expires_at_ms: u64,
    now: u64,
) -> StoreResult<bool> {
    let before = tables(writer)?.expiry_of(CLAIM, key)?;
    if before.is_some_and(|at| at > now) {
        return Ok(false);
    }
    if let Some(at) = before {
        write(
            writer,
            FleetEntry::RemoveExpiry {
                at,
                kind: CLAIM,
                key,
            },
        )?;
    }
    if expires_at_ms > now {
        let entry = FleetEntry::PutClaim {
            key,
            holder,
            expires_at_ms,
        };
        write(writer, entry)?;
        let entry = FleetEntry::PutExpiry {
            at: expires_at_ms,
            kind: CLAIM,
            key,
        };
        write(writer, entry)?;
    } else if before.is_some() {
        // Won and expired at once: held by no one, as Redis does.
        write(writer, FleetEntry::RemoveClaim { key })?;
    }
    Ok(true)
}

/// Removes up to [`RECLAIM_PER_WRITE`] counter maps and claims expired by `now`, with
/// their entries in [`FLEET_EXPIRY`].
fn reclaim_expired(writer: &mut BatchWriter<'_, '_>, now: u64) -> StoreResult<()> {
    let due: Vec<(u64, u8, String)> = {
        let fleet = tables(writer)?;
        let rows = fleet
            .expiry
            .range((0, 0, "")..(now.saturating_add(1), 0, ""))
            .map_err(StoreError::backend)?;
        rows.take(RECLAIM_PER_WRITE)
            .map(|row| {
                let (key, _) = row.map_err(StoreError::backend)?;
                let (at, kind, key) = key.value();
                Ok((at, kind, key.to_owned()))
            })
            .collect::<StoreResult<_>>()?
    };
    for (at, kind, key) in &due {
        let (at, kind, key) = (*at, *kind, key.as_str());
        write(writer, FleetEntry::RemoveExpiry { at, kind, key })?;
        // The index moves with every expiry, so this holds; checked all the same, as
        // removing a live entry would lose it.
        if tables(writer)?.expiry_of(kind, key)? != Some(at) {
            continue;
        }
        let entry = match kind {
            CLAIM => FleetEntry::RemoveClaim { key },
            _ => FleetEntry::RemoveCounters { key },
        };
        write(writer, entry)?;
    }
    Ok(())
}
