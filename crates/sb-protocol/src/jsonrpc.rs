//! The JSON-RPC 2.0 envelope: parsing with the standard error codes, and method names of
//! both protocol versions (digest §1.3, §2.1).

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::Version;
use crate::error::{A2AError, ErrorKind};
use crate::serde_util::json_kind;

/// A well-formed JSON-RPC request. `params` is an object's JSON text, kept unparsed so
/// the hot operations deserialise it straight into their request types.
#[derive(Clone, Debug)]
pub struct Request {
    pub id: Value,
    pub method: String,
    pub params: Box<RawValue>,
}

impl Request {
    /// The params as a JSON value (the operations that edit them before typing them).
    pub fn params_value(&self) -> Value {
        params_value(&self.params)
    }
}

/// `params` text (always an object, see [`Request`]) as a JSON value.
pub fn params_value(params: &RawValue) -> Value {
    serde_json::from_str(params.get()).unwrap_or_else(|_| Value::Object(Default::default()))
}

/// The envelope as the fast path reads it: anything unusual (a duplicate member, an
/// escaped method name, a wrong type) fails here and goes to [`parse_request_value`],
/// which accepts what JSON-RPC allows and words the errors.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(borrow)]
    jsonrpc: Option<&'a str>,
    #[serde(borrow)]
    method: Option<&'a str>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

fn empty_params() -> Box<RawValue> {
    // `{}` is valid JSON: the default (`null`) is never taken.
    RawValue::from_string("{}".to_owned()).unwrap_or_default()
}

/// A request that failed envelope validation; `id` is what could be read of it.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvelopeError {
    pub id: Value,
    pub error: A2AError,
}

/// Parses and validates a JSON-RPC request body.
// Called once per request and returned straight to the caller: the size is irrelevant.
#[allow(clippy::result_large_err)]
pub fn parse_request(body: &[u8]) -> Result<Request, EnvelopeError> {
    if let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(body)
        && matches!(
            envelope.id,
            None | Some(Value::String(_) | Value::Number(_) | Value::Null)
        )
        && envelope.jsonrpc == Some("2.0")
        && let Some(method) = envelope.method.filter(|m| !m.is_empty())
    {
        let params = match envelope.params {
            None => Some(empty_params()),
            Some(raw) if raw.get() == "null" => Some(empty_params()),
            Some(raw) if raw.get().starts_with('{') => Some(raw.to_owned()),
            Some(_) => None,
        };
        if let Some(params) = params {
            return Ok(Request {
                id: envelope.id.unwrap_or(Value::Null),
                method: method.to_owned(),
                params,
            });
        }
    }
    parse_request_value(body)
}

/// The envelope read through a `Value`: slower, but it takes any valid request and
/// explains exactly what is wrong with an invalid one.
#[allow(clippy::result_large_err)]
fn parse_request_value(body: &[u8]) -> Result<Request, EnvelopeError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| EnvelopeError {
        id: Value::Null,
        error: A2AError::new(
            ErrorKind::ParseError,
            format!("request body is not valid JSON: {e}"),
        ),
    })?;
    let invalid = |id: Value, message: String| EnvelopeError {
        id,
        error: A2AError::new(ErrorKind::InvalidRequest, message),
    };
    let Value::Object(mut obj) = value else {
        let message = match value {
            Value::Array(_) => {
                "batch requests are not supported; send one request object".to_owned()
            }
            other => format!(
                "a JSON-RPC request must be an object, found {}",
                json_kind(&other)
            ),
        };
        return Err(invalid(Value::Null, message));
    };
    let id = match obj.remove("id") {
        None => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id,
        Some(other) => {
            return Err(invalid(
                Value::Null,
                format!(
                    "\"id\" must be a string, a number or null, found {}",
                    json_kind(&other)
                ),
            ));
        }
    };
    match obj.remove("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(other) => {
            return Err(invalid(
                id,
                format!("\"jsonrpc\" must be \"2.0\", found {other}"),
            ));
        }
        None => return Err(invalid(id, "\"jsonrpc\": \"2.0\" is required".to_owned())),
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        Some(other) => {
            return Err(invalid(
                id,
                format!("\"method\" must be a non-empty string, found {other}"),
            ));
        }
        None => return Err(invalid(id, "\"method\" is required".to_owned())),
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => empty_params(),
        Some(p @ Value::Object(_)) => {
            serde_json::value::to_raw_value(&p).map_err(|e| EnvelopeError {
                id: id.clone(),
                error: A2AError::invalid_params(format!("\"params\" cannot be read: {e}")),
            })?
        }
        Some(other) => {
            return Err(EnvelopeError {
                id,
                error: A2AError::invalid_params(format!(
                    "\"params\" must be an object, found {}",
                    json_kind(&other)
                )),
            });
        }
    };
    Ok(Request { id, method, params })
}

