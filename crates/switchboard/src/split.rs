//! Any subset of the services in this process (`--services`), sharing state through
//! Redis and reaching the others over the internal gRPC API. Every process serves one
//! port: `/healthz`, `/metrics`, its gRPC services, and the A2A edge (HTTP bindings and
//! the public gRPC service) if it is a gateway (HTTP/1.1 and HTTP/2 side by side).
//! Agents run on remote workers (`switchboard worker`).
//!
//! What differs from the all-in-one ([`crate::serve()`]): only the named services run; a
//! gateway calls the task-state, fan-out and registry services over gRPC, even those in
//! its own process; open tasks are counted in Redis; turns are queued for workers.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use sb_agent::Roster;
use sb_fanout::LocalFanout;
use sb_fleet::LocalFleet;
use sb_gateway::Health;
use sb_gateway::auth::Authenticators;
use sb_registry::{LiveRegistry, LocalRegistry, RegistryService};
use sb_rpc::admin::{DispatcherAdminClient, DispatcherAdminServer};
use sb_rpc::fanout::{FanoutClient, FanoutServer};
use sb_rpc::fleet::{FleetClient, FleetServer};
use sb_rpc::fleet_storage::{FleetStorageClient, FleetStorageServer};
use sb_rpc::registry::{RegistryClient, RegistryServer};
use sb_rpc::tasks::{TaskStateClient, TaskStateServer};
use sb_rpc::workers::{FleetPolicies, HubMetrics, Policies, QueueRunner, WorkerHub};
use sb_tasks::LocalTaskService;
use sb_webhooks::LocalPushConfigs;
use sb_webhooks::signing::SigningSecrets;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::service::RoutesBuilder;

use crate::agents::{EmbeddedAgents, Kinds, Runs};
use crate::backend::{self, Backend};
use crate::config::{Config, Service};
use crate::fleet::{self, Followers};
use crate::observe::count_task_events;
use crate::wiring::{self, GatewayServices, OpenTasks};

