//! ListTasks page tokens: base64url of `{ts,id}` (where the last page ended), opaque to clients.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sb_protocol::A2AError;
use sb_store::ListPosition;

pub fn encode(cursor: &ListPosition) -> String {
    let json = serde_json::json!({"ts": cursor.ts_millis, "id": cursor.id});
    URL_SAFE_NO_PAD.encode(json.to_string())
}

pub fn decode(token: &str) -> Result<ListPosition, A2AError> {
    let invalid = || A2AError::invalid_field("pageToken", "is not a token this server issued");
    let bytes = URL_SAFE_NO_PAD
        .decode(token.trim())
        .map_err(|_| invalid())?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    let ts_millis = value["ts"].as_i64().ok_or_else(invalid)?;
    let id = value["id"].as_str().ok_or_else(invalid)?.to_owned();
    Ok(ListPosition { ts_millis, id })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_garbage() {
        let c = ListPosition {
            ts_millis: 42,
            id: "t".into(),
        };
        assert_eq!(decode(&encode(&c)).unwrap(), c);
        assert!(decode("!!").is_err());
        assert!(decode(&URL_SAFE_NO_PAD.encode("{}")).is_err());
    }
}
