//! `GET /fleet/health`: the fleet health report ([`sb_fleet::HealthReport`]) for the
//! agents the caller may see; `?window=1h` or `?window=24h` for one window only.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use sb_fleet::health::report;
use sb_fleet::{AgentSkills, Window};
use sb_registry::AgentKind;
use serde::Deserialize;

use super::{FleetEdge, error, unavailable};

#[derive(Debug, Deserialize)]
pub(super) struct HealthQuery {
    window: Option<String>,
}

pub(super) async fn fleet_health(
    State(edge): State<FleetEdge>,
    Query(query): Query<HealthQuery>,
    headers: HeaderMap,
) -> Response {
    let windows = match query.window.as_deref() {
        None => Window::ALL.to_vec(),
        Some(name) => match Window::parse(name) {
            Some(window) => vec![window],
            None => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!("window must be 1h or 24h, not {name:?}"),
                );
            }
        },
    };
    let viewer = match edge.viewer(&headers) {
        Ok(viewer) => viewer,
        Err(refusal) => return *refusal,
    };
    let fleet = edge.state.registry.fleet();
    let agents: Vec<AgentSkills> = fleet
        .agents
        .iter()
        .filter(|(name, _)| viewer.sees_agent(name))
        .map(|(name, served)| {
            let routes = served.registration.definition.kind == AgentKind::Router;
            let skills = served.entry.card.skills.iter().map(|s| s.id.clone());
            AgentSkills {
                agent: name.clone(),
                skills: skills.filter(|_| !routes).collect(),
                routes,
            }
        })
        .collect();
    drop(fleet);
    // The last hour judges health, so it is read even when only the day is asked for.
    let mut counters = BTreeMap::new();
    for window in Window::ALL {
        match edge.service.counters(window).await {
            Ok(read) => counters.insert(window, read),
            Err(e) => return unavailable(&e),
        };
    }
    let waiting = match edge.service.waiting().await {
        Ok(waiting) => waiting,
        Err(e) => return unavailable(&e),
    };
    let waiting: Vec<_> = waiting
        .into_iter()
        .filter(|r| viewer.sees_task(&r.agent, &r.owner))
        .collect();
    let mut report = report::build(
        &counters,
        &agents,
        &waiting,
        edge.policy,
        chrono::Utc::now(),
    );
    report
        .windows
        .retain(|name, _| windows.iter().any(|w| w.name() == *name));
    axum::Json(report).into_response()
}
