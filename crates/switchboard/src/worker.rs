//! `switchboard worker`: runs the configured built-in agents as a remote worker of the
//! task-state service, the way any external agent plugs in.

use std::collections::BTreeMap;
use std::sync::Arc;

use sb_agent::Agent;
use sb_rpc::workers::{WorkerOptions, run_worker};
use tokio_util::sync::CancellationToken;

use crate::agents::build_agent;
use crate::config::Config;

/// Serves turns of `agents` (all configured agents when empty) until `shutdown`.
pub async fn work(
    config: &Config,
    tasks_url: &str,
    agents: &[String],
    capacity: u32,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let mut served: BTreeMap<String, Arc<dyn Agent>> = BTreeMap::new();
    for agent in &config.agents {
        if agents.is_empty() || agents.contains(&agent.name) {
            served.insert(agent.name.clone(), build_agent(agent, &BTreeMap::new())?);
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
    let options = WorkerOptions {
        tasks_url: tasks_url.to_owned(),
        worker_id: format!(
            "{}-{}",
            std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".into()),
            std::process::id()
        ),
        capacity,
        agents: served,
    };
    tracing::info!(tasks_url, capacity, "switchboard worker starting");
    run_worker(options, stop)
        .await
        .map_err(|e| anyhow::anyhow!(e))
}
