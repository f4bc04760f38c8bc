//! What a gateway's bindings share ([`AppState`]): the services behind their traits
//! (in process, or gRPC clients in the split deployment), the edge's limits and
//! authentication, its metrics and its health. Production and tests build it the same
//! way, with [`AppState::new`].

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use sb_agent::TurnRunner;
use sb_fanout::Fanout;
use sb_registry::{CardRegistry, Fleet};
use sb_tasks::TaskService;
use sb_webhooks::PushConfigService;
use tokio_util::sync::CancellationToken;

use crate::auth::Authenticators;
use crate::limits::StreamLimits;
use crate::metrics::GatewayMetrics;

/// Everything the gateway calls, behind traits.
#[derive(Clone, Debug)]
pub struct AppState {
    pub tasks: Arc<dyn TaskService>,
    pub fanout: Arc<dyn Fanout>,
    pub push: Arc<dyn PushConfigService>,
    pub registry: Arc<dyn CardRegistry>,
    /// Starts agent turns, in this process or on remote workers.
    pub runner: Arc<dyn TurnRunner>,
    /// Fires on shutdown: open streams end so connections drain.
    pub shutdown: CancellationToken,
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
    /// Hops of agents calling agents a new task may come from (`metadata.delegationDepth`).
    pub max_delegation_depth: u64,
    /// How each hosted agent authenticates callers; agents missing here need none.
    pub auth: Arc<Authenticators>,
    /// Open streams per principal on this node.
    pub streams: Arc<StreamLimits>,
    pub metrics: Arc<GatewayMetrics>,
    /// What `/healthz` reports.
    pub health: Health,
}

/// Whether this process can still do its work. A fault that only a restart clears (the
/// embedded store after a failed write it could not undo) makes `/healthz` answer 503
/// with the reason, so a supervisor (Kubernetes' liveness probe, `switchboard health`)
/// restarts the process instead of leaving it up and refusing every write.
#[derive(Clone, Default)]
pub struct Health(Option<Arc<dyn Fn() -> Option<String> + Send + Sync>>);

impl Health {
    /// Healthy unless `fault` names a reason.
    pub fn watching(fault: impl Fn() -> Option<String> + Send + Sync + 'static) -> Health {
        Health(Some(Arc::new(fault)))
    }

    pub fn fault(&self) -> Option<String> {
        self.0.as_ref().and_then(|fault| fault())
    }

    /// The `/healthz` answer: 200 `ok`, or 503 with the reason.
    pub fn response(&self) -> Response {
        use axum::response::IntoResponse;
        match self.fault() {
            None => "ok".into_response(),
            Some(reason) => (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("unhealthy: {reason}"),
            )
                .into_response(),
        }
    }
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Health").field(&self.fault()).finish()
    }
}

/// The services a gateway answers from.
#[derive(Clone, Debug)]
pub struct Services {
    pub tasks: Arc<dyn TaskService>,
    pub fanout: Arc<dyn Fanout>,
    pub push: Arc<dyn PushConfigService>,
    pub registry: Arc<dyn CardRegistry>,
    pub runner: Arc<dyn TurnRunner>,
}

/// The edge's limits.
#[derive(Clone, Copy, Debug)]
pub struct EdgeLimits {
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
    /// Streams one principal may hold open on this node.
    pub max_streams_per_principal: usize,
    /// Hops of agents calling agents a new task may come from.
    pub max_delegation_depth: u64,
}

impl AppState {
    /// Whether requests for `agent` are taken: it is served, or it was removed from the
    /// registry (its tasks stay readable; its new messages are refused in `ops`).
    pub fn takes_requests_for(&self, fleet: &Fleet, agent: &str) -> bool {
        self.runner.serves(agent) || fleet.removed.contains_key(agent)
    }

    /// A gateway's state over `services`, each hosted agent authenticating as `auth`
    /// says (agents missing there need none; the caller replaces it when the registry
    /// changes); its metrics are registered in `registry`.
    pub fn new(
        services: Services,
        limits: EdgeLimits,
        auth: Arc<Authenticators>,
        health: Health,
        shutdown: CancellationToken,
        registry: &mut prometheus_client::registry::Registry,
    ) -> AppState {
        let metrics = Arc::new(GatewayMetrics::default());
        metrics.register(registry);
        AppState {
            tasks: services.tasks,
            fanout: services.fanout,
            push: services.push,
            registry: services.registry,
            runner: services.runner,
            shutdown,
            max_body_bytes: limits.max_body_bytes,
            max_delegation_depth: limits.max_delegation_depth,
            auth,
            streams: StreamLimits::with_gauge(
                limits.max_streams_per_principal,
                metrics.open_streams.clone(),
            ),
            metrics,
            health,
        }
    }
}
