//! One job per bridged agent of a fleet, started as the agent joins and stopped as it
//! leaves or its definition changes (then started again with the new one): what the
//! refresher of upstream cards and a worker's sessions for registered agents both are.

use std::collections::BTreeMap;
use std::sync::Arc;

use sb_registry::{AgentDefinition, AgentKind, Fleet};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The definitions of the fleet's bridged agents.
pub fn bridged(fleet: &Fleet) -> impl Iterator<Item = &AgentDefinition> {
    fleet
        .agents
        .values()
        .map(|a| &a.registration.definition)
        .filter(|d| d.kind == AgentKind::A2a)
}

/// Calls `start` with each bridged agent of the fleet `fleet` follows that `wanted`
/// keeps, and a token that is canceled when the agent leaves the fleet or its
/// definition changes, until `stop` (which cancels them all).
pub async fn for_each_bridged_agent(
    mut fleet: watch::Receiver<Arc<Fleet>>,
    wanted: impl Fn(&AgentDefinition) -> bool,
    mut start: impl FnMut(&AgentDefinition, CancellationToken),
    stop: CancellationToken,
) {
    let mut running: BTreeMap<String, (AgentDefinition, CancellationToken)> = BTreeMap::new();
    loop {
        let current: BTreeMap<String, AgentDefinition> = bridged(&fleet.borrow_and_update())
            .filter(|d| wanted(d))
            .map(|d| (d.name.clone(), d.clone()))
            .collect();
        running.retain(|name, (definition, token)| {
            let keep = current.get(name) == Some(definition);
            if !keep {
                token.cancel();
            }
            keep
        });
        for (name, definition) in current {
            if running.contains_key(&name) {
                continue;
            }
            let token = stop.child_token();
            start(&definition, token.clone());
            running.insert(name, (definition, token));
        }
        tokio::select! {
            () = stop.cancelled() => return,
            changed = fleet.changed() => if changed.is_err() { return },
        }
    }
}
