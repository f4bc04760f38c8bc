//! Wiring of the default deployment: every service in one process, agents in process,
//! state in the embedded store (or Redis with `--backend`). `--services` hands over to
//! [`crate::split`]. [`Switchboard`] is the same deployment inside a program of your own,
//! with agents of that program beside the configured ones.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use sb_agent::{Agent, AgentHost};
use sb_fanout::LocalFanout;
use sb_gateway::AppState;
use sb_registry::StaticRegistry;
use sb_tasks::{DeadlineKeeper, LocalTaskService};
use sb_webhooks::{DeliveryMetrics, Dispatcher, LocalPushConfigs};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::agents::{EmbeddedAgents, host_agents};
use crate::backend;
use crate::config::{self, AgentConfig, Config};
use crate::observe::{count_task_events, metrics_router};

/// Runs the configured services on `listener` until `shutdown` completes, then drains
/// streams and agent runs.
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    Switchboard::new(config).serve(listener, shutdown).await
}

/// Switchboard inside a program of your own, serving agents written in Rust in process,
/// beside the configured ones, with everything `switchboard serve` gives them (every
/// binding and version, the durable store, streams and resume, push, auth, metrics).
///
/// ```no_run
/// # async fn run(my_agent: impl switchboard::sb_agent::Agent) -> anyhow::Result<()> {
/// let config = switchboard::config::load(None, Default::default()).map_err(anyhow::Error::msg)?;
/// let listener = tokio::net::TcpListener::bind(config.listen).await?;
/// switchboard::Switchboard::new(config)
///     .agent("mine", my_agent)
///     .serve(listener, async { let _ = tokio::signal::ctrl_c().await; })
///     .await
/// # }
/// ```
#[derive(Debug)]
pub struct Switchboard {
    config: Config,
    embedded: EmbeddedAgents,
}

impl Switchboard {
    pub fn new(config: Config) -> Switchboard {
        Switchboard {
            config,
            embedded: EmbeddedAgents::new(),
        }
    }

    /// Serves `agent` under `name` (`/agents/{name}/`). An `[[agents]]` entry of that name
    /// configures it (description, card, auth, webhook secret) and its `kind` is then
    /// ignored (`embedded` says so); without one it gets the defaults. The same agent
    /// runs on a remote worker unchanged (`sb_rpc::workers::run_worker`).
    pub fn agent(mut self, name: impl Into<String>, agent: impl Agent) -> Switchboard {
        self.embedded.insert(name.into(), Arc::new(agent));
        self
    }

    /// Runs until `shutdown` completes, then drains streams and agent runs.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let Switchboard {
            mut config,
            embedded,
        } = self;
        if config.is_split() {
            anyhow::ensure!(
                embedded.is_empty(),
                "agents given in process run in the all-in-one; a split deployment (--services) \
                 runs agents on workers: hand the same agents to sb_rpc::workers::run_worker"
            );
            return crate::split::serve_split(config, listener, shutdown).await;
        }
        for name in embedded.keys() {
            if !config.agents.iter().any(|a| &a.name == name) {
                config.agents.push(AgentConfig::new(name, "embedded"));
            }
        }
        config::validate(&config).map_err(anyhow::Error::msg)?;
        serve_all_in_one(config, embedded, listener, shutdown).await
    }
}

async fn serve_all_in_one(
    config: Config,
    embedded: EmbeddedAgents,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let backend = backend::open(&config).await?;
    let mut metrics_registry = Registry::default();
    let bus = count_task_events(backend.bus.clone(), &mut metrics_registry);
    let task_service = Arc::new(
        LocalTaskService::new(backend.tasks.clone(), bus.clone())
            .with_max_in_flight(config.max_tasks_in_flight_per_principal),
    );
    let recovered = task_service
        .recover_unfinished()
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if recovered > 0 {
        tracing::warn!(
            count = recovered,
            "failed tasks left running by the previous process"
        );
    }
    let stop = CancellationToken::new();
    let (agents, hosted, auths) = host_agents(&config, &embedded, &stop).await?;
    let policy = backend::webhook_policy(&config)?;
    let delivery_metrics = Arc::new(DeliveryMetrics::default());
    delivery_metrics.register(&mut metrics_registry);
    let gateway_metrics = Arc::new(sb_gateway::metrics::GatewayMetrics::default());
    gateway_metrics.register(&mut metrics_registry);
    let dispatcher_config = backend::dispatcher_config(&config, policy.clone(), delivery_metrics);
    let dispatcher = Dispatcher::new(
        backend.push.clone(),
        backend.dead.clone(),
        backend.tasks.clone(),
        dispatcher_config,
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    let registry = Arc::new(StaticRegistry::new(
        &config.public_url(),
        &hosted,
        config.default_agent.as_deref(),
    ));
    let host = AgentHost::new(agents, task_service.clone(), bus.clone());
    let fanout = LocalFanout::new(task_service.clone(), bus.clone());
    fanout.register(&mut metrics_registry);
    let state = AppState {
        tasks: task_service.clone(),
        fanout: Arc::new(fanout),
        push: Arc::new(LocalPushConfigs::new(
            backend.push.clone(),
            task_service.clone(),
            policy,
        )),
        registry,
        runner: Arc::new(host.clone()),
        shutdown: stop.clone(),
        max_body_bytes: config.max_body_bytes,
        auth: Arc::new(auths),
        streams: sb_gateway::limits::StreamLimits::with_gauge(
            config.max_streams_per_principal,
            gateway_metrics.open_streams.clone(),
        ),
        metrics: gateway_metrics,
        health: backend.health(),
    };
    let grpc = tonic::service::Routes::new(sb_gateway::grpc::service(state.clone()));
    let mut app = sb_gateway::router(state).merge(metrics_router(Arc::new(metrics_registry)));
    if let Some(token) = &config.admin_token {
        app = app.merge(sb_webhooks::admin::admin_router(
            Arc::new(dispatcher.clone()),
            token,
        ));
    }
    let dispatching = dispatcher.spawn(&*bus, stop.clone()).await?;
    let keeper = DeadlineKeeper::new(
        backend::deadlines(&config),
        task_service.clone(),
        backend.tasks.clone(),
        backend.push.clone(),
    );
    tokio::spawn(keeper.run(bus.clone(), stop.clone()));
    tracing::info!(listen = %listener.local_addr()?, public_url = %config.public_url(), "switchboard serving");
    let stopping = stop.clone();
    // The A2A gRPC binding shares the port with the HTTP ones.
    let app = crate::mux::by_protocol(grpc.into_axum_router(), app);
    crate::http::serve(listener, app, config.max_header_bytes, async move {
        shutdown.await;
        tracing::info!("shutting down: draining streams and agent runs");
        stopping.cancel();
    })
    .await;
    let grace = Duration::from_secs(config.shutdown_grace_secs);
    if !host.drain(grace).await {
        tracing::warn!(
            "agent runs still going after the grace period; they will be failed on the next start"
        );
    }
    dispatching.abort();
    if !dispatcher.drain(grace).await {
        tracing::warn!("webhook deliveries still pending after the grace period were dropped");
    }
    backend.close().await;
    Ok(())
}
