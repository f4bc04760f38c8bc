//! What a journal frame holds: a run of [`Entry`] values, each one key-value write,
//! postcard-encoded.

use serde::{Deserialize, Serialize};

use crate::traits::{StoreError, StoreResult};

/// One key-value write, exactly as the writer applied it to redb; replaying a frame
/// applies its entries again, through the same code. Values go through `serde_bytes`:
/// serde writes a plain `&[u8]` one element at a time (postcard's encoding of a byte
/// sequence is the same either way, so journals written before read the same).
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub(crate) enum Entry<'a> {
    PutTask {
        id: &'a str,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    /// A commit's events under its first sequence number
    /// ([`runs`](crate::redb_store::runs)).
    PutEvent {
        task_id: &'a str,
        seq: u64,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    /// The task's record and every event of it.
    RemoveTask {
        id: &'a str,
    },
    PutPush {
        task_id: &'a str,
        config_id: &'a str,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    RemovePush {
        task_id: &'a str,
        config_id: &'a str,
    },
    /// Every push config of the task.
    RemoveTaskPush {
        task_id: &'a str,
    },
    PutDead {
        id: &'a str,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    RemoveDead {
        id: &'a str,
    },
    /// The task finished at `at` (milliseconds since the epoch): its entry in the index
    /// the TTL eviction sweeps. (Variants only ever go at the end: a journal written
    /// before one was added still reads the same.)
    PutFinished {
        at: u64,
        id: &'a str,
    },
    RemoveFinished {
        at: u64,
        id: &'a str,
    },
    /// The task is running or waiting: its entry in the index recovery reads at startup.
    PutUnfinished {
        id: &'a str,
    },
    RemoveUnfinished {
        id: &'a str,
    },
    /// The registry's stored form of one agent ([`crate::traits::RegistryStore`]).
    PutAgent {
        name: &'a str,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    RemoveAgent {
        name: &'a str,
    },
    /// One of the registry's store-wide values (the card-signing key).
    PutRegistryMeta {
        key: &'a str,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    /// A write of the fleet layer's tables ([`crate::FleetStore`]): one variant here,
    /// so their own variants can grow without crowding this list.
    Fleet(#[serde(borrow)] FleetEntry<'a>),
}

/// One key-value write of the fleet layer's tables ([`crate::redb_store::fleet`]).
/// (Like [`Entry`]'s, new variants only ever go at the end.)
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub(crate) enum FleetEntry<'a> {
    /// A counter map, with its expiry, in the fleet module's encoding.
    PutCounters {
        key: &'a str,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    RemoveCounters {
        key: &'a str,
    },
    PutMember {
        set: &'a str,
        member: &'a str,
        score: i64,
    },
    RemoveMember {
        set: &'a str,
        member: &'a str,
    },
    PutDoc {
        collection: &'a str,
        id: &'a str,
        #[serde(borrow, with = "serde_bytes")]
        value: &'a [u8],
    },
    RemoveDoc {
        collection: &'a str,
        id: &'a str,
    },
    PutClaim {
        key: &'a str,
        holder: &'a str,
        expires_at_ms: u64,
    },
    RemoveClaim {
        key: &'a str,
    },
    /// The counter map or claim (`kind`) at `key` expires at `at`: its entry in the
    /// index later writes reclaim expired entries from.
    PutExpiry {
        at: u64,
        kind: u8,
        key: &'a str,
    },
    RemoveExpiry {
        at: u64,
        kind: u8,
        key: &'a str,
    },
}

/// The decoded entries of one frame's payload.
pub(crate) fn entries(payload: &[u8]) -> StoreResult<Vec<Entry<'_>>> {
    let mut rest = payload;
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (entry, tail) = postcard::take_from_bytes::<Entry<'_>>(rest)
            .map_err(|e| StoreError::Backend(format!("corrupt journal entry: {e}")))?;
        out.push(entry);
        rest = tail;
    }
    Ok(out)
}
