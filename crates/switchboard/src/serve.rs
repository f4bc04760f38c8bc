//! Wiring: one process running every service over the embedded (or in-memory) store.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use sb_agent::builtin::{ConformanceAgent, ConsolidateAgent, EchoAgent};
use sb_agent::{Agent, AgentHost};
use sb_fanout::LocalFanout;
use sb_gateway::AppState;
use sb_gateway::auth::{AgentAuth, ApiKeys, Credential};
use sb_gateway::jwt::{JwksSource, JwtVerifier};
use sb_registry::{HostedAgent, StaticRegistry};
use sb_store::{
    DeadLetterStore, EventBus, LocalBus, MemoryStore, PushConfigStore, RedbStore, TaskStore,
};
use sb_tasks::{DeadlineConfig, DeadlineKeeper, LocalTaskService};
use sb_webhooks::{AddressPolicy, DeliveryMetrics, Dispatcher, DispatcherConfig, LocalPushConfigs};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::{self, AgentConfig, Config};

/// The agent's authentication: its own credentials plus the global `--auth-token`s.
/// A JWKS URL is fetched now and refreshed in the background until `stop`.
async fn build_auth(
    config: &Config,
    agent: &AgentConfig,
    stop: &CancellationToken,
) -> anyhow::Result<AgentAuth> {
    let mut auth = AgentAuth::default();
    for entry in &config.auth_tokens {
        let (principal, secret) = config::parse_token(entry).map_err(|e| anyhow::anyhow!(e))?;
        auth.bearer_tokens.push(Credential { principal, secret });
    }
    if let Some(own) = &agent.auth {
        for t in &own.bearer {
            auth.bearer_tokens.push(Credential {
                principal: t.principal.clone(),
                secret: t.token.clone(),
            });
        }
        auth.api_keys = own.api_keys.as_ref().map(|a| ApiKeys {
            header: a.header.clone(),
            keys: a
                .keys
                .iter()
                .map(|k| Credential {
                    principal: k.principal.clone(),
                    secret: k.key.clone(),
                })
                .collect(),
        });
        if let Some(jwt) = &own.jwt {
            let source = match (&jwt.jwks_file, &jwt.jwks_url) {
                (Some(file), _) => JwksSource::File(file.clone()),
                (None, Some(url)) => JwksSource::Url(url.clone()),
                (None, None) => anyhow::bail!("agent \"{}\": auth.jwt needs a key set", agent.name),
            };
            let verifier = JwtVerifier::load(
                source,
                jwt.issuer.clone(),
                jwt.audience.clone(),
                jwt.principal_claim.clone(),
            )
            .await
            .map_err(|e| anyhow::anyhow!("agent \"{}\": {e}", agent.name))?;
            if matches!(verifier.source, JwksSource::Url(_)) {
                tokio::spawn(refresh_jwks(verifier.clone(), stop.clone()));
            }
            auth.jwt = Some(verifier);
        }
    }
    Ok(auth)
}

/// Fetches a JWKS URL again every few minutes (key rotation); a failed fetch keeps the
/// keys it had.
async fn refresh_jwks(verifier: JwtVerifier, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(sb_gateway::jwt::JWKS_REFRESH) => {}
        }
        if let Err(e) = verifier.refresh().await {
            tracing::warn!(error = %e, "could not refresh the JWKS; keeping the previous keys");
        }
    }
}

/// The card entry of the stream-resume extension (docs/extensions.md).
fn resume_extension(memory: bool) -> sb_protocol::card::AgentExtension {
    let params = serde_json::json!({
        "sequence": "task-generation",
        "cursor": "Last-Event-ID",
        "durable": !memory,
    });
    sb_protocol::card::AgentExtension {
        uri: sb_gateway::ops::RESUME_EXTENSION.to_owned(),
        description: "Each task event has a per-task sequence number, sent as the SSE id. SubscribeToTask with \
                      Last-Event-ID replays exactly the events after it, then live ones, across restarts."
            .to_owned(),
        required: false,
        params: params.as_object().cloned(),
    }
}

