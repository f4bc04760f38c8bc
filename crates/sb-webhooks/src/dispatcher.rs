//! Webhook delivery: every committed task event goes to the task's push configs, read
//! live at delivery time, one event after another per task (parallel across tasks),
//! never inline with the producer.
//!
//! Each attempt has a timeout; failures that can succeed later (connection errors,
//! timeouts, 5xx, 408, 429) are retried after the configured delays with jitter, or
//! after `Retry-After` when the receiver asks for longer. Redirects are not followed, and
//! connections go only to addresses the [`AddressPolicy`] allows.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument;

use parking_lot::Mutex;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use sb_protocol::v03::{self, Dialect03};
use sb_protocol::{StreamResponse, Version};
use sb_store::{
    DeadLetter, DeadLetterStore, EventBus, PushConfigRecord, PushConfigStore, StoredEvent,
    TaskStore,
};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::signing::sign;
use crate::ssrf::{AddressPolicy, GuardedResolver};

#[derive(Clone, Debug)]
pub struct DispatcherConfig {
    /// Waits before each retry; their count is the number of retries.
    pub retry_delays: Vec<Duration>,
    pub attempt_timeout: Duration,
    pub policy: Arc<AddressPolicy>,
    /// Per agent: the key that signs its webhooks (Standard Webhooks `webhook-signature`).
    pub signing_secrets: HashMap<String, Vec<u8>>,
    pub metrics: Arc<DeliveryMetrics>,
    /// How often every task with a push config is checked for deliveries owed, whatever
    /// the bus said. The bus is the fast path; this catches what it cannot see, such as
    /// an event committed while its task's config was being created (read at seq N,
    /// stored after N+1 was published): without it, the last events of a task that then
    /// finishes would never be sent.
    pub sweep_every: Duration,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
pub struct AttemptLabels {
    /// `delivered`, `refused` (4xx, not retried) or `failed` (retried if attempts remain).
    pub outcome: String,
}

/// The dispatcher's Prometheus metrics.
#[derive(Debug, Default)]
pub struct DeliveryMetrics {
    attempts: prometheus_client::metrics::family::Family<
        AttemptLabels,
        prometheus_client::metrics::counter::Counter,
    >,
    dead_letters: prometheus_client::metrics::counter::Counter,
}

impl DeliveryMetrics {
    pub fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.register(
            "switchboard_webhook_attempts",
            "Webhook delivery attempts by outcome",
            self.attempts.clone(),
        );
        registry.register(
            "switchboard_webhook_dead_letters",
            "Deliveries that failed for good",
            self.dead_letters.clone(),
        );
    }

    fn attempt(&self, outcome: &str) {
        self.attempts
            .get_or_create(&AttemptLabels {
                outcome: outcome.to_owned(),
            })
            .inc();
    }
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
            signing_secrets: HashMap::new(),
            metrics: Arc::default(),
            sweep_every: DEFAULT_SWEEP,
        }
    }
}

/// The longest `Retry-After` honoured; a receiver asking for more gets the normal delay.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// The bus group of dispatcher replicas: each event wakes one of them.
pub const DISPATCHER_GROUP: &str = "dispatcher";

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
    chains: Mutex<sb_store::IdMap<String, JoinHandle<()>>>,
}

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

/// A delivery that failed for good.
struct Failure {
    host: String,
    reason: String,
    attempts: usize,
}

/// What one attempt came to.
enum Attempt {
    Delivered,
    Retry {
        reason: String,
        after: Option<Duration>,
    },
    GiveUp(String),
}

