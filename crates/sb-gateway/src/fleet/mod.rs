//! The fleet's own endpoints on the gateway (`/fleet/*`), beside the agents' A2A ones:
//! the fleet health report (`health`) and the inbox of tasks waiting for a person
//! (`inbox`). Who may see what is in [`viewer`].

mod health;
mod inbox;
pub mod viewer;

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use sb_fleet::{FleetService, HealthPolicy};
use sb_protocol::A2AError;

use crate::AppState;

/// What the fleet endpoints answer from.
#[derive(Clone, Debug)]
pub struct FleetEdge {
    pub state: AppState,
    pub service: Arc<dyn FleetService>,
    pub policy: HealthPolicy,
    /// The admin token: it sees every agent and task.
    pub admin_token: Option<String>,
    /// How long a task may wait for a person before it is canceled (the inbox's deadline).
    pub input_timeout_secs: u64,
}

impl FleetEdge {
    /// Who is asking, and what they may see now.
    fn viewer(&self, headers: &axum::http::HeaderMap) -> Result<viewer::Viewer, Box<Response>> {
        let fleet = self.state.registry.fleet();
        viewer::Viewer::of(&self.state, self.admin_token.as_deref(), &fleet, headers)
    }
}

/// `GET /fleet/health`, `GET /fleet/inbox`, `POST /fleet/inbox/{taskId}/answer`.
pub fn routes(edge: FleetEdge) -> Router {
    Router::new()
        .route("/fleet/health", get(health::fleet_health))
        .route("/fleet/inbox", get(inbox::list))
        .route("/fleet/inbox/{task_id}/answer", post(inbox::answer))
        .with_state(edge)
}

/// An error body as the registry API's: `{"error": {code, status, message}}`.
pub(crate) fn error(status: StatusCode, message: impl Into<String>) -> Response {
    sb_registry::http::error(status, message, None)
}

fn unavailable(e: &A2AError) -> Response {
    error(StatusCode::SERVICE_UNAVAILABLE, e.message.clone())
}
