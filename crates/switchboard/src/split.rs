//! Any subset of the services in this process (`--services`), sharing state through
//! Redis and reaching the others over the internal gRPC API. Every process serves one
//! port: `/healthz`, `/metrics`, its gRPC services, and the A2A edge (HTTP bindings and
//! the public gRPC service) if it is a gateway (HTTP/1.1 and HTTP/2 side by side).
//! Agents run on remote workers (`switchboard worker`).
//!
//! What differs from the all-in-one ([`crate::serve`]): only the named services run; a
//! gateway calls the task-state, fan-out and registry services over gRPC, even those in
//! its own process; open tasks are counted in Redis; turns are queued for workers.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use sb_agent::Agent;
use sb_fanout::LocalFanout;
use sb_gateway::Health;
use sb_registry::StaticRegistry;
use sb_rpc::admin::{DispatcherAdminClient, DispatcherAdminServer};
use sb_rpc::fanout::{FanoutClient, FanoutServer};
use sb_rpc::registry::{RegistryServer, load_registry};
use sb_rpc::tasks::{TaskStateClient, TaskStateServer};
use sb_rpc::workers::{HubMetrics, QueuePolicy, QueueRunner, WorkerHub};
use sb_tasks::LocalTaskService;
use sb_webhooks::LocalPushConfigs;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::service::RoutesBuilder;

use crate::agents::{EmbeddedAgents, host_agents};
use crate::backend::{self, Backend};
use crate::config::{Config, Service};
use crate::observe::count_task_events;
use crate::wiring::{self, GatewayServices, OpenTasks};

/// How long a gateway waits for the registry service at startup.
const REGISTRY_PATIENCE: Duration = Duration::from_secs(60);

pub async fn serve_split(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let stop = CancellationToken::new();
    let backend = match config.services.iter().any(|s| s.needs_backend()) {
        true => Some(backend::open(&config).await?),
        false => None,
    };
    let health = backend.as_ref().map(Backend::health).unwrap_or_default();
    let mut metrics = Registry::default();
    let mut grpc = RoutesBuilder::default();
    let mut http = axum::Router::new();
    let (agents, hosted, auths) = host_agents(&config, &EmbeddedAgents::new(), &stop).await?;
    let registry = Arc::new(StaticRegistry::new(
        &config.public_url(),
        &hosted,
        config.default_agent.as_deref(),
    ));
    let mut dispatching = None;
    if let Some(backend) = &backend {
        if config.runs(Service::Tasks) {
            run_tasks(&config, backend, &mut grpc, &mut metrics, &stop)?;
        }
        if config.runs(Service::Fanout) {
            run_fanout(backend, &mut grpc, &mut metrics);
        }
        if config.runs(Service::Dispatcher) {
            let policy = wiring::webhook_policy(&config)?;
            let dispatcher = wiring::dispatcher(&config, backend, policy, &mut metrics)?;
            http = wiring::with_admin(&config, http, Arc::new(dispatcher.clone()));
            let admin = DispatcherAdminServer {
                admin: Arc::new(dispatcher.clone()),
            };
            grpc.add_service(admin.into_service());
            let handle = dispatcher.spawn(&*backend.bus, stop.clone()).await?;
            dispatching = Some((dispatcher, handle));
        }
    }
    if config.runs(Service::Registry) {
        let server = RegistryServer {
            registry: registry.clone(),
        };
        grpc.add_service(server.into_service());
    }
    if config.runs(Service::Gateway) {
        let services = clients(&config, &listener, agents, registry).await?;
        let state = wiring::gateway_state(&config, services, auths, health, &stop, &mut metrics);
        // The public A2A gRPC service sits with the internal ones (same content type).
        http = http.merge(wiring::gateway_routes(state, &mut grpc));
        // The dead letters, through this gateway, of a dispatcher running elsewhere.
        if let (Some(_), Some(url), false) = (
            &config.admin_token,
            &config.dispatcher_url,
            config.runs(Service::Dispatcher),
        ) {
            let admin = DispatcherAdminClient::new(channel(url)?);
            http = wiring::with_admin(&config, http, Arc::new(admin));
        }
    } else {
        http = http.route("/healthz", healthz(health));
    }
    // Each internal call is a span continuing the caller's trace (gRPC metadata).
    let traced = tower_http::trace::TraceLayer::new_for_grpc().make_span_with(
        |request: &axum::http::Request<axum::body::Body>| {
            let span = tracing::info_span!("grpc", rpc = %request.uri().path());
            sb_telemetry::extract(&span, request.headers());
            span
        },
    );
    let grpc = grpc.routes().into_axum_router().layer(traced);
    tracing::info!(
        listen = %listener.local_addr()?,
        services = %config.service_names(","),
        "switchboard serving"
    );
    wiring::serve_until(listener, &config, grpc, http, metrics, shutdown, &stop).await;
    if let Some((dispatcher, handle)) = dispatching {
        handle.abort();
        if !dispatcher
            .drain(Duration::from_secs(config.shutdown_grace_secs))
            .await
        {
            tracing::warn!(
                "webhook deliveries still pending after the grace period were left to the next dispatcher"
            );
        }
    }
    if let Some(backend) = &backend {
        backend.close().await;
    }
    Ok(())
}