/// A success response.
pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// [`success`] as text around a result that is JSON text already (one serialisation of
/// an event shared by many streams).
pub fn success_text(id: &Value, result_json: &str) -> String {
    success_text_for(&id.to_string(), result_json)
}

/// [`success_text`] for an id serialised already: a stream serialises its request's id
/// once for all its events.
pub fn success_text_for(id_json: &str, result_json: &str) -> String {
    const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
    const RESULT: &str = r#","result":"#;
    let mut text =
        String::with_capacity(HEAD.len() + id_json.len() + RESULT.len() + result_json.len() + 1);
    text.push_str(HEAD);
    text.push_str(id_json);
    text.push_str(RESULT);
    text.push_str(result_json);
    text.push('}');
    text
}

/// An error response in the error shape of `version`.
pub fn failure(id: &Value, error: &A2AError, version: Version) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.jsonrpc_error(version)})
}

/// The A2A operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreatePushConfig,
    GetPushConfig,
    ListPushConfigs,
    DeletePushConfig,
    GetExtendedCard,
}

impl Operation {
    /// The operation's name in metrics and logs (what its `Debug` prints).
    pub fn name(self) -> &'static str {
        match self {
            Self::SendMessage => "SendMessage",
            Self::SendStreamingMessage => "SendStreamingMessage",
            Self::GetTask => "GetTask",
            Self::ListTasks => "ListTasks",
            Self::CancelTask => "CancelTask",
            Self::SubscribeToTask => "SubscribeToTask",
            Self::CreatePushConfig => "CreatePushConfig",
            Self::GetPushConfig => "GetPushConfig",
            Self::ListPushConfigs => "ListPushConfigs",
            Self::DeletePushConfig => "DeletePushConfig",
            Self::GetExtendedCard => "GetExtendedCard",
        }
    }

    pub fn is_streaming(self) -> bool {
        matches!(self, Self::SendStreamingMessage | Self::SubscribeToTask)
    }
}

