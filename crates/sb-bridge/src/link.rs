//! What a bridged task keeps of its upstream task, in its own metadata (under
//! [`LINK_KEY`]) so that it is durable with the task: after a restart the bridge finds
//! the upstream task again, and knows which messages it already forwarded. It is also
//! the call's trajectory (seed "I6"): the upstream agent, its card version and hash,
//! the skill, the outcome and the latency.

use chrono::{DateTime, Utc};
use sb_protocol::{Metadata, Task, entry};
use serde::{Deserialize, Serialize};

/// The metadata key of the link.
pub const LINK_KEY: &str = "switchboard.bridge";

/// A bridged task's upstream side.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    /// The upstream agent's name, as its card says.
    pub agent: String,
    pub card_version: String,
    pub card_hash: String,
    /// The skill the caller asked for (`metadata.skill` or `metadata.skillHint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_context_id: Option<String>,
    /// Ids of this task's messages already sent upstream.
    #[serde(default)]
    pub forwarded: Vec<String>,
    pub started_at: DateTime<Utc>,
    /// Why the upstream did not take the conversation's first message, when it did
    /// not (learnt before the task existed; the turn rejects the task with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// How the last turn followed the upstream task: `stream`, `push` (notifications
    /// wake a read) or `poll`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub followed_by: Option<String>,
    /// How the upstream task ended, once it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
}

impl Link {
    /// The link stored on `task`, if it has one.
    pub fn of(task: &Task) -> Option<Link> {
        Link::in_metadata(task.metadata.as_ref()?)
    }

    /// The link among `metadata`'s entries, if they hold one.
    pub fn in_metadata(metadata: &Metadata) -> Option<Link> {
        entry::read(metadata, LINK_KEY)
    }

    /// The metadata entry that stores this link.
    pub fn entry(&self) -> Metadata {
        entry::entry(LINK_KEY, self)
    }

    pub fn forwarded(&self, message_id: &str) -> bool {
        self.forwarded.iter().any(|id| id == message_id)
    }
}

/// The upstream context of a Switchboard conversation: the same for every task of the
/// conversation, so the upstream agent sees them as one conversation too, and different
/// for every owner (one owner naming another's context reaches none of it upstream),
/// without a lookup: a UUID made from SHA-256 of the owner and the context.
pub fn upstream_context(owner: &str, context_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(owner.as_bytes())
        .chain_update([0])
        .chain_update(context_id.as_bytes())
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Uuid::new_v8(bytes).to_string()
}

#[cfg(test)]
mod tests {
    use super::upstream_context;

    #[test]
    fn a_conversation_has_one_upstream_context_per_owner() {
        let first = upstream_context("alice", "ctx-1");
        assert_eq!(first, upstream_context("alice", "ctx-1"));
        assert!(uuid::Uuid::parse_str(&first).is_ok(), "{first}");
        assert_ne!(first, upstream_context("bob", "ctx-1"));
        assert_ne!(first, upstream_context("alice", "ctx-2"));
        // The separator keeps owner and context apart: "ab"+"c" is not "a"+"bc".
        assert_ne!(upstream_context("ab", "c"), upstream_context("a", "bc"));
    }
}