fn build_agent(config: &AgentConfig) -> Arc<dyn Agent> {
    match config.kind.as_str() {
        "consolidate" => {
            let mut agent = ConsolidateAgent::default();
            if let Some(ms) = config.pause_ms {
                agent.pause = Duration::from_millis(ms);
            }
            Arc::new(agent)
        }
        "conformance" => Arc::new(ConformanceAgent::default()),
        _ => Arc::new(EchoAgent),
    }
}

fn open_stores(config: &Config) -> anyhow::Result<Stores> {
    if config.memory {
        let store = Arc::new(MemoryStore::new());
        return Ok((store.clone(), store.clone(), store));
    }
    let path = config.data_dir.join("switchboard.redb");
    let store = Arc::new(RedbStore::open(&path).map_err(|e| anyhow::anyhow!("{e}"))?);
    tracing::info!(path = %path.display(), "embedded store opened");
    Ok((store.clone(), store.clone(), store))
}

type HostedAgents = (
    BTreeMap<String, Arc<dyn Agent>>,
    Vec<HostedAgent>,
    BTreeMap<String, AgentAuth>,
);

/// Each configured agent: the running agent, what its card says, how it authenticates.
async fn host_agents(config: &Config, stop: &CancellationToken) -> anyhow::Result<HostedAgents> {
    let mut agents = BTreeMap::new();
    let mut hosted = Vec::new();
    let mut auths = BTreeMap::new();
    for agent_config in &config.agents {
        let agent = build_agent(agent_config);
        let descriptor = agent.describe();
        let auth = build_auth(config, agent_config, stop).await?;
        let (security_schemes, security_requirements) = auth.card_security();
        hosted.push(HostedAgent {
            name: agent_config.name.clone(),
            description: agent_config
                .description
                .clone()
                .unwrap_or(descriptor.description),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            skills: descriptor.skills,
            input_modes: descriptor.input_modes,
            output_modes: descriptor.output_modes,
            extensions: vec![resume_extension(config.memory)],
            security_schemes,
            security_requirements,
            merged_card_by_default: agent_config.card.as_deref() != Some("1.0"),
            extended_card: auth.is_enabled(),
        });
        auths.insert(agent_config.name.clone(), auth);
        agents.insert(agent_config.name.clone(), agent);
    }
    Ok((agents, hosted, auths))
}

fn dispatcher_config(
    config: &Config,
    policy: Arc<AddressPolicy>,
    metrics: Arc<DeliveryMetrics>,
) -> DispatcherConfig {
    DispatcherConfig {
        metrics,
        retry_delays: config
            .webhook_retry_delays_ms
            .iter()
            .map(|ms| Duration::from_millis(*ms))
            .collect(),
        attempt_timeout: Duration::from_millis(config.webhook_timeout_ms),
        policy,
        signing_secrets: config
            .agents
            .iter()
            .filter_map(|a| {
                let secret = a.webhook_secret.as_deref()?;
                let key = sb_webhooks::signing::parse_secret(secret).ok()?;
                Some((a.name.clone(), key))
            })
            .collect(),
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct TaskEventLabels {
    /// The state the event leaves the task in (`TASK_STATE_…`), or `ARTIFACT_UPDATE`.
    state: String,
}

/// Counts committed task events by the state they leave the task in (task creations
/// are the `TASK_STATE_SUBMITTED` ones).
async fn count_task_events(
    mut events: tokio::sync::broadcast::Receiver<sb_store::StoredEvent>,
    counter: Family<TaskEventLabels, Counter>,
    stop: CancellationToken,
) {
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            Ok(event) => {
                let state = event
                    .event
                    .state()
                    .map(|s| s.as_str())
                    .unwrap_or("ARTIFACT_UPDATE");
                counter
                    .get_or_create(&TaskEventLabels {
                        state: state.to_owned(),
                    })
                    .inc();
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "task event metrics fell behind; counts are low by that much"
                );
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// `GET /metrics` in the Prometheus text format.
fn metrics_router(registry: Arc<Registry>) -> axum::Router {
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let registry = registry.clone();
            async move {
                let mut text = String::new();
                match prometheus_client::encoding::text::encode(&mut text, &registry) {
                    Ok(()) => (
                        axum::http::StatusCode::OK,
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    ),
                    Err(e) => (
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        [(axum::http::header::CONTENT_TYPE, "text/plain")],
                        format!("cannot encode metrics: {e}"),
                    ),
                }
            }
        }),
    )
}

