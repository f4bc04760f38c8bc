//! The delegation depth a message carries (`metadata.delegationDepth`): how many hops of
//! agents calling agents through Switchboard led to it (seed "I6", bounded execution).
//! Switchboard refuses to open a task past its cap, and adds one on each hop it makes
//! itself (a bridged agent's message upstream), so a loop of agents ends. Also the skill
//! a message asks for (`metadata.skill`, the fleet guide's `metadata.skillHint`).

use serde_json::Value;

use crate::{A2AError, Metadata};

/// The metadata key.
pub const DELEGATION_DEPTH: &str = "delegationDepth";

/// The metadata keys naming the skill a message or task is for: Switchboard's own, then
/// the fleet guide's hint (what a ceremony or the routing agent sets).
pub const SKILL_KEYS: [&str; 2] = ["skill", "skillHint"];

/// The skill `metadata` names, by [`SKILL_KEYS`] (an empty name is none).
pub fn skill_of(metadata: Option<&Metadata>) -> Option<String> {
    let metadata = metadata?;
    SKILL_KEYS
        .iter()
        .find_map(|key| metadata.get(*key)?.as_str().filter(|s| !s.is_empty()))
        .map(str::to_owned)
}

/// The depth `metadata` says, 0 when it says none; an entry that is not a non-negative
/// integer is refused.
pub fn depth_of(metadata: Option<&Metadata>) -> Result<u64, A2AError> {
    match metadata.and_then(|m| m.get(DELEGATION_DEPTH)) {
        None | Some(Value::Null) => Ok(0),
        Some(value) => value.as_u64().ok_or_else(|| {
            A2AError::invalid_field(
                "message.metadata.delegationDepth",
                format!("must be a non-negative integer, not {value}"),
            )
        }),
    }
}

/// `metadata` with the depth of the next hop: one more than it says.
pub fn next_hop(metadata: Option<Metadata>) -> Metadata {
    let depth = depth_of(metadata.as_ref()).unwrap_or(0);
    let mut metadata = metadata.unwrap_or_default();
    metadata.insert(DELEGATION_DEPTH.to_owned(), Value::from(depth + 1));
    metadata
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn with(value: Value) -> Metadata {
        let mut metadata = Metadata::new();
        metadata.insert(DELEGATION_DEPTH.into(), value);
        metadata
    }

    #[test]
    fn depths_are_read_and_advanced() {
        assert_eq!(depth_of(None).unwrap(), 0);
        assert_eq!(depth_of(Some(&with(json!(3)))).unwrap(), 3);
        assert!(depth_of(Some(&with(json!("3")))).is_err());
        assert!(depth_of(Some(&with(json!(-1)))).is_err());
        assert!(depth_of(Some(&with(json!(1.5)))).is_err());
        assert_eq!(next_hop(None)[DELEGATION_DEPTH], 1);
        assert_eq!(next_hop(Some(with(json!(7))))[DELEGATION_DEPTH], 8);
    }
}
