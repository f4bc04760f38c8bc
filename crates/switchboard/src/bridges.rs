//! Bridged agents in a deployment: where their upstream cards are refreshed (the
//! process that runs the registry, so one writer owns each agent's entry) and the
//! metric that counts drift, and which of the tasks left running by a previous process
//! are followed again rather than failed.

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use sb_registry::{AgentKind, CardRegistry, LocalRegistry};
use sb_store::TaskRecord;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct AgentLabel {
    agent: String,
}

/// How long a process waits for its bridged agents' first upstream cards before it
/// serves. A card not fetched by then comes with the refresher (which fetches at once):
/// an upstream that takes connections but does not answer cannot hold the start.
const FIRST_CARDS_WAIT: Duration = Duration::from_secs(5);

/// Fetches every bridged agent's upstream card now, then refreshes each on its interval
/// until `stop`, counting each drift in `switchboard_bridge_card_drift`.
pub(crate) async fn refresh_upstream_cards(
    registry: &Arc<LocalRegistry>,
    http: reqwest::Client,
    metrics: &mut Registry,
    stop: &CancellationToken,
) {
    let drift = Family::<AgentLabel, Counter>::default();
    metrics.register(
        "switchboard_bridge_card_drift",
        "Changes of a bridged agent's upstream card (version, skills, interfaces or content)",
        drift.clone(),
    );
    let on_drift: sb_bridge::cards::OnDrift = Arc::new(move |agent: &str| {
        drift
            .get_or_create(&AgentLabel {
                agent: agent.to_owned(),
            })
            .inc();
    });
    let first = sb_bridge::cards::refresh_all(registry, &http, &on_drift);
    if tokio::time::timeout(FIRST_CARDS_WAIT, first).await.is_err() {
        tracing::warn!(
            wait_secs = FIRST_CARDS_WAIT.as_secs(),
            "some bridged agents' upstream cards did not come in time; serving anyway, their cards follow"
        );
    }
    sb_bridge::cards::spawn_refresher(registry.clone(), http, on_drift, stop.clone());
}

/// Whether a task left running by the previous process is a bridged or a routed one,
/// whose upstream task (or attempt) goes on or ended without us and is followed again
/// (the others' runs died with the process).
pub(crate) fn resumes_after_restart(registry: &LocalRegistry) -> impl Fn(&TaskRecord) -> bool {
    let fleet = registry.live().fleet();
    move |record: &TaskRecord| {
        fleet
            .registration(&record.agent)
            .is_some_and(|r| matches!(r.definition.kind, AgentKind::A2a | AgentKind::Router))
    }
}
