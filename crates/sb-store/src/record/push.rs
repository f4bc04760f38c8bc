//! What the webhook dispatcher keeps: push-notification configs as stored, with the
//! protocol version they were registered with, and the deliveries that failed for good.

use chrono::{DateTime, Utc};
use sb_protocol::{TaskPushNotificationConfig, Version};
use serde::{Deserialize, Serialize};

/// A push-notification config as stored, with the protocol version it was registered
/// with, so deliveries can use the body that registrant understands (digest §7.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PushConfigRecord {
    pub config: TaskPushNotificationConfig,
    pub version: StoredVersion,
    pub owner: String,
    pub created_at: DateTime<Utc>,
    /// The delivery cursor: every event up to this sequence number has been delivered
    /// (or given up on). Starts at the task's number when the config is registered, so a
    /// new config gets the events after it; survives restarts, so nothing queued is lost.
    #[serde(default)]
    pub from_seq: u64,
}

/// Serializable mirror of [`Version`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoredVersion {
    V0_3,
    V1_0,
}

impl From<Version> for StoredVersion {
    fn from(v: Version) -> Self {
        match v {
            Version::V0_3 => Self::V0_3,
            Version::V1_0 => Self::V1_0,
        }
    }
}

impl From<StoredVersion> for Version {
    fn from(v: StoredVersion) -> Self {
        match v {
            StoredVersion::V0_3 => Self::V0_3,
            StoredVersion::V1_0 => Self::V1_0,
        }
    }
}

/// A webhook delivery that failed for good (retries exhausted, or refused with a 4xx),
/// kept for an operator to inspect and re-drive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    pub id: String,
    pub task_id: String,
    pub config_id: String,
    /// The event that was not delivered.
    pub seq: u64,
    /// The webhook's host (never the full URL: it may carry secrets in its path).
    pub host: String,
    pub reason: String,
    pub attempts: u32,
    pub failed_at: DateTime<Utc>,
}
