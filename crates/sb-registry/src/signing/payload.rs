//! The signed bytes of a card: its 1.0 JSON without `signatures`, cleaned of empty
//! members as the official SDKs clean it, in RFC 8785 (JCS) form.

use sb_protocol::card::AgentCard;
use serde_json::{Map, Value};

use super::SigningError;

/// Deepest nesting of arrays and objects a card may have (the Python SDK's limit too):
/// free-form extension params could otherwise exhaust the stack.
const MAX_DEPTH: usize = 128;

/// The largest integer an IEEE 754 double holds exactly (RFC 8785 §3.2.2.3, I-JSON).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The bytes that are signed for `card_json` (exposed for tests and debugging).
///
/// `card_json` is read as an [`AgentCard`] first, so the strict 1.0 form, the merged
/// 1.0 + 0.3 form and any other superset of the same card give the same bytes; its
/// `signatures` never count.
pub fn canonical_payload(card_json: &Value) -> Result<Vec<u8>, SigningError> {
    payload_of(&parse_card(card_json)?)
}

/// The canonical payload of a card: its 1.0 JSON, without `signatures`, cleaned, in JCS.
pub(super) fn payload_of(card: &AgentCard) -> Result<Vec<u8>, SigningError> {
    let mut json =
        serde_json::to_value(card).map_err(|e| SigningError::InvalidCard(e.to_string()))?;
    if let Value::Object(members) = &mut json {
        members.remove("signatures");
    }
    let cleaned = clean(json, "$", 1)?.unwrap_or_else(|| Value::Object(Map::new()));
    jcs(&cleaned)
}

/// RFC 8785 bytes of `value`.
pub(super) fn jcs(value: &Value) -> Result<Vec<u8>, SigningError> {
    serde_json_canonicalizer::to_vec(value)
        .map_err(|e| SigningError::Canonicalization(e.to_string()))
}

/// `value` without empty strings, arrays, objects and nulls, at any depth (an array or
/// object left empty by the removal goes too); None when nothing is left. Checks on the way
/// that every integer has an exact double and that the nesting is bounded.
fn clean(value: Value, path: &str, depth: usize) -> Result<Option<Value>, SigningError> {
    let too_deep = || {
        SigningError::Canonicalization(format!("{path} is nested deeper than {MAX_DEPTH} levels"))
    };
    Ok(match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Number(n) => {
            let magnitude = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Some(u),
                (None, Some(i)) => Some(i.unsigned_abs()),
                (None, None) => None,
            };
            if magnitude.is_some_and(|m| m > MAX_SAFE_INTEGER) {
                return Err(SigningError::Canonicalization(format!(
                    "the integer {n} at {path} is beyond ±(2^53 - 1), which a JSON number \
                     cannot carry exactly (RFC 8785 §3.2.2.3); send it as a string"
                )));
            }
            Some(Value::Number(n))
        }
        Value::Array(items) => {
            if depth > MAX_DEPTH {
                return Err(too_deep());
            }
            let mut kept = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                if let Some(item) = clean(item, &format!("{path}[{i}]"), depth + 1)? {
                    kept.push(item);
                }
            }
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(members) => {
            if depth > MAX_DEPTH {
                return Err(too_deep());
            }
            let mut kept = Map::new();
            for (name, member) in members {
                if let Some(member) = clean(member, &format!("{path}.{name}"), depth + 1)? {
                    kept.insert(name, member);
                }
            }
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other),
    })
}

/// The card in `card_json` as the 1.0 model, ignoring fields the model does not have.
pub(super) fn parse_card(card_json: &Value) -> Result<AgentCard, SigningError> {
    AgentCard::from_served_json(card_json).map_err(|e| SigningError::InvalidCard(e.to_string()))
}
