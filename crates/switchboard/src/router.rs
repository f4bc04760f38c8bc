//! The routing agent in a deployment: bound to a gateway's state and the fleet's health
//! once they are built, and, in the split deployment, run in a worker session of each
//! gateway (its turns call the gateway's operations, so they run where those are).

use std::collections::BTreeMap;
use std::sync::Arc;

use sb_agent::Agent;
use sb_fleet::FleetService;
use sb_gateway::AppState;
use sb_router::{RouterAccess, RouterAgent, RouterHandle};
use sb_rpc::workers::{WorkerOptions, run_worker};
use tokio_util::sync::CancellationToken;

use crate::config::{AgentKind, Config};

/// Binds the routing agents of this process to the gateway's `state` and the fleet's
/// health; in the split deployment also opens the worker session that runs their turns
/// here (a gateway is where their operations are), on the task-state service at
/// `tasks_url`.
pub(crate) fn bind(
    config: &Config,
    handle: &RouterHandle,
    state: AppState,
    fleet: Arc<dyn FleetService>,
    worker_session: Option<(String, String)>,
    stop: &CancellationToken,
) {
    handle.bind(RouterAccess {
        state,
        fleet,
        policy: config.fleet.health,
        max_reroutes: config.fleet.router.max_reroutes,
    });
    let Some((tasks_url, worker_id)) = worker_session else {
        return;
    };
    let agents: BTreeMap<String, Arc<dyn Agent>> = config
        .registered_agents()
        .into_iter()
        .filter(|a| a.kind == AgentKind::Router)
        .map(|a| {
            let agent: Arc<dyn Agent> = Arc::new(RouterAgent::new(a.name.clone(), handle.clone()));
            (a.name, agent)
        })
        .collect();
    if agents.is_empty() {
        return;
    }
    let options = WorkerOptions {
        tasks_url,
        worker_id,
        capacity: ROUTER_CAPACITY,
        agents,
        definitions: Vec::new(),
    };
    let stop = stop.clone();
    tokio::spawn(async move {
        if let Err(e) = run_worker(options, stop).await {
            tracing::error!(error = %e, "the routing agent's worker session ended");
        }
    });
}

/// Routed turns one gateway runs at once: each mostly waits on the task it follows.
const ROUTER_CAPACITY: u32 = 1024;
