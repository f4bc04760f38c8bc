//! Wiring of the default deployment: every service in one process, agents in process,
//! state in the embedded store (or Redis with `--backend`). `--services` hands over to
//! [`crate::split`]. [`Switchboard`] is the same deployment inside a program of your own,
//! with agents of that program beside the configured ones.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;
use sb_agent::{Agent, AgentHost};
use sb_bridge::push::PushReceiver;
use sb_fanout::LocalFanout;
use sb_fleet::LocalFleet;
use sb_webhooks::LocalPushConfigs;
use sb_webhooks::signing::SigningSecrets;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::service::RoutesBuilder;

use crate::agents::{EmbeddedAgents, Kinds, Runs};
use crate::backend;
use crate::bridges;
use crate::config::{self, AgentConfig, AgentKind, Config};
use crate::fleet::{self, Followers};
use crate::observe::count_task_events;
use crate::wiring::{self, GatewayServices, OpenTasks};

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
                config
                    .agents
                    .push(AgentConfig::new(name, AgentKind::Embedded));
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
    let mut metrics = Registry::default();
    let bus = count_task_events(backend.bus.clone(), &mut metrics);
    let stop = CancellationToken::new();
    let transitions = wiring::fleet_transitions(&config, &backend, &mut metrics, &stop).await?;
    let tasks = wiring::task_service(&config, &backend, bus.clone(), OpenTasks::Here, transitions);
    let mut kinds = Kinds::new(embedded, Runs::InProcess);
    let push_receiver = PushReceiver::new(&config.public_url());
    push_receiver.register(&mut metrics);
    kinds.push_receiver = Some(push_receiver.clone());
    let kinds_http = kinds.upstream_http.clone();
    // Replicas sharing Redis hear of each other's registrations.
    let (registry, following) =
        fleet::open_registry(&config, &backend, kinds.clone(), &stop).await?;
    let policy = wiring::webhook_policy(&config)?;
    let secrets = Arc::new(SigningSecrets::default());
    fleet::follow_webhook_secrets(&registry.live(), secrets.clone(), &stop);
    let dispatcher = wiring::dispatcher(&config, &backend, policy.clone(), secrets, &mut metrics)?;
    let host = AgentHost::new(BTreeMap::new(), tasks.clone(), bus.clone());
    let router = kinds.router.clone();
    let followers = Followers::new(&config, kinds, host.roster().clone())?;
    let auth = followers.auth.clone();
    followers.follow(&registry.live(), &stop).await?;
    // Agents run only in this process, so a task still running was cut off when the
    // previous one ended (in the split deployment, the workers' leases tell that);
    // a bridged task's upstream task went on, and its turn is run again to follow it.
    let (failed, resumed) = tasks
        .recover_unfinished(bridges::resumes_after_restart(&registry))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if failed > 0 {
        tracing::warn!(
            count = failed,
            "failed tasks left running by the previous process"
        );
    }
    for record in resumed {
        match record
            .task
            .history
            .iter()
            .rev()
            .find(|m| m.role == sb_protocol::Role::User)
        {
            Some(message) => {
                tracing::info!(task_id = %record.task.id, agent = %record.agent, "following a bridged task again after the restart");
                drop(host.spawn_turn(&record, message.clone()));
            }
            None => {
                tracing::warn!(task_id = %record.task.id, "a bridged task without a user message cannot be followed again")
            }
        }
    }
    bridges::refresh_upstream_cards(&registry, kinds_http.clone(), &mut metrics, &stop).await;
    let fanout = LocalFanout::new(tasks.clone(), bus.clone());
    fanout.register(&mut metrics);
    let services = GatewayServices {
        tasks: tasks.clone(),
        fanout: Arc::new(fanout),
        push: Arc::new(LocalPushConfigs::new(
            backend.push.clone(),
            tasks.clone(),
            policy,
        )),
        registry: registry.live(),
        runner: Arc::new(host.clone()),
    };
    let state = wiring::gateway_state(
        &config,
        services,
        auth,
        backend.health(),
        &stop,
        &mut metrics,
    );
    let mut grpc = RoutesBuilder::default();
    let fleet_service = Arc::new(LocalFleet::new(
        backend.fleet.clone(),
        backend.tasks.clone(),
    ));
    crate::router::bind(
        &config,
        &router,
        state.clone(),
        fleet_service.clone(),
        None,
        &stop,
    );
    let fleet_routes = wiring::fleet_routes(&config, state.clone(), fleet_service);
    let ceremony_routes =
        crate::ceremonies::routes(&config, state.clone(), backend.fleet.clone(), &stop)?;
    let http = wiring::gateway_routes(state, &mut grpc)
        .merge(fleet_routes)
        .merge(crate::mcp::routes(&config, &registry.live(), &stop))
        .merge(ceremony_routes)
        .merge(fleet::registry_routes(&config, registry))
        .merge(push_receiver.routes());
    let http = wiring::with_admin(&config, http, Arc::new(dispatcher.clone()));
    let dispatching = dispatcher.spawn(&*bus, stop.clone()).await?;
    wiring::spawn_deadlines(&config, tasks, &backend, bus, &stop);
    tracing::info!(listen = %listener.local_addr()?, public_url = %config.public_url(), "switchboard serving");
    // The A2A gRPC binding shares the port with the HTTP ones.
    let grpc = grpc.routes().into_axum_router();
    wiring::serve_until(listener, &config, grpc, http, metrics, shutdown, &stop).await;
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
    let _ = following.await;
    backend.close().await;
    Ok(())
}
