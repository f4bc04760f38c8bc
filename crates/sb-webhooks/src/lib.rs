//! The webhook dispatcher: push-notification configs per task (scoped like their task,
//! stored with the protocol version they were registered in) and the delivery of every
//! task event to them.
//!
//! # Layout
//! - [`configs`]: [`PushConfigService`] (create/get/list/delete) and its implementation
//!   over a [`sb_store::PushConfigStore`], which checks the task is visible to the caller
//!   and the URL is an allowed target before storing anything.
//! - [`dispatcher`]: [`Dispatcher`], which takes each committed event off the bus and
//!   delivers it to the task's configs, in order per task, with retries and backoff
//!   (its own module doc lists its parts: feed, chains, request, delivery, dead letters).
//! - [`metrics`]: the dispatcher's Prometheus counters.
//! - [`ssrf`]: the address policy and the resolver that enforces it at connect time.
//! - [`signing`]: Standard Webhooks signatures.
//! - [`admin`]: the operator's HTTP endpoints for dead letters (list, re-drive).

pub mod admin;
pub mod configs;
pub mod dispatcher;
pub mod metrics;
pub mod signing;
pub mod ssrf;

pub use configs::{LocalPushConfigs, MAX_CONFIGS_PER_TASK, PushConfigService};
pub use dispatcher::{DeliveryStatus, DispatchError, Dispatcher, DispatcherConfig};
pub use metrics::DeliveryMetrics;
pub use ssrf::AddressPolicy;
