//! Webhook delivery: every committed task event goes to the task's push configs, read
//! live at delivery time, one event after another per task (parallel across tasks),
//! never inline with the producer.
//!
//! - `feed`: what wakes deliveries: the bus's events, a periodic sweep, a restart.
//! - `chains`: one chain of delivery jobs per task, which keeps its events in order,
//!   and the catch-up that brings each config's durable cursor up to the task's log.
//! - `request`: an event's body per protocol version, and the signed headers.
//! - `delivery`: one event to one config, posted until done ([`crate::post`]:
//!   attempts, retries on the workspace's backoff or after `Retry-After`, no redirects,
//!   only allowed addresses), logged and counted.
//! - `dead_letters`: deliveries that failed for good, kept for an operator to re-drive.

mod chains;
mod dead_letters;
mod delivery;
mod feed;
mod request;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use sb_store::{DeadLetterStore, IdMap, PushConfigStore, TaskStore};
use tokio::task::JoinHandle;

use crate::metrics::DeliveryMetrics;
use crate::post::webhook_client;
use crate::ssrf::AddressPolicy;

pub use crate::post::FailureReason;
pub use crate::status::{DeliveryStatus, DispatchError};
pub use feed::DISPATCHER_GROUP;

#[derive(Clone, Debug)]
pub struct DispatcherConfig {
    /// Waits before each retry (each jittered); their count is the number of retries.
    pub retry_delays: Vec<Duration>,
    pub attempt_timeout: Duration,
    pub policy: Arc<AddressPolicy>,
    /// Per agent: the key that signs its webhooks (Standard Webhooks `webhook-signature`).
    pub signing_secrets: Arc<crate::signing::SigningSecrets>,
    pub metrics: Arc<DeliveryMetrics>,
    /// How often every task with a push config is checked for deliveries owed, whatever
    /// the bus said. The bus is the fast path; this catches what it cannot see, such as
    /// an event committed while its task's config was being created (read at seq N,
    /// stored after N+1 was published): without it, the last events of a task that then
    /// finishes would never be sent.
    pub sweep_every: Duration,
}

/// [`DispatcherConfig::sweep_every`] by default: a safety net, so rare, not a poll.
pub const DEFAULT_SWEEP: Duration = Duration::from_secs(30);

impl Default for DispatcherConfig {
    fn default() -> Self {
        DispatcherConfig {
            retry_delays: vec![
                Duration::from_secs(1),
                Duration::from_secs(3),
                Duration::from_secs(9),
            ],
            attempt_timeout: Duration::from_secs(10),
            policy: Arc::new(AddressPolicy::default()),
            signing_secrets: Arc::default(),
            metrics: Arc::default(),
            sweep_every: DEFAULT_SWEEP,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Dispatcher {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    configs: Arc<dyn PushConfigStore>,
    dead: Arc<dyn DeadLetterStore>,
    tasks: Arc<dyn TaskStore>,
    client: reqwest::Client,
    config: DispatcherConfig,
    /// The last delivery job of each task: the next one waits for it, which keeps each
    /// task's deliveries in event order.
    chains: Mutex<IdMap<String, JoinHandle<()>>>,
}

impl Dispatcher {
    pub fn new(
        configs: Arc<dyn PushConfigStore>,
        dead: Arc<dyn DeadLetterStore>,
        tasks: Arc<dyn TaskStore>,
        config: DispatcherConfig,
    ) -> Result<Dispatcher, DispatchError> {
        let client = webhook_client(config.policy.clone(), config.attempt_timeout)
            .map_err(DispatchError::Client)?;
        let inner = Inner {
            configs,
            dead,
            tasks,
            client,
            config,
            chains: Mutex::new(IdMap::default()),
        };
        Ok(Dispatcher {
            inner: Arc::new(inner),
        })
    }

    /// Where each of the task's push configs stands: delivered (or given up) through
    /// which event, out of how many the task has.
    pub async fn delivery_status(
        &self,
        task_id: &str,
    ) -> Result<Vec<DeliveryStatus>, DispatchError> {
        let configs = self.inner.configs.list_push_configs(task_id).await?;
        let task_seq = self
            .inner
            .tasks
            .get(task_id)
            .await?
            .map_or(0, |record| record.seq);
        Ok(configs
            .into_iter()
            .map(|record| DeliveryStatus {
                config_id: record.config.id.clone().unwrap_or_default(),
                host: host_of(&record.config.url),
                delivered_through: record.from_seq,
                task_seq,
            })
            .collect())
    }
}

/// A webhook URL's host, for logs and operators (never the whole URL: its path may carry
/// secrets).
fn host_of(url: &str) -> String {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default()
}
