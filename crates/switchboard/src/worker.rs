//! `switchboard worker`: runs the configured built-in agents as a remote worker of the
//! task-state service, the way any external agent plugs in.

use std::collections::BTreeMap;
use std::sync::Arc;

use sb_agent::Agent;
use sb_rpc::workers::{WorkerOptions, run_worker};
use tokio_util::sync::CancellationToken;

use crate::agents::{EmbeddedAgents, Kinds, Runs};
use crate::config::{AgentKind, Config};
use crate::worker_fleet::{self, SessionTemplate};

/// Serves turns of `agents` (all configured agents when empty) until `shutdown`; with
/// `registry_url` (and no `agents` named), also those of every bridged agent the
/// registry lists (`crate::worker_fleet`).
pub async fn work(
    config: &Config,
    tasks_url: &str,
    agents: &[String],
    capacity: u32,
    registry_url: Option<&str>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let kinds = Kinds::new(EmbeddedAgents::new(), Runs::OnWorkers);
    let mut served: BTreeMap<String, Arc<dyn Agent>> = BTreeMap::new();
    let mut definitions = Vec::new();
    for agent in &config.agents {
        if agent.kind == AgentKind::Router {
            // Its turns call a gateway's operations: the gateways run them.
            if agents.contains(&agent.name) {
                anyhow::bail!(
                    "agent \"{}\" is the routing agent: the gateways run its turns, not `switchboard worker`",
                    agent.name
                );
            }
            continue;
        }
        if agents.is_empty() || agents.contains(&agent.name) {
            let code = kinds
                .code(agent)
                .map_err(|e| anyhow::anyhow!("agent \"{}\": {e}", agent.name))?;
            let Some(code) = code else {
                anyhow::bail!(
                    "agent \"{}\" is of kind \"worker\": its code is a worker of its own, not `switchboard worker`",
                    agent.name
                );
            };
            served.insert(agent.name.clone(), code);
            definitions.push(agent.clone());
        }
    }
    if let Some(missing) = agents.iter().find(|a| !served.contains_key(*a)) {
        anyhow::bail!("agent \"{missing}\" is not configured");
    }
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopping.cancel();
    });
    let worker_id = format!(
        "{}-{}",
        std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".into()),
        std::process::id()
    );
    tracing::info!(tasks_url, capacity, "switchboard worker starting");
    let following = match registry_url.filter(|_| agents.is_empty()) {
        Some(url) => {
            let template = SessionTemplate {
                tasks_url: tasks_url.to_owned(),
                worker_id: worker_id.clone(),
                capacity,
            };
            let configured = served.keys().cloned().collect();
            let kinds = Kinds::new(EmbeddedAgents::new(), Runs::OnWorkers);
            Some(tokio::spawn(worker_fleet::follow(
                url.to_owned(),
                kinds,
                configured,
                template,
                stop.clone(),
            )))
        }
        None => None,
    };
    if served.is_empty() && following.is_some() {
        // Nothing configured to serve: the registry's bridged agents are the work.
        stop.cancelled().await;
    } else {
        let options = WorkerOptions {
            tasks_url: tasks_url.to_owned(),
            worker_id,
            capacity,
            agents: served,
            // Announced, so a cluster whose registry lacks them serves them as configured
            // here; an operator's definition of the same agent wins.
            definitions,
        };
        run_worker(options, stop.clone())
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
    }
    match following {
        Some(following) => following.await?,
        None => Ok(()),
    }
}
