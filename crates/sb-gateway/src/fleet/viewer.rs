//! Who is asking a `/fleet/*` endpoint, and what they may see: the admin token
//! (`Authorization: Bearer <admin token>`) sees every agent and every principal's tasks;
//! anyone else sees the agents their credentials authenticate to (an agent without
//! authentication: anyone), and on each only their own tasks, as that agent's A2A
//! endpoint would show them.

use std::collections::BTreeMap;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use sb_registry::Fleet;

use super::error;
use crate::AppState;

/// What the caller may see.
#[derive(Debug)]
pub enum Viewer {
    Admin,
    /// The agents they may see, each with the owner their tasks there carry.
    Principal(BTreeMap<String, String>),
}

impl Viewer {
    /// Authenticates the request; a caller who can see no agent at all (and is not the
    /// admin) is refused with a 401 saying what to send.
    pub fn of(
        state: &AppState,
        admin_token: Option<&str>,
        fleet: &Fleet,
        headers: &HeaderMap,
    ) -> Result<Viewer, Box<Response>> {
        if admin_token.is_some_and(|token| sb_webhooks::admin::presents(token, headers)) {
            return Ok(Viewer::Admin);
        }
        let mut visible = BTreeMap::new();
        for name in fleet.agents.keys() {
            let owner = match state.auth.get(name) {
                None => String::new(),
                Some(auth) => match auth.authenticate(headers) {
                    Ok(caller) => caller.owner().to_owned(),
                    Err(_) => continue,
                },
            };
            visible.insert(name.clone(), owner);
        }
        if visible.is_empty() && !fleet.agents.is_empty() {
            return Err(Box::new(error(
                StatusCode::UNAUTHORIZED,
                "these credentials open no agent of this fleet: send the admin token as \
                 Authorization: Bearer <admin token>, or credentials one of the agents accepts",
            )));
        }
        Ok(Viewer::Principal(visible))
    }

    pub fn sees_agent(&self, agent: &str) -> bool {
        match self {
            Viewer::Admin => true,
            Viewer::Principal(visible) => visible.contains_key(agent),
        }
    }

    /// Whether a task of `agent` owned by `owner` is the caller's to see.
    pub fn sees_task(&self, agent: &str, owner: &str) -> bool {
        match self {
            Viewer::Admin => true,
            Viewer::Principal(visible) => visible.get(agent).is_some_and(|o| o == owner),
        }
    }
}
