//! What a dispatcher reports, in process or over the internal API: how far a push
//! config's deliveries have come, and why a request to the dispatcher failed.

use sb_store::StoreError;

/// How far one push config's deliveries have come.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryStatus {
    pub config_id: String,
    /// The webhook's host (never the full URL: it may carry secrets in its path).
    pub host: String,
    /// Every event up to this sequence number was delivered or given up on.
    pub delivered_through: u64,
    /// The task's latest event.
    pub task_seq: u64,
}

/// What keeps the dispatcher from doing what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[cfg(feature = "delivery")]
    #[error("cannot build the webhook HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("the delivery store is unavailable: {0}")]
    Store(#[from] StoreError),
    /// A dispatcher in another process (the split deployment) could not be asked.
    #[error("the dispatcher service is unreachable: {0}")]
    Unreachable(String),
}