/// The backend seen through each storage trait (one object in practice).
type Stores = (
    Arc<dyn TaskStore>,
    Arc<dyn PushConfigStore>,
    Arc<dyn DeadLetterStore>,
);

/// Runs every service in this process on `listener` until `shutdown` completes, then
/// drains streams and agent runs.
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (tasks_store, push_store, dead_store) = open_stores(&config)?;
    let bus: Arc<dyn EventBus> = Arc::new(LocalBus::new());
    let task_service = Arc::new(
        LocalTaskService::new(tasks_store.clone(), bus.clone())
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
    let (agents, hosted, auths) = host_agents(&config, &stop).await?;
    let policy = Arc::new(
        AddressPolicy::parse(&config.webhook_allow.join(",")).map_err(|e| anyhow::anyhow!(e))?,
    );
    let mut metrics_registry = Registry::default();
    let delivery_metrics = Arc::new(DeliveryMetrics::default());
    delivery_metrics.register(&mut metrics_registry);
    let gateway_metrics = Arc::new(sb_gateway::metrics::GatewayMetrics::default());
    gateway_metrics.register(&mut metrics_registry);
    let task_events = Family::<TaskEventLabels, Counter>::default();
    metrics_registry.register(
        "switchboard_task_events",
        "Committed task events by resulting state",
        task_events.clone(),
    );
    tokio::spawn(count_task_events(
        bus.subscribe_all("metrics").await?,
        task_events,
        stop.clone(),
    ));
    let dispatcher_config = dispatcher_config(&config, policy.clone(), delivery_metrics);
    let dispatcher = Dispatcher::new(
        push_store.clone(),
        dead_store,
        tasks_store.clone(),
        dispatcher_config,
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    let registry = Arc::new(StaticRegistry::new(
        &config.public_url(),
        &hosted,
        config.default_agent.as_deref(),
    ));
    let host = AgentHost::new(agents, task_service.clone(), bus.clone());
    let state = AppState {
        tasks: task_service.clone(),
        fanout: Arc::new(LocalFanout::new(task_service.clone(), bus.clone())),
        push: Arc::new(LocalPushConfigs::new(
            push_store.clone(),
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
    };
    let mut app = sb_gateway::router(state).merge(metrics_router(Arc::new(metrics_registry)));
    if let Some(token) = &config.admin_token {
        app = app.merge(sb_webhooks::admin::admin_router(dispatcher.clone(), token));
    }
    let dispatching = dispatcher.spawn(&*bus, stop.clone()).await?;
    let deadlines = DeadlineConfig {
        terminal_ttl: Duration::from_secs(config.task_ttl_secs),
        input_timeout: Duration::from_secs(config.input_timeout_secs),
        stall_timeout: Duration::from_secs(config.stall_timeout_secs),
    };
    let keeper = DeadlineKeeper::new(
        deadlines,
        task_service.clone(),
        tasks_store.clone(),
        push_store.clone(),
    );
    tokio::spawn(keeper.run(bus.clone(), stop.clone()));
    tracing::info!(listen = %listener.local_addr()?, public_url = %config.public_url(), "switchboard serving");
    let stopping = stop.clone();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        tracing::info!("shutting down: draining streams and agent runs");
        stopping.cancel();
    });
    server.await?;
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
    Ok(())
}
