//! What the routing agent works through: the gateway's operations over its
//! [`AppState`] (tasks made and followed as the caller's principal, on the agent
//! chosen) and the fleet's health. The agent exists before the gateway does (the
//! registry describes it first), so it holds a [`RouterHandle`] that the deployment
//! binds once the gateway's state is built; a turn that comes earlier (one resumed at
//! startup) waits for it.

use std::sync::Arc;

use sb_fleet::{FleetService, HealthPolicy};
use sb_gateway::AppState;
use tokio::sync::watch;

/// The routing agent's way into the deployment.
#[derive(Clone, Debug)]
pub struct RouterAccess {
    pub state: AppState,
    pub fleet: Arc<dyn FleetService>,
    pub policy: HealthPolicy,
    /// Attempts after the first a routed task may have.
    pub max_reroutes: u32,
}

/// A [`RouterAccess`] bound later; shared by every routing agent of a process.
#[derive(Clone, Debug)]
pub struct RouterHandle(Arc<watch::Sender<Option<Arc<RouterAccess>>>>);

impl Default for RouterHandle {
    fn default() -> RouterHandle {
        RouterHandle(Arc::new(watch::Sender::new(None)))
    }
}

impl RouterHandle {
    /// From now on, routing agents work through `access`.
    pub fn bind(&self, access: RouterAccess) {
        self.0.send_replace(Some(Arc::new(access)));
    }

    /// The access, when bound.
    pub fn get(&self) -> Option<Arc<RouterAccess>> {
        self.0.borrow().clone()
    }

    /// The access, once bound.
    pub async fn ready(&self) -> Arc<RouterAccess> {
        let mut bound = self.0.subscribe();
        loop {
            if let Some(access) = bound.borrow_and_update().clone() {
                return access;
            }
            if bound.changed().await.is_err() {
                // The sender lives in `self`: it cannot be dropped while we wait.
                std::future::pending::<()>().await;
            }
        }
    }
}