/// The task-state service: tasks and push configs, the turn queue and the workers
/// attached here, deadlines, and task event counts.
fn run_tasks(
    config: &Config,
    backend: &Backend,
    grpc: &mut RoutesBuilder,
    metrics: &mut Registry,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    let Some(queue) = backend.queue.clone() else {
        anyhow::bail!("the tasks service needs the Redis backend for its turn queue");
    };
    let bus = count_task_events(backend.bus.clone(), metrics);
    let tasks = wiring::task_service(config, backend, bus.clone(), OpenTasks::Shared);
    let push = Arc::new(LocalPushConfigs::new(
        backend.push.clone(),
        tasks.clone(),
        wiring::webhook_policy(config)?,
    ));
    let policies: Arc<BTreeMap<String, QueuePolicy>> = Arc::new(
        config
            .agents
            .iter()
            .map(|agent| (agent.name.clone(), agent.queue_policy()))
            .collect(),
    );
    let runner = QueueRunner {
        queue: queue.clone(),
        bus: bus.clone(),
        tasks: tasks.clone(),
        policies: policies.clone(),
    };
    let server = TaskStateServer {
        tasks: tasks.clone(),
        push,
        runner: Arc::new(runner),
        queue: Some(queue.clone()),
    };
    grpc.add_service(server.into_service());
    let hub_metrics = HubMetrics::default();
    hub_metrics.register(metrics);
    let hub = WorkerHub::new(queue, bus.clone(), tasks.clone(), policies, hub_metrics);
    hub.spawn_reclaimer(stop.clone());
    grpc.add_service(hub.into_service());
    wiring::spawn_deadlines(config, tasks, backend, bus, stop);
    Ok(())
}

/// The fan-out service: each subscriber's task log, then its live events from Redis.
fn run_fanout(backend: &Backend, grpc: &mut RoutesBuilder, metrics: &mut Registry) {
    // Only reads tasks, so no limit of open tasks applies.
    let reader = Arc::new(LocalTaskService::new(
        backend.tasks.clone(),
        backend.bus.clone(),
    ));
    let fanout = LocalFanout::new(reader, backend.bus.clone());
    fanout.register(metrics);
    let open = Gauge::default();
    metrics.register(
        "switchboard_fanout_subscriptions",
        "Task event subscriptions open on this fan-out node",
        open.clone(),
    );
    let server = FanoutServer {
        fanout: Arc::new(fanout),
        open,
    };
    grpc.add_service(server.into_service());
}

/// What a gateway reaches the other services through: gRPC clients, even of services
/// running in this process (the `--…-url` options default to its own address). Only
/// the registry running here is used directly: its cards are fixed at startup.
async fn clients(
    config: &Config,
    listener: &TcpListener,
    agents: BTreeMap<String, Arc<dyn Agent>>,
    registry: Arc<StaticRegistry>,
) -> anyhow::Result<GatewayServices> {
    let own = format!("http://{}", listener.local_addr()?);
    let url = |given: &Option<String>| given.clone().unwrap_or_else(|| own.clone());
    // The agents' code decides direct replies here at the edge (a pure function of the
    // message); their turns run on workers.
    let code: BTreeMap<String, Option<Arc<dyn Agent>>> = agents
        .into_iter()
        .map(|(name, agent)| (name, Some(agent)))
        .collect();
    let tasks = Arc::new(TaskStateClient::new(
        channel(&url(&config.tasks_url))?,
        code,
    ));
    let registry = match config.runs(Service::Registry) {
        true => registry,
        false => {
            let loaded =
                load_registry(channel(&url(&config.registry_url))?, REGISTRY_PATIENCE).await;
            Arc::new(loaded.map_err(|e| anyhow::anyhow!(e))?)
        }
    };
    Ok(GatewayServices {
        tasks: tasks.clone(),
        fanout: Arc::new(FanoutClient::new(channel(&url(&config.fanout_url))?)),
        push: tasks.clone(),
        registry,
        runner: tasks,
    })
}

fn channel(url: &str) -> anyhow::Result<tonic::transport::Channel> {
    sb_rpc::wire::connect(url).map_err(|e| anyhow::anyhow!(e))
}

/// `GET /healthz` of a process without a gateway (a gateway answers it itself).
fn healthz(health: Health) -> axum::routing::MethodRouter {
    axum::routing::get(move || {
        let answer = health.response();
        async move { answer }
    })
}
