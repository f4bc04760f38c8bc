//! Any subset of the services in this process (`--services`), sharing state through
//! Redis and reaching the others over the internal gRPC API. Every process serves one
//! port: `/healthz`, `/metrics`, its gRPC services, and the A2A edge (HTTP bindings and
//! the public gRPC service) if it is a gateway (HTTP/1.1 and HTTP/2 side by side).
//! Agents run on remote workers (`switchboard worker`).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use sb_agent::Agent;
use sb_fanout::LocalFanout;
use sb_gateway::AppState;
use sb_registry::StaticRegistry;
use sb_rpc::admin::{DispatcherAdminClient, DispatcherAdminServer};
use sb_rpc::fanout::{FanoutClient, FanoutServer};
use sb_rpc::registry::{RegistryServer, load_registry};
use sb_rpc::tasks::{TaskStateClient, TaskStateServer};
use sb_rpc::workers::{HubMetrics, OnWorkerLost, QueuePolicy, QueueRunner, WorkerHub};
use sb_tasks::{DeadlineKeeper, LocalTaskService};
use sb_webhooks::{DeliveryMetrics, Dispatcher, LocalPushConfigs};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::agents::host_agents;
use crate::backend::{self, Backend};
use crate::config::Config;
use crate::observe::{count_task_events, metrics_router};

/// How long a gateway waits for the registry service at startup.
const REGISTRY_PATIENCE: Duration = Duration::from_secs(60);

fn policies(config: &Config) -> Arc<BTreeMap<String, QueuePolicy>> {
    let policies = config.agents.iter().map(|a| {
        let policy = QueuePolicy {
            max_queued: a.max_queued.unwrap_or(QueuePolicy::default().max_queued),
            on_worker_lost: match a.on_worker_lost.as_deref() {
                Some("reassign") => OnWorkerLost::Reassign,
                _ => OnWorkerLost::Fail,
            },
        };
        (a.name.clone(), policy)
    });
    Arc::new(policies.collect())
}

/// This process's own address, for services it calls that also run here.
fn own_url(listener: &TcpListener) -> anyhow::Result<String> {
    Ok(format!("http://{}", listener.local_addr()?))
}

fn channel(url: &str) -> anyhow::Result<tonic::transport::Channel> {
    sb_rpc::wire::connect(url).map_err(|e| anyhow::anyhow!(e))
}

