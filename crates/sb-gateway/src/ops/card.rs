//! GetExtendedAgentCard.

use sb_protocol::{A2AError, ErrorKind, Version};
use sb_tasks::Scope;

use crate::AppState;

/// GetExtendedAgentCard. An agent that authenticates its callers declares an extended
/// card and serves it to them (every caller that got this far is authenticated); an
/// agent without authentication declares none (`capabilities.extendedAgentCard: false`),
/// which makes this the spec's UnsupportedOperation (§6.3), or 0.3's own code.
pub fn extended_card(
    state: &AppState,
    scope: &Scope,
    version: Version,
) -> Result<serde_json::Value, A2AError> {
    let authenticated = state.auth.get(&scope.agent).is_some_and(|a| a.is_enabled());
    let entry = state
        .registry
        .fleet()
        .card(&scope.agent)
        .filter(|_| authenticated);
    let Some(entry) = entry else {
        return Err(match version {
            Version::V1_0 => A2AError::unsupported("this agent has no extended agent card"),
            Version::V0_3 => A2AError::new(
                ErrorKind::ExtendedAgentCardNotConfigured,
                "this agent has no authenticated extended card",
            ),
        });
    };
    let rendered = match version {
        Version::V1_0 => &entry.v1,
        Version::V0_3 => &entry.merged,
    };
    serde_json::from_str(&rendered.json).map_err(|e| A2AError::internal(e.to_string()))
}
