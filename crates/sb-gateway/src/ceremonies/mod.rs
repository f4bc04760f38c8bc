//! Ceremonies (the fleet guide's scheduled invocations) on every gateway: the API the
//! guide describes at `/api/ceremonies` (`api`), who is calling it ([`keys`]), and the
//! loop that fires them (`firing`, which reports a store it cannot read through
//! `outage`), all over the fleet layer's [`FleetStore`] — the
//! backend's in the all-in-one, the task-state service's over gRPC in the split
//! deployment — so every replica sees the same ceremonies, claims and runs.

mod api;
mod firing;
pub mod keys;
mod outage;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use sb_fleet::ceremonies::files::Loaded;
use sb_fleet::ceremonies::notify::Notifier;
use sb_fleet::ceremonies::schedule::Scheduler;
use sb_store::FleetStore;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::AppState;

pub use firing::owner_of;

/// What the ceremonies' API and firing loop work from.
#[derive(Clone, Debug)]
pub struct Ceremonies {
    /// Where a firing's tasks are sent, as any inbound call's are.
    pub state: AppState,
    pub store: Arc<dyn FleetStore>,
    /// The ceremonies directory as last read (empty without one).
    pub files: watch::Receiver<Arc<Loaded>>,
    /// The admin key: it may change any ceremony made through the API.
    pub admin_token: Option<String>,
    /// This replica's claims on firings, and the catch-up grace.
    pub scheduler: Scheduler,
    pub notifier: Notifier,
}

impl Ceremonies {
    fn files(&self) -> Arc<Loaded> {
        self.files.borrow().clone()
    }

    /// Fires the ceremonies in force, about once a second, until `stop`.
    pub fn spawn_firing(self, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        tokio::spawn(firing::run(self, stop))
    }
}

/// `GET /api/ceremonies`, `POST /api/ceremonies/create`, `GET /api/ceremonies/{id}`,
/// `GET /api/ceremonies/{id}/runs`, `POST /api/ceremonies/{id}/update`,
/// `POST /api/ceremonies/{id}/delete`, `POST /api/ceremonies/{id}/run`.
pub fn routes(ceremonies: Ceremonies) -> Router {
    Router::new()
        .route("/api/ceremonies", get(api::list))
        .route("/api/ceremonies/create", post(api::create))
        .route("/api/ceremonies/{id}", get(api::one))
        .route("/api/ceremonies/{id}/runs", get(api::runs))
        .route("/api/ceremonies/{id}/update", post(api::update))
        .route("/api/ceremonies/{id}/delete", post(api::delete))
        .route("/api/ceremonies/{id}/run", post(api::run_now))
        .with_state(ceremonies)
}