impl Dispatcher {
    pub fn new(
        configs: Arc<dyn PushConfigStore>,
        dead: Arc<dyn DeadLetterStore>,
        tasks: Arc<dyn TaskStore>,
        config: DispatcherConfig,
    ) -> Result<Dispatcher, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .dns_resolver(Arc::new(GuardedResolver::new(config.policy.clone())))
            .timeout(config.attempt_timeout)
            .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the webhook HTTP client: {e}"))?;
        let inner = Inner {
            configs,
            dead,
            tasks,
            client,
            config,
            chains: Mutex::new(sb_store::IdMap::default()),
        };
        Ok(Dispatcher {
            inner: Arc::new(inner),
        })
    }

    /// Delivers until `shutdown`: first whatever was queued before a restart (every
    /// config whose cursor is behind its task's log), then each event from the bus.
    /// Returns once it follows the bus, so every event committed after that is served.
    pub async fn spawn(
        &self,
        bus: &dyn EventBus,
        shutdown: CancellationToken,
    ) -> Result<JoinHandle<()>, sb_store::StoreError> {
        let mut events = bus.subscribe_all(DISPATCHER_GROUP).await?;
        let dispatcher = self.clone();
        let every = self.inner.config.sweep_every;
        let mut sweep = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Ok(tokio::spawn(async move {
            dispatcher.catch_up_all().await;
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    _ = sweep.tick() => dispatcher.catch_up_all().await,
                    received = events.recv() => {
                        // A catch-up delivers everything after the cursor: the events of a
                        // burst need one per task, not one each.
                        let mut tasks = sb_store::IdSet::default();
                        let mut closed = false;
                        let mut last_task: Option<std::sync::Arc<str>> = None;
                        for received in sb_store::take_burst(received, &mut events) {
                            match received {
                                // A commit's events come together: one look per run.
                                Ok(event) if last_task.as_ref() == Some(&event.task_id) => {}
                                Ok(event) => {
                                    tasks.insert(event.task_id.to_string());
                                    last_task = Some(event.task_id);
                                }
                                Err(broadcast::error::RecvError::Lagged(missed)) => {
                                    // The log has what the bus dropped; the cursors say what is owed.
                                    tracing::warn!(missed, "webhook dispatcher fell behind the event bus; catching up from the log");
                                    dispatcher.catch_up_all().await;
                                }
                                Err(broadcast::error::RecvError::Closed) => closed = true,
                            }
                        }
                        for task_id in dispatcher.with_push_configs(tasks).await {
                            dispatcher.enqueue(task_id);
                        }
                        if closed {
                            break;
                        }
                    }
                }
            }
        }))
    }

    async fn catch_up_all(&self) {
        match self.inner.configs.list_all_push_configs().await {
            Ok(records) => {
                let tasks: std::collections::BTreeSet<String> =
                    records.into_iter().map(|r| r.config.task_id).collect();
                for task_id in tasks {
                    self.enqueue(task_id);
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot read push configs to resume deliveries"),
        }
    }

    /// The tasks of a burst that may have configs (all of them if the store cannot say).
    async fn with_push_configs(&self, tasks: sb_store::IdSet<String>) -> Vec<String> {
        let tasks: Vec<String> = tasks.into_iter().collect();
        match self.inner.configs.with_push_configs(&tasks).await {
            Ok(with) => with,
            Err(e) => {
                tracing::warn!(error = %e, "cannot look up which tasks have push configs; reading each");
                tasks
            }
        }
    }

    /// Queues a catch-up of the task's configs behind the task's earlier deliveries.
    pub fn enqueue(&self, task_id: String) {
        if !self.inner.configs.may_have_push_configs(&task_id) {
            return;
        }
        let inner = self.inner.clone();
        let job_task = task_id.clone();
        self.chain(task_id, async move { inner.catch_up(&job_task).await });
    }

    /// Runs `job` after every job already queued for the task, keeping each task's
    /// deliveries in order (parallel across tasks).
    fn chain(&self, task_id: String, job: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut chains = self.inner.chains.lock();
        let previous = chains.remove(&task_id);
        let handle = tokio::spawn(async move {
            if let Some(previous) = previous {
                let _ = previous.await;
            }
            job.await;
        });
        chains.insert(task_id, handle);
        if chains.len() > 1024 {
            chains.retain(|_, job| !job.is_finished());
        }
    }

    /// Where each of the task's push configs stands: delivered (or given up) through
    /// which event, out of how many the task has.
    pub async fn delivery_status(&self, task_id: &str) -> Result<Vec<DeliveryStatus>, String> {
        let configs = self
            .inner
            .configs
            .list_push_configs(task_id)
            .await
            .map_err(|e| e.to_string())?;
        let task_seq = match self.inner.tasks.get(task_id).await {
            Ok(Some(record)) => record.seq,
            Ok(None) => 0,
            Err(e) => return Err(e.to_string()),
        };
        Ok(configs
            .into_iter()
            .map(|record| DeliveryStatus {
                config_id: record.config.id.clone().unwrap_or_default(),
                host: reqwest::Url::parse(&record.config.url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .unwrap_or_default(),
                delivered_through: record.from_seq,
                task_seq,
            })
            .collect())
    }

    /// The deliveries that failed for good, oldest first.
    pub async fn dead_letters(&self) -> Result<Vec<DeadLetter>, String> {
        self.inner
            .dead
            .list_dead_letters()
            .await
            .map_err(|e| e.to_string())
    }

    /// Queues a dead letter for one more delivery (behind the task's other deliveries).
    /// Returns whether the letter existed.
    pub async fn redrive(&self, id: &str) -> Result<bool, String> {
        let Some(letter) = self
            .inner
            .dead
            .take_dead_letter(id)
            .await
            .map_err(|e| e.to_string())?
        else {
            return Ok(false);
        };
        let inner = self.inner.clone();
        let task_id = letter.task_id.clone();
        self.chain(task_id, async move { inner.redeliver(letter).await });
        Ok(true)
    }

    /// Waits for queued deliveries, at most `grace`. Returns whether all finished.
    pub async fn drain(&self, grace: Duration) -> bool {
        let jobs: Vec<JoinHandle<()>> = self
            .inner
            .chains
            .lock()
            .drain()
            .map(|(_, job)| job)
            .collect();
        tokio::time::timeout(grace, futures::future::join_all(jobs))
            .await
            .is_ok()
    }
}

impl Inner {
    /// Brings every config of the task up to date with its event log, event by event,
    /// moving each config's durable cursor after each batch of events it read.
    async fn catch_up(&self, task_id: &str) {
        let configs = match self.configs.list_push_configs(task_id).await {
            Ok(configs) => configs,
            Err(e) => {
                tracing::error!(task_id, error = %e, "cannot read push configs; deliveries wait for the next event");
                return;
            }
        };
        let mut secret = None;
        for config in configs {
            let config_id = config.config.id.clone().unwrap_or_default();
            let mut cursor = config.from_seq;
            'config: loop {
                let events = match self.tasks.events_after(task_id, cursor, 64).await {
                    Ok(events) if !events.is_empty() => events,
                    Ok(_) => break,
                    Err(e) => {
                        tracing::error!(task_id, error = %e, "cannot read the event log; deliveries wait for the next event");
                        return;
                    }
                };
                let mut delivered = None;
                for event in events {
                    // The live config, on every delivery: a changed URL or credential
                    // applies at once, a deleted config stops receiving.
                    let Ok(Some(live)) = self.configs.get_push_config(task_id, &config_id).await
                    else {
                        break 'config;
                    };
                    if secret.is_none() {
                        secret = Some(self.signing_secret(task_id).await);
                    }
                    if let Some(body) = self.body(&live, &event).await {
                        let signing = secret.as_ref().and_then(|s| s.as_deref());
                        if let Err(failure) = self.deliver(&live, &event, body, signing).await {
                            self.bury(&event, &config_id, failure).await;
                        }
                    }
                    delivered = Some(event.seq);
                }
                // One durable cursor write per batch read, not per delivery: after a
                // crash, at most that batch is sent again (deliveries are at least once).
                if let Some(seq) = delivered {
                    cursor = seq;
                    if let Err(e) = self
                        .configs
                        .advance_push_cursor(task_id, &config_id, cursor)
                        .await
                    {
                        tracing::error!(task_id, error = %e, "cannot record deliveries; they may be sent again after a restart");
                    }
                }
            }
        }
    }

    /// Keeps a failed delivery in the dead-letter list; the config's cursor moves on, so
    /// one dead receiver does not hold back the task's later events.
    async fn bury(&self, event: &StoredEvent, config_id: &str, failure: Failure) {
        let letter = DeadLetter {
            id: sb_protocol::new_id(),
            task_id: event.task_id.to_string(),
            config_id: config_id.to_owned(),
            seq: event.seq,
            host: failure.host,
            reason: failure.reason,
            attempts: u32::try_from(failure.attempts).unwrap_or(u32::MAX),
            failed_at: chrono::Utc::now(),
        };
        self.config.metrics.dead_letters.inc();
        if let Err(e) = self.dead.put_dead_letter(letter).await {
            tracing::error!(task_id = %event.task_id, seq = event.seq, error = %e, "cannot record a dead letter");
        }
    }

    /// Delivers one stored event to one config again (a dead letter's re-drive).
    async fn redeliver(&self, letter: DeadLetter) {
        let event = match self
            .tasks
            .events_after(&letter.task_id, letter.seq.saturating_sub(1), 1)
            .await
        {
            Ok(mut events) if events.first().is_some_and(|e| e.seq == letter.seq) => {
                events.remove(0)
            }
            _ => {
                tracing::warn!(task_id = %letter.task_id, seq = letter.seq, "the event of a re-driven delivery is gone");
                return;
            }
        };
        let Ok(Some(live)) = self
            .configs
            .get_push_config(&letter.task_id, &letter.config_id)
            .await
        else {
            tracing::warn!(task_id = %letter.task_id, "the config of a re-driven delivery is gone");
            return;
        };
        let secret = self.signing_secret(&letter.task_id).await;
        if let Some(body) = self.body(&live, &event).await
            && let Err(failure) = self.deliver(&live, &event, body, secret.as_deref()).await
        {
            self.bury(&event, &letter.config_id, failure).await;
        }
    }

    async fn signing_secret(&self, task_id: &str) -> Option<Vec<u8>> {
        if self.config.signing_secrets.is_empty() {
            return None;
        }
        let record = self.tasks.get(task_id).await.ok().flatten()?;
        self.config.signing_secrets.get(&record.agent).cloned()
    }

    /// 1.0 receivers get the event as a `StreamResponse`; 0.3 receivers get the whole
    /// task in 0.3 JSON, as the 0.3 SDKs send it (digest §7.3).
    async fn body(&self, record: &PushConfigRecord, event: &StoredEvent) -> Option<Vec<u8>> {
        let json = match Version::from(record.version) {
            // The event's JSON, made once for its streams and deliveries alike.
            Version::V1_0 => return Some(event.json.render(&event.event).as_bytes().to_vec()),
            Version::V0_3 => match &*event.event {
                StreamResponse::Task(task) => v03::task_to_v03(task, Dialect03::KindJson),
                _ => {
                    let current = self.tasks.get(&event.task_id).await.ok().flatten()?;
                    v03::task_to_v03(&current.task, Dialect03::KindJson)
                }
            },
        };
        serde_json::to_vec(&json).ok()
    }

    /// The headers of one attempt, signed (when the config has a secret) over exactly the
    /// id and timestamp they carry.
    fn headers(
        config: &sb_protocol::TaskPushNotificationConfig,
        webhook_id: &str,
        timestamp: i64,
        body: &[u8],
        secret: Option<&[u8]>,
    ) -> Result<HeaderMap, String> {
        let mut headers = HeaderMap::new();
        let timestamp = timestamp.to_string();
        if let Some(secret) = secret {
            let signature = sign(secret, webhook_id, &timestamp, body);
            headers.insert(
                "webhook-signature",
                HeaderValue::from_str(&signature).map_err(|e| e.to_string())?,
            );
        }
        let value = |v: &str| {
            HeaderValue::from_str(v).map_err(|_| "a header value has invalid characters".to_owned())
        };
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert("webhook-id", value(webhook_id)?);
        headers.insert("webhook-timestamp", value(&timestamp)?);
        if let Some(auth) = &config.authentication
            && let Some(credentials) = auth.credentials.as_deref().filter(|c| !c.is_empty())
        {
            headers.insert(
                reqwest::header::AUTHORIZATION,
                value(&format!("{} {credentials}", auth.scheme))?,
            );
        }
        if let Some(token) = config.token.as_deref().filter(|t| !t.is_empty()) {
            headers.insert("x-a2a-notification-token", value(token)?);
        }
        Ok(headers)
    }

    async fn attempt(
        &self,
        url: reqwest::Url,
        mut headers: HeaderMap,
        body: bytes::Bytes,
    ) -> (Attempt, Option<u16>) {
        // The receiver can join the trace of the request that caused the event.
        sb_telemetry::inject(&mut headers);
        let response = match self
            .client
            .post(url)
            .headers(headers)
            .body(body)
            .send()
            .await
        {
            Ok(response) => response,
            Err(e) => {
                let reason = if e.is_timeout() {
                    "timed out".to_owned()
                } else {
                    format!("could not connect: {e}")
                };
                return (
                    Attempt::Retry {
                        reason,
                        after: None,
                    },
                    None,
                );
            }
        };
        let status = response.status();
        let code = Some(status.as_u16());
        if status.is_success() {
            return (Attempt::Delivered, code);
        }
        let retryable = status.is_server_error()
            || status == StatusCode::REQUEST_TIMEOUT
            || status == StatusCode::TOO_MANY_REQUESTS;
        let reason = format!("receiver answered {status}");
        if !retryable {
            return (Attempt::GiveUp(reason), code);
        }
        let after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(retry_after)
            .filter(|d| *d <= MAX_RETRY_AFTER);
        (Attempt::Retry { reason, after }, code)
    }

    async fn deliver(
        &self,
        record: &PushConfigRecord,
        event: &StoredEvent,
        body: Vec<u8>,
        secret: Option<&[u8]>,
    ) -> Result<(), Failure> {
        let url = record.config.url.as_str();
        let state = event
            .event
            .state()
            .map(|s| s.as_str())
            .unwrap_or("ARTIFACT_UPDATE");
        // Checked again at send time: the config may predate a stricter policy, and a
        // literal address never reaches the resolver.
        let target = match self.config.policy.check_url(url) {
            Ok(target) => target,
            Err(reason) => {
                let host = reqwest::Url::parse(url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .unwrap_or_default();
                tracing::warn!(task_id = %event.task_id, host, reason, "webhook target not allowed; not sent");
                return Err(Failure {
                    host,
                    reason: format!("target not allowed: {reason}"),
                    attempts: 0,
                });
            }
        };
        let host = target.host_str().unwrap_or_default().to_owned();
        let span = tracing::info_span!("webhook_delivery", task_id = %event.task_id, seq = event.seq, host = %host);
        sb_telemetry::follow(&span, event.traceparent.as_deref());
        let attempts = self.config.retry_delays.len() + 1;
        // Shared by the attempts, not copied for each.
        let body = bytes::Bytes::from(body);
        // Standard Webhooks: receivers de-duplicate by id, which is also the stream's seq.
        let webhook_id = format!("{}:{}", event.task_id, event.seq);
        for attempt in 1..=attempts {
            // Per attempt, so the signed timestamp is fresh on every retry.
            let now = chrono::Utc::now().timestamp();
            let headers = match Self::headers(&record.config, &webhook_id, now, &body, secret) {
                Ok(headers) => headers,
                Err(reason) => {
                    tracing::error!(task_id = %event.task_id, host, reason, "webhook not sent");
                    return Err(Failure {
                        host,
                        reason,
                        attempts: attempt - 1,
                    });
                }
            };
            let (outcome, status) = self
                .attempt(target.clone(), headers, body.clone())
                .instrument(span.clone())
                .await;
            let status = status.map(|s| s.to_string()).unwrap_or_else(|| "-".into());
            match outcome {
                Attempt::Delivered => {
                    self.config.metrics.attempt("delivered");
                    tracing::info!(task_id = %event.task_id, seq = event.seq, state, host, status, attempt, "webhook delivered");
                    return Ok(());
                }
                Attempt::GiveUp(reason) => {
                    self.config.metrics.attempt("refused");
                    tracing::warn!(task_id = %event.task_id, seq = event.seq, state, host, status, attempt, reason, "webhook refused; not retried");
                    return Err(Failure {
                        host,
                        reason,
                        attempts: attempt,
                    });
                }
                Attempt::Retry { reason, after } => {
                    self.config.metrics.attempt("failed");
                    tracing::info!(task_id = %event.task_id, seq = event.seq, state, host, status, attempt, reason, "webhook attempt failed");
                    let Some(delay) = self.config.retry_delays.get(attempt - 1) else {
                        tracing::error!(task_id = %event.task_id, seq = event.seq, state, host, attempts, "webhook delivery failed after every retry");
                        return Err(Failure {
                            host,
                            reason,
                            attempts: attempt,
                        });
                    };
                    tokio::time::sleep(after.unwrap_or_default().max(jittered(*delay))).await;
                }
            }
        }
        Err(Failure {
            host,
            reason: "no attempt was made".into(),
            attempts: 0,
        })
    }
}

/// Reads `Retry-After`: delay-seconds or an HTTP date (RFC 9110 §10.2.3).
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    (when.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .ok()
}

/// The delay, spread by ±20% so receivers that failed together do not retry together.
fn jittered(delay: Duration) -> Duration {
    delay.mul_f64(0.8 + 0.4 * fastrand::f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_or_a_date() {
        assert_eq!(retry_after(" 7 "), Some(Duration::from_secs(7)));
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(30))
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        let parsed = retry_after(&soon).unwrap();
        assert!(
            parsed > Duration::from_secs(25) && parsed <= Duration::from_secs(30),
            "{parsed:?}"
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            None,
            "a past date means no extra wait"
        );
        assert_eq!(retry_after("soon"), None);
    }

    /// The signature covers the very id and timestamp the headers carry (the timestamp
    /// was once read from the clock twice, so a second boundary broke the signature).
    #[test]
    fn the_signature_covers_the_sent_id_and_timestamp() {
        let config = sb_protocol::TaskPushNotificationConfig {
            tenant: None,
            id: None,
            task_id: "t1".into(),
            url: "http://127.0.0.1:9/hook".into(),
            token: Some("tok".into()),
            authentication: None,
        };
        let headers =
            Inner::headers(&config, "t1:3", 1_700_000_000, b"{}", Some(b"secret")).unwrap();
        let header = |name: &str| headers.get(name).unwrap().to_str().unwrap().to_owned();
        assert_eq!(header("webhook-id"), "t1:3");
        assert_eq!(header("webhook-timestamp"), "1700000000");
        assert_eq!(
            header("webhook-signature"),
            sign(b"secret", "t1:3", "1700000000", b"{}")
        );
        assert_eq!(header("x-a2a-notification-token"), "tok");
    }

    #[test]
    fn jitter_stays_within_bounds() {
        for _ in 0..100 {
            let d = jittered(Duration::from_secs(10));
            assert!(
                d >= Duration::from_secs(8) && d <= Duration::from_secs(12),
                "{d:?}"
            );
        }
    }
}