/// How long a gateway waits for the registry service's first fleet at startup.
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
    let kinds = Kinds::new(EmbeddedAgents::new(), Runs::OnWorkers);
    // The registry's state is in Redis: the registry service serves it, and the tasks
    // service reads it too (its queue's agents and policies, workers' announcements), as
    // does the dispatcher (the agents' webhook signing keys).
    let needs_registry = [Service::Registry, Service::Tasks, Service::Dispatcher];
    let local_registry = match &backend {
        Some(backend) if needs_registry.iter().any(|s| config.runs(*s)) => Some(
            fleet::open_registry(&config, backend, kinds.clone(), &stop)
                .await?
                .0,
        ),
        _ => None,
    };
    let mut dispatching = None;
    if let Some(backend) = &backend {
        if config.runs(Service::Tasks)
            && let Some(registry) = &local_registry
        {
            run_tasks(&config, backend, registry, &mut grpc, &mut metrics, &stop).await?;
        }
        if config.runs(Service::Fanout) {
            run_fanout(backend, &mut grpc, &mut metrics);
        }
        if config.runs(Service::Dispatcher)
            && let Some(registry) = &local_registry
        {
            let policy = wiring::webhook_policy(&config)?;
            let secrets = Arc::new(SigningSecrets::default());
            fleet::follow_webhook_secrets(&registry.live(), secrets.clone(), &stop);
            let dispatcher = wiring::dispatcher(&config, backend, policy, secrets, &mut metrics)?;
            http = wiring::with_admin(&config, http, Arc::new(dispatcher.clone()));
            let admin = DispatcherAdminServer {
                admin: Arc::new(dispatcher.clone()),
            };
            grpc.add_service(admin.into_service());
            let handle = dispatcher.spawn(&*backend.bus, stop.clone()).await?;
            dispatching = Some((dispatcher, handle));
        }
    }
    if config.runs(Service::Registry)
        && let Some(registry) = &local_registry
    {
        let server = RegistryServer {
            registry: registry.clone(),
        };
        grpc.add_service(server.into_service());
        // The registry service writes each bridged agent's entry, so it refreshes
        // their upstream cards.
        crate::bridges::refresh_upstream_cards(
            registry,
            kinds.upstream_http.clone(),
            &mut metrics,
            &stop,
        )
        .await;
        if !config.runs(Service::Gateway) {
            http = http.merge(fleet::registry_routes(&config, registry.clone()));
        }
    }
    if config.runs(Service::Gateway) {
        let local = local_registry.filter(|_| config.runs(Service::Registry));
        let router = kinds.router.clone();
        let (services, registry, live, auth) =
            clients(&config, &listener, local, kinds, &stop).await?;
        let state = wiring::gateway_state(&config, services, auth, health, &stop, &mut metrics);
        let tasks_url = match &config.tasks_url {
            Some(url) => url.clone(),
            None => own_url(&listener)?,
        };
        let fleet_service = Arc::new(FleetClient::new(channel(&tasks_url)?));
        let worker_id = format!("gateway-{}-router", listener.local_addr()?);
        crate::router::bind(
            &config,
            &router,
            state.clone(),
            fleet_service.clone(),
            Some((tasks_url.clone(), worker_id)),
            &stop,
        );
        http = http.merge(wiring::fleet_routes(&config, state.clone(), fleet_service));
        http = http.merge(crate::mcp::routes(&config, &live, &stop));
        // No backend here: ceremonies are kept through the task-state service's.
        let storage = Arc::new(FleetStorageClient::new(channel(&tasks_url)?));
        http = http.merge(crate::ceremonies::routes(
            &config,
            state.clone(),
            storage,
            &stop,
        )?);
        // The public A2A gRPC service sits with the internal ones (same content type).
        http = http
            .merge(wiring::gateway_routes(state, &mut grpc))
            .merge(fleet::registry_routes(&config, registry));
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
async fn run_tasks(
    config: &Config,
    backend: &Backend,
    registry: &Arc<LocalRegistry>,
    grpc: &mut RoutesBuilder,
    metrics: &mut Registry,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    let Some(queue) = backend.queue.clone() else {
        anyhow::bail!("the tasks service needs the Redis backend for its turn queue");
    };
    let bus = count_task_events(backend.bus.clone(), metrics);
    let transitions = wiring::fleet_transitions(config, backend, metrics, stop).await?;
    let tasks = wiring::task_service(config, backend, bus.clone(), OpenTasks::Shared, transitions);
    let fleet = LocalFleet::new(backend.fleet.clone(), backend.tasks.clone());
    grpc.add_service(
        FleetServer {
            fleet: Arc::new(fleet),
        }
        .into_service(),
    );
    let storage = FleetStorageServer {
        store: backend.fleet.clone(),
    };
    grpc.add_service(storage.into_service());
    let push = Arc::new(LocalPushConfigs::new(
        backend.push.clone(),
        tasks.clone(),
        wiring::webhook_policy(config)?,
    ));
    let policies: Arc<dyn Policies> = Arc::new(FleetPolicies(registry.live()));
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
    let announcements: Arc<dyn RegistryService> = registry.clone();
    let hub = WorkerHub::new(
        queue,
        bus.clone(),
        tasks.clone(),
        policies,
        Some(announcements),
        hub_metrics,
    );
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
/// running in this process (the `--…-url` options default to its own address), except
/// the registry when it runs here. Also the registry it serves, and the
/// authentication of each agent, both following the registry.
async fn clients(
    config: &Config,
    listener: &TcpListener,
    local_registry: Option<Arc<LocalRegistry>>,
    kinds: Kinds,
    stop: &CancellationToken,
) -> anyhow::Result<(
    GatewayServices,
    Arc<dyn RegistryService>,
    Arc<LiveRegistry>,
    Arc<Authenticators>,
)> {
    let own = own_url(listener)?;
    let url = |given: &Option<String>| given.clone().unwrap_or_else(|| own.clone());
    let (registry, live): (Arc<dyn RegistryService>, _) = match local_registry {
        Some(local) => {
            let live = local.live();
            (local, live)
        }
        None => {
            let client = RegistryClient::connect(
                channel(&url(&config.registry_url))?,
                REGISTRY_PATIENCE,
                stop.clone(),
            )
            .await
            .map_err(anyhow::Error::msg)?;
            let live = client.live();
            (client, live)
        }
    };
    // The agents' code decides direct replies here at the edge (a pure function of the
    // message); their turns run on workers.
    let roster = Arc::new(Roster::default());
    let followers = Followers::new(config, kinds, roster.clone())?;
    let auth = followers.auth.clone();
    followers.follow(&live, stop).await?;
    let tasks = Arc::new(TaskStateClient::new(
        channel(&url(&config.tasks_url))?,
        roster,
    ));
    let services = GatewayServices {
        tasks: tasks.clone(),
        fanout: Arc::new(FanoutClient::new(channel(&url(&config.fanout_url))?)),
        push: tasks.clone(),
        registry: live.clone(),
        runner: tasks,
    };
    Ok((services, registry, live, auth))
}

/// This process's own address, where services not given a URL are found.
fn own_url(listener: &TcpListener) -> anyhow::Result<String> {
    Ok(format!("http://{}", listener.local_addr()?))
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
