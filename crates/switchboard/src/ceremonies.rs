//! Ceremonies on a gateway, the same in both deployments: the ceremonies directory
//! followed, the API's routes, and the firing loop, over the fleet layer's store that
//! the caller hands in (the backend's in the all-in-one, the task-state service's over
//! gRPC in the split deployment).

use std::sync::Arc;
use std::time::Duration;

use sb_fleet::ceremonies::files::{self, Loaded};
use sb_fleet::ceremonies::notify::Notifier;
use sb_fleet::ceremonies::schedule::Scheduler;
use sb_gateway::AppState;
use sb_gateway::ceremonies::Ceremonies;
use sb_store::FleetStore;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::wiring;

/// The ceremonies' API routes; the firing loop runs until `stop` unless
/// `[fleet.ceremonies] enabled = false`.
pub(crate) fn routes(
    config: &Config,
    state: AppState,
    store: Arc<dyn FleetStore>,
    stop: &CancellationToken,
) -> anyhow::Result<axum::Router> {
    let settings = &config.fleet.ceremonies;
    let files = match &settings.dir {
        Some(dir) => files::follow(dir.clone(), stop.clone()),
        None => tokio::sync::watch::channel(Arc::new(Loaded::default())).1,
    };
    let secret = settings.signing_secret(&config.fleet.inbox);
    if secret.is_none() {
        tracing::info!(
            "ceremony run notices will be posted unsigned: set [fleet.ceremonies] webhook_secret (or [fleet.inbox] webhook_secret) to sign them"
        );
    }
    let poster = wiring::notice_poster(config, secret, settings.webhook_token.clone())?;
    let notifier = Notifier::new(poster).map_err(anyhow::Error::msg)?;
    let ceremonies = Ceremonies {
        state,
        store,
        files,
        admin_token: config.admin_token.clone(),
        scheduler: Scheduler::new(
            format!("{}-{}", std::process::id(), sb_protocol::new_id()),
            Duration::from_secs(settings.catch_up_grace_secs),
        ),
        notifier,
    };
    if settings.enabled {
        drop(ceremonies.clone().spawn_firing(stop.clone()));
    }
    Ok(sb_gateway::ceremonies::routes(ceremonies))
}
