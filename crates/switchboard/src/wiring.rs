//! What both deployments build the same way from the configuration: the task-state
//! service, the webhook dispatcher, the deadline keeper, a gateway's state and routes,
//! and the port served until shutdown. [`crate::serve()`] hands them services running in
//! its own process; [`crate::split`] hands a gateway gRPC clients of the services that
//! run elsewhere, and builds only the services its process runs.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use sb_fleet::{
    Announcer, FleetMetrics, FleetService, FleetTransitions, OutcomeRecorder, PosterSettings,
    WaitingIndex,
};
use sb_gateway::auth::Authenticators;
use sb_gateway::fleet::FleetEdge;
use sb_gateway::{AppState, EdgeLimits, Health};
use sb_store::EventBus;
use sb_tasks::{DeadlineConfig, DeadlineKeeper, LocalTaskService};
use sb_webhooks::admin::{DeadLetterAdmin, admin_router};
use sb_webhooks::dispatcher::DEFAULT_SWEEP;
use sb_webhooks::signing::{SigningSecrets, parse_secret};
use sb_webhooks::{AddressPolicy, DeliveryMetrics, Dispatcher, DispatcherConfig};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::backend::Backend;
use crate::config::Config;
use crate::observe::metrics_router;

/// Where a principal's open tasks are counted against
/// `max_tasks_in_flight_per_principal`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum OpenTasks {
    /// In this process, the only one creating tasks.
    Here,
    /// In the shared backend, with each create: every replica creates tasks.
    Shared,
}

/// The task-state service over the backend's store, publishing on `bus`, telling the
/// fleet layer of each change of state (`fleet_transitions`).
pub(crate) fn task_service(
    config: &Config,
    backend: &Backend,
    bus: Arc<dyn EventBus>,
    open: OpenTasks,
    transitions: Arc<FleetTransitions>,
) -> Arc<LocalTaskService> {
    let service = LocalTaskService::new(backend.tasks.clone(), bus).with_transitions(transitions);
    let limit = config.max_tasks_in_flight_per_principal;
    Arc::new(match open {
        OpenTasks::Here => service.with_max_in_flight(limit),
        OpenTasks::Shared => service.with_shared_max_in_flight(limit),
    })
}

/// What keeps the fleet layer's state from the task service's commits: outcomes
/// counted (their metrics registered, flushed to the backend until `stop`) and the
/// index of tasks waiting for a person, first completed from the unfinished tasks.
pub(crate) async fn fleet_transitions(
    config: &Config,
    backend: &Backend,
    metrics: &mut Registry,
    stop: &CancellationToken,
) -> anyhow::Result<Arc<FleetTransitions>> {
    let announcer = inbox_announcer(config, backend)?;
    if let Some(announcer) = &announcer {
        announcer.resume_pending().await;
    }
    let added = WaitingIndex::reconcile(&*backend.fleet, &*backend.tasks).await?;
    if added > 0 {
        tracing::info!(count = added, "indexed waiting tasks the index had missed");
    }
    let outcome_metrics = FleetMetrics::default();
    outcome_metrics.register(metrics);
    let outcomes = Arc::new(OutcomeRecorder::new(outcome_metrics));
    drop(
        outcomes
            .clone()
            .spawn_flushing(backend.fleet.clone(), stop.clone()),
    );
    Ok(Arc::new(FleetTransitions {
        outcomes,
        waiting: WaitingIndex::spawn(backend.fleet.clone(), announcer, &config.public_url()),
    }))
}

/// What announces new waiting tasks to `[fleet.inbox] webhook_url`, when one is set:
/// posted like every webhook (the same address policy, retries and attempt timeout).
fn inbox_announcer(config: &Config, backend: &Backend) -> anyhow::Result<Option<Announcer>> {
    let inbox = &config.fleet.inbox;
    let (Some(url), Some(secret)) = (&inbox.webhook_url, &inbox.webhook_secret) else {
        return Ok(None);
    };
    let poster = notice_poster(config, Some(secret), inbox.webhook_token.clone())?;
    let announcer =
        Announcer::new(url.clone(), poster, backend.fleet.clone()).map_err(anyhow::Error::msg)?;
    Ok(Some(announcer))
}

/// How the fleet layer's notices are posted: signed with `secret` when there is one,
/// with `token` as the receiver's bearer, on the webhooks' retries, attempt timeout and
/// address policy.
pub(crate) fn notice_poster(
    config: &Config,
    secret: Option<&str>,
    token: Option<String>,
) -> anyhow::Result<PosterSettings> {
    Ok(PosterSettings {
        secret: secret
            .map(parse_secret)
            .transpose()
            .map_err(anyhow::Error::msg)?,
        token,
        retry_delays: webhook_retry_delays(config),
        attempt_timeout: Duration::from_millis(config.webhook_timeout_ms),
        policy: webhook_policy(config)?,
    })
}

