//! Conversions between the generated prost messages and the `sb-protocol` model.
//!
//! Both sides serialize to ProtoJSON (pbjson on the prost side, our serde model on the
//! other), so a conversion is a round trip through `serde_json::Value`: one mapping to
//! keep right (the model's), not a second hand-written one per field.

use sb_protocol::A2AError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A request message into the model's request type; a shape the model refuses is the
/// client's mistake (InvalidParams, naming the field serde complained about).
pub fn request<M: Serialize, T: DeserializeOwned>(message: &M) -> Result<T, A2AError> {
    let value = serde_json::to_value(message)
        .map_err(|e| A2AError::internal(format!("encoding the request as JSON: {e}")))?;
    sb_protocol::requests::parse_params(whole_numbers(value))
}

/// `google.protobuf.Value` numbers are doubles, so a `3` in metadata comes back as `3.0`.
/// JSON does not tell the two apart, but our readers (e.g. of a resume cursor) and
/// clients of the other bindings expect the integer, so whole numbers within the exact
/// range of a double become integers again.
fn whole_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                // Exact: |f| < 2^53 and whole.
                Value::from(f as i64)
            }
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(whole_numbers).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, whole_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}

/// A model value into a response message; failing here is our bug (Internal).
pub fn response<T: Serialize, M: DeserializeOwned>(value: &T) -> Result<M, A2AError> {
    let json = serde_json::to_value(value)
        .map_err(|e| A2AError::internal(format!("encoding the response as JSON: {e}")))?;
    from_json(json)
}

/// A JSON value (e.g. a rendered agent card) into a message.
pub fn from_json<M: DeserializeOwned>(json: Value) -> Result<M, A2AError> {
    serde_json::from_value(json)
        .map_err(|e| A2AError::internal(format!("response does not fit the proto: {e}")))
}

/// A message into a model value, for clients reading responses.
pub fn to_model<M: Serialize, T: DeserializeOwned>(message: &M) -> Result<T, A2AError> {
    let value = serde_json::to_value(message)
        .map_err(|e| A2AError::internal(format!("encoding the message as JSON: {e}")))?;
    serde_json::from_value(whole_numbers(value))
        .map_err(|e| A2AError::internal(format!("message does not fit the model: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb;
    use sb_protocol::requests::SendMessageRequest;
    use sb_protocol::{PartContent, Task, TaskState};
    use serde_json::json;

    #[test]
    fn task_survives_model_to_proto_to_model() {
        let wire = json!({
            "id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-01-02T03:04:05.750Z"},
            "artifacts": [{"artifactId": "a1", "name": "out",
                           "parts": [{"text": "chunk1"}, {"raw": "AAE=", "mediaType": "application/octet-stream"},
                                     {"url": "https://x/y", "filename": "y"}, {"data": {"k": [1, "two", null]}}]}],
            "history": [{"messageId": "u1", "role": "ROLE_USER", "parts": [{"text": "hi"}],
                         "metadata": {"n": 1.5}}],
            "metadata": {"urn:x": {"seq": 3}}
        });
        let task: Task = serde_json::from_value(wire).unwrap();
        let proto: pb::Task = response(&task).unwrap();
        assert_eq!(
            proto.status.as_ref().unwrap().state,
            pb::TaskState::InputRequired as i32
        );
        let parts = &proto.artifacts[0].parts;
        assert_eq!(parts[1].content, Some(pb::part::Content::Raw(vec![0, 1])));
        let back: Task = to_model(&proto).unwrap();
        assert_eq!(back, task);
        assert_eq!(back.status.state, TaskState::InputRequired);
        assert!(matches!(
            back.artifacts[0].parts[3].content,
            PartContent::Data(_)
        ));
    }

    #[test]
    fn requests_decode_and_bad_ones_are_invalid_params() {
        let proto = pb::SendMessageRequest {
            tenant: "echo".into(),
            message: Some(pb::Message {
                message_id: "m1".into(),
                role: pb::Role::User as i32,
                parts: vec![pb::Part {
                    content: Some(pb::part::Content::Text("hi".into())),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            configuration: Some(pb::SendMessageConfiguration {
                history_length: Some(0),
                return_immediately: true,
                ..Default::default()
            }),
            metadata: None,
        };
        let req: SendMessageRequest = request(&proto).unwrap();
        assert_eq!(req.tenant.as_deref(), Some("echo"));
        assert_eq!(req.message.parts[0].as_text(), Some("hi"));
        assert_eq!(req.history_length(), Some(0), "an explicit 0 is kept");
        assert!(req.returns_immediately());
        let missing = request::<_, SendMessageRequest>(&pb::SendMessageRequest::default());
        assert_eq!(
            missing.unwrap_err().kind,
            sb_protocol::ErrorKind::InvalidParams
        );
    }
}