/// Maps a method name to its operation and the version whose dialect it speaks. The two
/// naming sets do not overlap, so the name alone decides (digest §1.2 recommendation).
pub fn resolve_method(name: &str) -> Option<(Operation, Version)> {
    use Operation::*;
    let resolved = match name {
        "SendMessage" => (SendMessage, Version::V1_0),
        "SendStreamingMessage" => (SendStreamingMessage, Version::V1_0),
        "GetTask" => (GetTask, Version::V1_0),
        "ListTasks" => (ListTasks, Version::V1_0),
        "CancelTask" => (CancelTask, Version::V1_0),
        "SubscribeToTask" => (SubscribeToTask, Version::V1_0),
        "CreateTaskPushNotificationConfig" => (CreatePushConfig, Version::V1_0),
        "GetTaskPushNotificationConfig" => (GetPushConfig, Version::V1_0),
        "ListTaskPushNotificationConfigs" => (ListPushConfigs, Version::V1_0),
        "DeleteTaskPushNotificationConfig" => (DeletePushConfig, Version::V1_0),
        "GetExtendedAgentCard" => (GetExtendedCard, Version::V1_0),
        "message/send" | "tasks/send" => (SendMessage, Version::V0_3),
        "message/stream" | "message/sendStream" | "tasks/sendSubscribe" => {
            (SendStreamingMessage, Version::V0_3)
        }
        "tasks/get" => (GetTask, Version::V0_3),
        "tasks/cancel" => (CancelTask, Version::V0_3),
        "tasks/resubscribe" => (SubscribeToTask, Version::V0_3),
        "tasks/pushNotificationConfig/set" => (CreatePushConfig, Version::V0_3),
        "tasks/pushNotificationConfig/get" => (GetPushConfig, Version::V0_3),
        "tasks/pushNotificationConfig/list" => (ListPushConfigs, Version::V0_3),
        "tasks/pushNotificationConfig/delete" => (DeletePushConfig, Version::V0_3),
        "agent/getAuthenticatedExtendedCard" => (GetExtendedCard, Version::V0_3),
        _ => return None,
    };
    Some(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operations_name_is_what_debug_prints() {
        use Operation::*;
        let all = [
            SendMessage,
            SendStreamingMessage,
            GetTask,
            ListTasks,
            CancelTask,
            SubscribeToTask,
            CreatePushConfig,
            GetPushConfig,
            ListPushConfigs,
            DeletePushConfig,
            GetExtendedCard,
        ];
        for op in all {
            assert_eq!(op.name(), format!("{op:?}"));
        }
    }

    #[test]
    fn success_text_is_success_serialised() {
        for id in [json!(7), json!("req-\"1\""), Value::Null] {
            let result =
                json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}});
            let text = success_text(&id, &result.to_string());
            assert_eq!(success_text_for(&id.to_string(), &result.to_string()), text);
            assert_eq!(
                serde_json::from_str::<Value>(&text).unwrap(),
                success(&id, result)
            );
        }
    }

    fn code(body: &str) -> i64 {
        parse_request(body.as_bytes())
            .unwrap_err()
            .error
            .kind
            .jsonrpc_code()
    }

    #[test]
    fn envelope_errors_use_standard_codes() {
        assert_eq!(code("{not json"), -32700);
        assert_eq!(code("[]"), -32600);
        assert_eq!(code("42"), -32600);
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), -32600);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#), -32600);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            -32602
        );
        let err = parse_request(br#"{"jsonrpc":"1.0","id":"keep","method":"x"}"#).unwrap_err();
        assert_eq!(err.id, Value::String("keep".into()));
    }

    #[test]
    fn good_envelope() {
        let req = parse_request(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask"}"#).unwrap();
        assert_eq!(req.id, json!(7));
        assert_eq!(req.params_value(), json!({}));
        assert_eq!(
            resolve_method(&req.method),
            Some((Operation::GetTask, Version::V1_0))
        );
        assert_eq!(
            resolve_method("tasks/sendSubscribe").unwrap().1,
            Version::V0_3
        );
        assert_eq!(resolve_method("tasks/list"), None);
    }

    /// What the fast envelope reader declines, the `Value` reader still accepts.
    #[test]
    fn unusual_envelopes_read_like_usual_ones() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":"a","method":"GetTask","params" : { "id" : "t" } }"#,
                json!("a"),
                json!({"id": "t"}),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"x","method":"GetTask","params":{"id":"t"}}"#,
                Value::Null,
                json!({"id": "t"}),
            ),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"Get\u0054ask","params":null}"#,
                Value::Null,
                json!({}),
            ),
            (
                r#"{"jsonrpc":"2\u002e0","id":3.5,"method":"GetTask","extra":[1]}"#,
                json!(3.5),
                json!({}),
            ),
        ];
        for (body, id, params) in cases {
            let req = parse_request(body.as_bytes()).unwrap();
            assert_eq!(req.method, "GetTask", "{body}");
            assert_eq!(req.id, id, "{body}");
            assert_eq!(req.params_value(), params, "{body}");
        }
    }
}
