//! The JSON-RPC 2.0 envelope: parsing with the standard error codes, and method names of
//! both protocol versions (digest §1.3, §2.1).

use serde_json::{Value, json};

use crate::Version;
use crate::error::{A2AError, ErrorKind};
use crate::serde_util::json_kind;

/// A well-formed JSON-RPC request.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub id: Value,
    pub method: String,
    pub params: Value,
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
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(p @ Value::Object(_)) => p,
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
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result_json}}}"#)
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
    fn success_text_is_success_serialised() {
        for id in [json!(7), json!("req-\"1\""), Value::Null] {
            let result =
                json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING"}}});
            let text = success_text(&id, &result.to_string());
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
        assert!(req.params.is_object());
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
}
