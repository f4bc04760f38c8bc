//! Reading an answer: its JSON, or the [`A2AError`] it carries, named by the
//! `google.rpc.ErrorInfo` reason of a `google.rpc.Status` body, else by the JSON-RPC code
//! a 0.3 body carries, else by the HTTP status.

use reqwest::StatusCode;
use sb_protocol::{A2AError, ErrorKind};
use serde_json::Value;

use crate::transport::CallError;
use crate::wire::Tap;

/// The JSON of an answer (`Null` for an empty body, e.g. a 204), or the error it carries;
/// `on_task` when the route names a task (`tasks/{id}…`), where a bare 404 means it is not found.
pub(super) async fn answer(
    name: &str,
    response: reqwest::Response,
    on_task: bool,
    tap: &Tap,
) -> Result<Value, CallError> {
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| CallError::Transport(format!("{name}: HTTP {status}, the body broke: {e}")))?;
    tap.response(name, status, &body);
    let reply = match body.is_empty() {
        true => Some(Value::Null),
        false => serde_json::from_slice::<Value>(&body).ok(),
    };
    match (status.is_success(), reply) {
        (true, Some(reply)) => Ok(reply),
        (true, None) => Err(CallError::Transport(format!(
            "{name}: HTTP {status} with a body that is not JSON"
        ))),
        // A gateway's own page: the call did not get through to the agent.
        (false, None | Some(Value::Null)) if matches!(status.as_u16(), 502..=504) => Err(
            CallError::Transport(format!("{name}: HTTP {status} from the way there")),
        ),
        (false, reply) => Err(CallError::A2A(error_of(
            Some(status),
            reply.as_ref().unwrap_or(&Value::Null),
            on_task,
        ))),
    }
}

/// The error an answer or an event carries instead of a result: a `google.rpc.Status`
/// (`{"error": {…}}`), or a 0.3 `{code, message}` (the JS SDK's).
pub(super) fn error_in(reply: &Value) -> Option<A2AError> {
    let status = reply.get("error").is_some_and(Value::is_object);
    let legacy = reply.get("code").is_some_and(Value::is_i64)
        && reply.get("message").is_some_and(Value::is_string);
    (status || legacy).then(|| error_of(None, reply, false))
}

/// The A2A error of an error body: by its ErrorInfo reason, else by the JSON-RPC code of
/// a 0.3 body (ours as `a2aCode`, the JS SDK's as `code`), else by the HTTP status.
fn error_of(status: Option<StatusCode>, body: &Value, on_task: bool) -> A2AError {
    let error = body.get("error").filter(|e| e.is_object()).unwrap_or(body);
    let info = error
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.ErrorInfo"))
        });
    let by_reason = info
        .and_then(|i| i.get("reason"))
        .and_then(Value::as_str)
        .and_then(ErrorKind::from_reason);
    let by_code = || {
        let code = error.get("a2aCode").or_else(|| error.get("code"));
        code.and_then(Value::as_i64)
            .and_then(ErrorKind::from_jsonrpc_code)
    };
    let kind = by_reason
        .or_else(by_code)
        .unwrap_or_else(|| status.map_or(ErrorKind::Internal, |s| kind_of_status(s, on_task)));
    let message = match (error.get("message").and_then(Value::as_str), status) {
        (Some(message), _) => message.to_owned(),
        (None, Some(status)) => format!("HTTP {status}"),
        (None, None) => "the server sent an error without a message".to_owned(),
    };
    A2AError::new(kind, message)
}

/// The kind an HTTP status names (the 1.0.1 table, and the 0.3 Python SDK's own codes).
fn kind_of_status(status: StatusCode, on_task: bool) -> ErrorKind {
    match status.as_u16() {
        401 | 403 => ErrorKind::Unauthenticated,
        404 if on_task => ErrorKind::TaskNotFound,
        404 | 405 => ErrorKind::MethodNotFound,
        409 => ErrorKind::TaskNotCancelable,
        413 => ErrorKind::PayloadTooLarge,
        415 => ErrorKind::ContentTypeNotSupported,
        422 => ErrorKind::InvalidParams,
        429 => ErrorKind::ResourceExhausted,
        501 => ErrorKind::UnsupportedOperation,
        502 => ErrorKind::InvalidAgentResponse,
        400..=499 => ErrorKind::InvalidRequest,
        _ => ErrorKind::Internal,
    }
}