pub async fn serve_split(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let stop = CancellationToken::new();
    let needs_state = ["tasks", "fanout", "dispatcher"]
        .iter()
        .any(|s| config.runs(s));
    let backend = match needs_state {
        true => Some(backend::open(&config).await?),
        false => None,
    };
    let mut metrics_registry = Registry::default();
    let mut grpc = tonic::service::RoutesBuilder::default();
    let mut app = axum::Router::new();
    let (agents, hosted, auths) = host_agents(&config, &BTreeMap::new(), &stop).await?;
    let registry = Arc::new(StaticRegistry::new(
        &config.public_url(),
        &hosted,
        config.default_agent.as_deref(),
    ));
    let mut dispatcher = None;
    if let Some(backend) = &backend {
        if config.runs("tasks") {
            run_tasks(&config, backend, &mut grpc, &mut metrics_registry, &stop).await?;
        }
        if config.runs("fanout") {
            let reader = Arc::new(LocalTaskService::new(
                backend.tasks.clone(),
                backend.bus.clone(),
            ));
            let fanout = LocalFanout::new(reader, backend.bus.clone());
            fanout.register(&mut metrics_registry);
            let fanout = Arc::new(fanout);
            let open = prometheus_client::metrics::gauge::Gauge::default();
            metrics_registry.register(
                "switchboard_fanout_subscriptions",
                "Task event subscriptions open on this fan-out node",
                open.clone(),
            );
            grpc.add_service(FanoutServer { fanout, open }.into_service());
        }
        if config.runs("dispatcher") {
            let metrics = Arc::new(DeliveryMetrics::default());
            metrics.register(&mut metrics_registry);
            let policy = backend::webhook_policy(&config)?;
            let settings = backend::dispatcher_config(&config, policy, metrics);
            let running = Dispatcher::new(
                backend.push.clone(),
                backend.dead.clone(),
                backend.tasks.clone(),
                settings,
            )
            .map_err(|e| anyhow::anyhow!(e))?;
            if let Some(token) = &config.admin_token {
                app = app.merge(sb_webhooks::admin::admin_router(
                    Arc::new(running.clone()),
                    token,
                ));
            }
            let admin = DispatcherAdminServer {
                admin: Arc::new(running.clone()),
            };
            grpc.add_service(admin.into_service());
            let handle = running.spawn(&*backend.bus, stop.clone()).await?;
            dispatcher = Some((running, handle));
        }
    }
    if config.runs("registry") {
        grpc.add_service(
            RegistryServer {
                registry: registry.clone(),
            }
            .into_service(),
        );
    }
    if config.runs("gateway") {
        let own = own_url(&listener)?;
        let url = |given: &Option<String>| given.clone().unwrap_or_else(|| own.clone());
        // The agents' code decides direct replies here at the edge (a pure function of
        // the message); their turns run on workers.
        let code: BTreeMap<String, Option<Arc<dyn Agent>>> = agents
            .into_iter()
            .map(|(name, agent)| (name, Some(agent)))
            .collect();
        let tasks = Arc::new(TaskStateClient::new(
            channel(&url(&config.tasks_url))?,
            code,
        ));
        let registry: Arc<StaticRegistry> = if config.runs("registry") {
            registry
        } else {
            let loaded =
                load_registry(channel(&url(&config.registry_url))?, REGISTRY_PATIENCE).await;
            Arc::new(loaded.map_err(|e| anyhow::anyhow!(e))?)
        };
        let gateway_metrics = Arc::new(sb_gateway::metrics::GatewayMetrics::default());
        gateway_metrics.register(&mut metrics_registry);
        let state = AppState {
            tasks: tasks.clone(),
            fanout: Arc::new(FanoutClient::new(channel(&url(&config.fanout_url))?)),
            push: tasks.clone(),
            registry,
            runner: tasks,
            shutdown: stop.clone(),
            max_body_bytes: config.max_body_bytes,
            auth: Arc::new(auths),
            streams: sb_gateway::limits::StreamLimits::with_gauge(
                config.max_streams_per_principal,
                gateway_metrics.open_streams.clone(),
            ),
            metrics: gateway_metrics,
            health: backend.as_ref().map(Backend::health).unwrap_or_default(),
        };
        // The public A2A gRPC service sits with the internal ones (same content type).
        grpc.add_service(sb_gateway::grpc::service(state.clone()));
        app = app.merge(sb_gateway::router(state));
        // The dead letters, through this gateway, of a dispatcher running elsewhere.
        if let (Some(token), Some(url), false) = (
            &config.admin_token,
            &config.dispatcher_url,
            config.runs("dispatcher"),
        ) {
            let admin = DispatcherAdminClient::new(channel(url)?);
            app = app.merge(sb_webhooks::admin::admin_router(Arc::new(admin), token));
        }
    } else {
        let health = backend.as_ref().map(Backend::health).unwrap_or_default();
        app = app.route(
            "/healthz",
            axum::routing::get(move || {
                let answer = health.response();
                async move { answer }
            }),
        );
    }
    // Each internal call is a span continuing the caller's trace (gRPC metadata).
    let traced = tower_http::trace::TraceLayer::new_for_grpc().make_span_with(
        |request: &axum::http::Request<axum::body::Body>| {
            let span = tracing::info_span!("grpc", rpc = %request.uri().path());
            sb_telemetry::extract(&span, request.headers());
            span
        },
    );
    let app = crate::mux::by_protocol(
        grpc.routes().into_axum_router().layer(traced),
        app.merge(metrics_router(Arc::new(metrics_registry))),
    );
    tracing::info!(
        listen = %listener.local_addr()?,
        services = %config.services.join(","),
        "switchboard serving"
    );
    let stopping = stop.clone();
    crate::http::serve(listener, app, config.max_header_bytes, async move {
        shutdown.await;
        tracing::info!("shutting down");
        stopping.cancel();
    })
    .await;
    if let Some((running, handle)) = dispatcher {
        handle.abort();
        if !running
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
    grpc: &mut tonic::service::RoutesBuilder,
    metrics_registry: &mut Registry,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    let Some(queue) = backend.queue.clone() else {
        anyhow::bail!("the tasks service needs the Redis backend for its turn queue");
    };
    let bus = count_task_events(backend.bus.clone(), metrics_registry);
    // Counted in Redis: each replica sees only its own commits.
    let tasks = Arc::new(
        LocalTaskService::new(backend.tasks.clone(), bus.clone())
            .with_shared_max_in_flight(config.max_tasks_in_flight_per_principal),
    );
    let push = Arc::new(LocalPushConfigs::new(
        backend.push.clone(),
        tasks.clone(),
        backend::webhook_policy(config)?,
    ));
    let policies = policies(config);
    let runner = QueueRunner {
        queue: queue.clone(),
        bus: bus.clone(),
        tasks: tasks.clone(),
        policies: policies.clone(),
    };
    grpc.add_service(
        TaskStateServer {
            tasks: tasks.clone(),
            push,
            runner: Arc::new(runner),
            queue: Some(queue.clone()),
        }
        .into_service(),
    );
    let hub_metrics = HubMetrics::default();
    hub_metrics.register(metrics_registry);
    let hub = WorkerHub::new(queue, bus.clone(), tasks.clone(), policies, hub_metrics);
    hub.spawn_reclaimer(stop.clone());
    grpc.add_service(hub.into_service());
    let keeper = DeadlineKeeper::new(
        backend::deadlines(config),
        tasks,
        backend.tasks.clone(),
        backend.push.clone(),
    );
    tokio::spawn(keeper.run(bus, stop.clone()));
    Ok(())
}
