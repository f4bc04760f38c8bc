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
//! - [`post`]: one signed webhook posted until done (attempts, retries, `Retry-After`),
//!   what the dispatcher and any other announcer send with.
//! - [`admin`]: the operator's HTTP endpoints for dead letters (list, re-drive).
//! - [`status`]: what a dispatcher reports (delivery status, errors), in process or over
//!   the internal API.
//!
//! Everything that delivers (the dispatcher, the SSRF policy, signing, the local
//! push-config service, and with them reqwest and rustls) is the `delivery` feature, on
//! by default; a crate that only calls the services (the internal API's clients, a
//! worker) depends without it.

pub mod admin;
pub mod configs;
#[cfg(feature = "delivery")]
pub mod dispatcher;
#[cfg(feature = "delivery")]
pub mod metrics;
#[cfg(feature = "delivery")]
pub mod post;
#[cfg(feature = "delivery")]
pub mod signing;
#[cfg(feature = "delivery")]
pub mod ssrf;
pub mod status;

#[cfg(feature = "delivery")]
pub use configs::LocalPushConfigs;
pub use configs::{MAX_CONFIGS_PER_TASK, PushConfigService};
#[cfg(feature = "delivery")]
pub use dispatcher::{Dispatcher, DispatcherConfig};
#[cfg(feature = "delivery")]
pub use metrics::DeliveryMetrics;
#[cfg(feature = "delivery")]
pub use ssrf::AddressPolicy;
pub use status::{DeliveryStatus, DispatchError};