/// The fleet's endpoints (`/fleet/*`) over `service`.
pub(crate) fn fleet_routes(
    config: &Config,
    state: AppState,
    service: Arc<dyn FleetService>,
) -> axum::Router {
    sb_gateway::fleet::routes(FleetEdge {
        state,
        service,
        policy: config.fleet.health,
        admin_token: config.admin_token.clone(),
        input_timeout_secs: config.input_timeout_secs,
    })
}

/// The webhook targets trusted beyond the public internet; the dispatcher and the push
/// configs' checks share it.
pub(crate) fn webhook_policy(config: &Config) -> anyhow::Result<Arc<AddressPolicy>> {
    let policy = AddressPolicy::parse(&config.webhook_allow.join(","));
    Ok(Arc::new(policy.map_err(anyhow::Error::msg)?))
}

/// The waits before each webhook retry (`webhook_retry_delays_ms`).
pub(crate) fn webhook_retry_delays(config: &Config) -> Vec<Duration> {
    let delays = config.webhook_retry_delays_ms.iter();
    delays.map(|ms| Duration::from_millis(*ms)).collect()
}

/// The webhook dispatcher over the backend, its delivery metrics registered; it delivers
/// once [`Dispatcher::spawn`] has it follow the bus.
/// `signing_secrets` follow the registry (`fleet::follow_webhook_secrets`).
pub(crate) fn dispatcher(
    config: &Config,
    backend: &Backend,
    policy: Arc<AddressPolicy>,
    signing_secrets: Arc<SigningSecrets>,
    metrics: &mut Registry,
) -> anyhow::Result<Dispatcher> {
    let delivery = Arc::new(DeliveryMetrics::default());
    delivery.register(metrics);
    let settings = DispatcherConfig {
        retry_delays: webhook_retry_delays(config),
        attempt_timeout: Duration::from_millis(config.webhook_timeout_ms),
        policy,
        signing_secrets,
        metrics: delivery,
        sweep_every: DEFAULT_SWEEP,
    };
    let dispatcher = Dispatcher::new(
        backend.push.clone(),
        backend.dead.clone(),
        backend.tasks.clone(),
        settings,
    );
    dispatcher.map_err(anyhow::Error::new)
}

/// Keeps the input and stall timeouts of the tasks `bus` tells of, and evicts finished
/// tasks past their TTL, until `stop`.
pub(crate) fn spawn_deadlines(
    config: &Config,
    tasks: Arc<LocalTaskService>,
    backend: &Backend,
    bus: Arc<dyn EventBus>,
    stop: &CancellationToken,
) {
    let deadlines = DeadlineConfig {
        terminal_ttl: Duration::from_secs(config.task_ttl_secs),
        input_timeout: Duration::from_secs(config.input_timeout_secs),
        stall_timeout: Duration::from_secs(config.stall_timeout_secs),
    };
    let keeper = DeadlineKeeper::new(
        deadlines,
        tasks,
        backend.tasks.clone(),
        backend.push.clone(),
    );
    tokio::spawn(keeper.run(bus, stop.clone()));
}

/// The services a gateway answers from: in its process (all-in-one) or gRPC clients of
/// other processes (split).
pub(crate) type GatewayServices = sb_gateway::Services;

/// A gateway's state over `services`, its metrics registered: what its bindings share.
pub(crate) fn gateway_state(
    config: &Config,
    services: GatewayServices,
    auth: Arc<Authenticators>,
    health: Health,
    stop: &CancellationToken,
    metrics: &mut Registry,
) -> AppState {
    let limits = EdgeLimits {
        max_body_bytes: config.max_body_bytes,
        max_streams_per_principal: config.max_streams_per_principal,
        max_delegation_depth: config.max_delegation_depth,
    };
    AppState::new(services, limits, auth, health, stop.clone(), metrics)
}

/// The gateway's A2A bindings: its public gRPC service is added to `grpc`, its HTTP
/// routes returned.
pub(crate) fn gateway_routes(
    state: AppState,
    grpc: &mut tonic::service::RoutesBuilder,
) -> axum::Router {
    grpc.add_service(sb_gateway::grpc::service(state.clone()));
    sb_gateway::router(state)
}

/// `http` with the dead-letter admin endpoints of `admin` when an admin token is set.
pub(crate) fn with_admin(
    config: &Config,
    http: axum::Router,
    admin: Arc<dyn DeadLetterAdmin>,
) -> axum::Router {
    match &config.admin_token {
        Some(token) => http.merge(admin_router(admin, token)),
        None => http,
    }
}

/// Serves `grpc` and `http` (with `/metrics`) on one port until `shutdown`, which
/// cancels `stop` so open streams end, then waits for the connections to close.
pub(crate) async fn serve_until(
    listener: TcpListener,
    config: &Config,
    grpc: axum::Router,
    http: axum::Router,
    metrics: Registry,
    shutdown: impl Future<Output = ()> + Send + 'static,
    stop: &CancellationToken,
) {
    let app = crate::mux::by_protocol(grpc, http.merge(metrics_router(Arc::new(metrics))));
    let stop = stop.clone();
    crate::http::serve(listener, app, config.max_header_bytes, async move {
        shutdown.await;
        tracing::info!("shutting down: draining open streams");
        stop.cancel();
    })
    .await;
}
