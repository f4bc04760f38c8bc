//! A worker that follows the registry service: every bridged agent (`kind = "a2a"`)
//! of the fleet that the worker's configuration does not name already, registered in
//! a file or through `PUT /registry/agents/{name}`, gets a worker session of its own,
//! started when the agent joins and stopped when it leaves or its definition changes.
//! One session per agent, so that a change to one agent never interrupts another's
//! turns.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use sb_bridge::each_agent::for_each_bridged_agent;
use sb_registry::AgentDefinition;
use sb_rpc::registry::RegistryClient;
use sb_rpc::workers::{WorkerOptions, run_worker};
use tokio_util::sync::CancellationToken;

use crate::agents::Kinds;

/// How long the worker waits for the registry service at startup.
const REGISTRY_PATIENCE: Duration = Duration::from_secs(30);

/// What each session is started with.
pub(crate) struct SessionTemplate {
    pub tasks_url: String,
    pub worker_id: String,
    pub capacity: u32,
}

/// Follows the registry at `registry_url` until `stop`, running the bridged agents
/// not in `configured`.
pub(crate) async fn follow(
    registry_url: String,
    kinds: Kinds,
    configured: BTreeSet<String>,
    template: SessionTemplate,
    stop: CancellationToken,
) -> anyhow::Result<()> {
    let channel = sb_rpc::wire::connect(&registry_url).map_err(|e| anyhow::anyhow!(e))?;
    let registry = RegistryClient::connect(channel, REGISTRY_PATIENCE, stop.clone())
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    let fleet = registry.live().follow();
    let start = |definition: &AgentDefinition, session_stop: CancellationToken| {
        let name = definition.name.clone();
        let code = match kinds.code(definition) {
            Ok(Some(code)) => code,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(agent = %name, error = %e, "bridged agent of the registry not run here");
                return;
            }
        };
        let options = WorkerOptions {
            tasks_url: template.tasks_url.clone(),
            worker_id: format!("{}-{name}", template.worker_id),
            capacity: template.capacity,
            agents: BTreeMap::from([(name.clone(), code)]),
            // The registry has its definition already.
            definitions: Vec::new(),
        };
        tracing::info!(agent = %name, "bridged agent of the registry: worker session starts");
        let stopping = stop.clone();
        tokio::spawn(async move {
            match run_worker(options, session_stop).await {
                Ok(()) if !stopping.is_cancelled() => tracing::info!(
                    agent = %name,
                    "bridged agent left the registry or changed; its worker session stops"
                ),
                Ok(()) => {}
                Err(e) => {
                    tracing::warn!(agent = %name, error = %e, "worker session for a bridged agent ended")
                }
            }
        });
    };
    let not_configured = |d: &AgentDefinition| !configured.contains(&d.name);
    for_each_bridged_agent(fleet, not_configured, start, stop.clone()).await;
    Ok(())
}
