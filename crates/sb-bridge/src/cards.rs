//! Keeps each bridged agent's card following its upstream's: every agent of kind `a2a`
//! in the fleet has its upstream card fetched on its refresh interval (and at once
//! when it joins), checked and verified; what was found goes to the registry
//! ([`LocalRegistry::observe_upstream`]), which serves the new card and keeps the
//! change in the agent's history. Drift is logged at INFO and counted.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sb_registry::{AgentDefinition, CardRegistry, LocalRegistry, UpstreamCard};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::each_agent::{bridged, for_each_bridged_agent};
use crate::upstream::fetch_card;

/// Called with an agent's name on each drift of its upstream card (a metric).
pub type OnDrift = Arc<dyn Fn(&str) + Send + Sync>;

/// Fetches the upstream card of `definition` once and hands the registry what it found.
pub async fn refresh_once(
    registry: &LocalRegistry,
    http: &reqwest::Client,
    definition: &AgentDefinition,
    on_drift: &OnDrift,
) {
    let Some(url) = &definition.url else {
        return;
    };
    let settings = definition.upstream.clone().unwrap_or_default();
    let previous = registry
        .live()
        .fleet()
        .registration(&definition.name)
        .and_then(|r| r.upstream.clone());
    let observed = match fetch_card(http, url, &settings).await {
        Ok(accepted) => UpstreamCard {
            url: accepted.found.url.clone(),
            hash: accepted.hash,
            signed_by: accepted.found.signed_by.clone(),
            card: Some(accepted.found.card),
            checked_at: Utc::now(),
            refused: None,
        },
        Err(reason) => {
            tracing::warn!(agent = %definition.name, %url, %reason, "the upstream card was not accepted; the last accepted one stays in use");
            UpstreamCard {
                refused: Some(reason),
                checked_at: Utc::now(),
                ..previous.unwrap_or_else(|| UpstreamCard {
                    card: None,
                    url: url.clone(),
                    hash: String::new(),
                    signed_by: None,
                    checked_at: Utc::now(),
                    refused: None,
                })
            }
        }
    };
    match registry.observe_upstream(&definition.name, observed).await {
        Ok(drift) if !drift.is_empty() => {
            tracing::info!(agent = %definition.name, %url, drift = %drift.join("; "), "the upstream agent's card changed; its card here follows");
            on_drift(&definition.name);
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(agent = %definition.name, error = %e, "could not record the upstream card")
        }
    }
}

/// Fetches every bridged agent's upstream card once, all at the same time: what a
/// process does before it serves, so a bridged agent's first card is its upstream's.
pub async fn refresh_all(registry: &LocalRegistry, http: &reqwest::Client, on_drift: &OnDrift) {
    let fleet = registry.live().fleet();
    let refreshes = bridged(&fleet).map(|d| refresh_once(registry, http, d, on_drift));
    futures::future::join_all(refreshes).await;
}

/// Refreshes every bridged agent's upstream card on its interval until `stop`, picking
/// up agents as they join the registry and dropping those that leave it.
pub fn spawn_refresher(
    registry: Arc<LocalRegistry>,
    http: reqwest::Client,
    on_drift: OnDrift,
    stop: CancellationToken,
) -> JoinHandle<()> {
    let fleet = registry.live().follow();
    tokio::spawn(for_each_bridged_agent(
        fleet,
        |_| true,
        move |definition, token| {
            let refresh = refresh_every(
                registry.clone(),
                http.clone(),
                definition.clone(),
                on_drift.clone(),
                token,
            );
            tokio::spawn(refresh);
        },
        stop,
    ))
}

async fn refresh_every(
    registry: Arc<LocalRegistry>,
    http: reqwest::Client,
    definition: AgentDefinition,
    on_drift: OnDrift,
    stop: CancellationToken,
) {
    let interval: Duration = definition
        .upstream
        .clone()
        .unwrap_or_default()
        .card_refresh();
    loop {
        refresh_once(&registry, &http, &definition, &on_drift).await;
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
        }
    }
}
