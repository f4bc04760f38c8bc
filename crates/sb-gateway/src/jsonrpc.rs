//! The JSON-RPC binding, both versions on one URL: the method name picks the dialect
//! (slash names are 0.3, PascalCase names 1.0), `A2A-Version` must be one we speak.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use sb_protocol::jsonrpc::{self, Operation};
use sb_protocol::requests::{
    GetTaskRequest, ListPushConfigsRequest, ListPushConfigsResponse, ListTasksRequest,
    PushConfigRequest, SendMessageRequest, TaskIdRequest, parse_params, parse_params_raw,
};
use sb_protocol::v03::{self, Dialect03};
use sb_protocol::{A2AError, ErrorKind, Metadata, TaskPushNotificationConfig, Version};
use sb_tasks::Scope;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::wire::{self, Wire, json_text_response};
use crate::{AppState, Request};
use crate::{metrics, ops};

const KIND: Dialect03 = Dialect03::KindJson;

/// The response to a unary call whose result is JSON text already.
fn reply(id: &Value, result: Result<String, A2AError>, version: Version) -> Response {
    let outcome = metrics::outcome(&result);
    let body = match result {
        Ok(json) => jsonrpc::success_text(id, &json),
        Err(err) => jsonrpc::failure(id, &err, version).to_string(),
    };
    metrics::tag(json_text_response(StatusCode::OK, body), "unknown", outcome)
}

/// Handles one JSON-RPC POST.
pub async fn handle(state: &AppState, scope: &Scope, req: Request) -> Response {
    let header_version = Version::negotiate(req.header("a2a-version"));
    let envelope_version = header_version.clone().unwrap_or(Version::V1_0);
    if let Err(err) = check_json_content_type(&req.headers) {
        return reply(&Value::Null, Err(err), envelope_version);
    }
    let rpc = match jsonrpc::parse_request(&req.body) {
        Ok(rpc) => rpc,
        Err(e) => return reply(&e.id, Err(e.error), envelope_version),
    };
    let Some((op, version)) = jsonrpc::resolve_method(&rpc.method) else {
        let err = A2AError::new(
            ErrorKind::MethodNotFound,
            format!(
                "method \"{}\" does not exist; A2A 1.0 methods are PascalCase (e.g. SendMessage), 0.3 methods look like message/send",
                rpc.method
            ),
        );
        return reply(&rpc.id, Err(err), envelope_version);
    };
    let name = op.name();
    if let Err(err) = header_version {
        return metrics::name_operation(reply(&rpc.id, Err(err), version), name);
    }
    let wire = match version {
        Version::V1_0 => Wire::V1,
        Version::V0_3 => Wire::V03(KIND),
    };
    if op.is_streaming() {
        return metrics::name_operation(
            stream(state, scope, &req, rpc.id, rpc.params, op, wire).await,
            name,
        );
    }
    let result = unary(state, scope, rpc.params, op, wire).await;
    metrics::name_operation(reply(&rpc.id, result, version), name)
}

/// Accepts `application/json` (and `application/a2a+json`); a missing header is taken as
/// JSON, anything else is refused before the body is read (-32005).
pub(crate) fn check_json_content_type(headers: &HeaderMap) -> Result<(), A2AError> {
    let Some(value) = headers.get(axum::http::header::CONTENT_TYPE) else {
        return Ok(());
    };
    let media = sb_protocol::media_type_essence(value.to_str().unwrap_or_default());
    if media == "application/json" || media == "application/a2a+json" {
        return Ok(());
    }
    Err(A2AError::new(
        ErrorKind::ContentTypeNotSupported,
        format!("Content-Type \"{media}\" is not supported; send application/json"),
    ))
}

fn take_str(params: &mut Map<String, Value>, key: &str) -> Option<String> {
    match params.remove(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// A 0.3 config registered without an id gets the task id as its id, as the 0.3 SDKs do,
/// so it can be addressed later.
pub(crate) fn default_config_id(inner: Value, task_id: &str) -> Value {
    match inner {
        Value::Object(mut obj) => {
            let missing = obj
                .get("id")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            if missing {
                obj.insert("id".into(), Value::String(task_id.to_owned()));
            }
            Value::Object(obj)
        }
        other => other,
    }
}

fn metadata_cursor(metadata: Option<&Metadata>) -> Option<u64> {
    let value = metadata?.get(ops::RESUME_EXTENSION)?.get("lastEventId")?;
    let text = value
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| value.to_string());
    text.trim().parse().ok().filter(|n: &u64| *n < (1 << 53))
}

pub(crate) fn decode_send(params: Value, wire: Wire) -> Result<SendMessageRequest, A2AError> {
    match wire {
        Wire::V1 => parse_params(params),
        Wire::V03(dialect) => decode_send_v03(params, dialect),
    }
}

fn decode_send_v03(params: Value, dialect: Dialect03) -> Result<SendMessageRequest, A2AError> {
    let normalized = v03::send_params_from_v03(params, dialect)
        .map_err(|e| A2AError::invalid_params(format!("invalid params: {e}")))?;
    parse_params(normalized)
}

/// [`decode_send`] from a JSON-RPC request's params text: 1.0 is read straight into
/// its type (the hot path), 0.3 is normalised through a `Value`.
fn decode_send_raw(params: &RawValue, wire: Wire) -> Result<SendMessageRequest, A2AError> {
    match wire {
        Wire::V1 => parse_params_raw(params),
        Wire::V03(dialect) => decode_send_v03(jsonrpc::params_value(params), dialect),
    }
}

/// A unary call's result as JSON text: SendMessage and 1.0 GetTask (the hot paths) are
/// serialised straight from their types, the rest from the `Value` they are built as.
async fn unary(
    state: &AppState,
    scope: &Scope,
    params: Box<RawValue>,
    op: Operation,
    wire: Wire,
) -> Result<String, A2AError> {
    let version = wire.version();
    match (op, version) {
        (Operation::SendMessage, _) => {
            let req = decode_send_raw(&params, wire)?;
            let sent = ops::send(state, scope, req, version).await?;
            if let Some(text) = sent
                .task_json()
                .and_then(|json| wire.task_result_text(json))
            {
                return Ok(text);
            }
            return Ok(wire.send_result_text(&sent.into_response()));
        }
        (Operation::GetTask, Version::V1_0) => {
            let req: GetTaskRequest = parse_params_raw(&params)?;
            return Ok(wire.task_text(&ops::get_task(state, scope, &req).await?));
        }
        _ => {}
    }
    let Value::Object(mut obj) = jsonrpc::params_value(&params) else {
        return Err(A2AError::invalid_params("params must be an object"));
    };
    let value = match (op, version) {
        (Operation::GetTask, Version::V0_3) => {
            let mut req: GetTaskRequest = parse_params(Value::Object(obj))?;
            // 0.3: historyLength 0 meant "no limit" (digest §9.2).
            if req.history_length == Some(0) {
                req.history_length = None;
            }
            Ok(wire.task(&ops::get_task(state, scope, &req).await?))
        }
        (Operation::ListTasks, _) => {
            let req: ListTasksRequest = parse_params(Value::Object(obj))?;
            let listing = ops::list_tasks(state, scope, &req).await?;
            serde_json::to_value(listing).map_err(|e| A2AError::internal(e.to_string()))
        }
        (Operation::CancelTask, _) => {
            let req: TaskIdRequest = parse_params(Value::Object(obj))?;
            Ok(wire.task(&ops::cancel_task(state, scope, &req.id, version).await?))
        }
        (Operation::CreatePushConfig, Version::V1_0) => {
            let config: TaskPushNotificationConfig = parse_params(Value::Object(obj))?;
            Ok(wire.push_config(&ops::create_push_config(state, scope, config, version).await?))
        }
        (Operation::CreatePushConfig, Version::V0_3) => {
            let task_id = take_str(&mut obj, "taskId").unwrap_or_default();
            let inner = obj
                .remove("pushNotificationConfig")
                .map(|inner| default_config_id(inner, &task_id));
            if let Some(inner) = inner {
                obj.insert("pushNotificationConfig".into(), inner);
            }
            let inner = obj
                .remove("pushNotificationConfig")
                .ok_or_else(|| A2AError::invalid_field("pushNotificationConfig", "is required"))?;
            let flat = v03::push_inner_from_v03(inner).map_err(A2AError::invalid_params)?;
            let mut config: TaskPushNotificationConfig = parse_params(flat)?;
            config.task_id = task_id;
            Ok(wire.push_config(&ops::create_push_config(state, scope, config, version).await?))
        }
        (Operation::GetPushConfig, Version::V1_0) => {
            let req: PushConfigRequest = parse_params(Value::Object(obj))?;
            let id = req
                .id
                .ok_or_else(|| A2AError::invalid_field("id", "is required"))?;
            Ok(wire
                .push_config(&ops::get_push_config(state, scope, &req.task_id, Some(&id)).await?))
        }
        (Operation::GetPushConfig, Version::V0_3) => {
            let task_id = take_str(&mut obj, "id").unwrap_or_default();
            // "default" names the config registered without an id (0.3 SDK usage).
            let config_id =
                take_str(&mut obj, "pushNotificationConfigId").filter(|id| id != "default");
            Ok(wire.push_config(
                &ops::get_push_config(state, scope, &task_id, config_id.as_deref()).await?,
            ))
        }
        (Operation::ListPushConfigs, Version::V1_0) => {
            let req: ListPushConfigsRequest = parse_params(Value::Object(obj))?;
            let configs = ops::list_push_configs(state, scope, &req.task_id).await?;
            let listing = ListPushConfigsResponse {
                configs,
                next_page_token: String::new(),
            };
            serde_json::to_value(listing).map_err(|e| A2AError::internal(e.to_string()))
        }
        (Operation::ListPushConfigs, Version::V0_3) => {
            let task_id = take_str(&mut obj, "id").unwrap_or_default();
            let configs = ops::list_push_configs(state, scope, &task_id).await?;
            Ok(Value::Array(
                configs.iter().map(|c| wire.push_config(c)).collect(),
            ))
        }
        (Operation::DeletePushConfig, Version::V1_0) => {
            let req: PushConfigRequest = parse_params(Value::Object(obj))?;
            ops::delete_push_config(
                state,
                scope,
                &req.task_id,
                req.id.as_deref().unwrap_or_default(),
            )
            .await?;
            Ok(Value::Null)
        }
        (Operation::DeletePushConfig, Version::V0_3) => {
            let task_id = take_str(&mut obj, "id").unwrap_or_default();
            let config_id = take_str(&mut obj, "pushNotificationConfigId").unwrap_or_default();
            ops::delete_push_config(state, scope, &task_id, &config_id).await?;
            Ok(Value::Null)
        }
        (Operation::GetExtendedCard, _) => ops::extended_card(state, scope, version),
        // Answered above (typed from the params text) or by `stream`.
        (Operation::SendMessage, _)
        | (Operation::GetTask, Version::V1_0)
        | (Operation::SendStreamingMessage | Operation::SubscribeToTask, _) => Err(
            A2AError::internal(format!("{op:?} routed to the wrong handler")),
        ),
    };
    value.map(|value| value.to_string())
}

async fn stream(
    state: &AppState,
    scope: &Scope,
    req: &Request,
    id: Value,
    params: Box<RawValue>,
    op: Operation,
    wire: Wire,
) -> Response {
    let version = wire.version();
    let render_id = id.clone();
    let id_json = id.to_string();
    let render = move |item: Result<&ops::Frame, &A2AError>| match item {
        Ok(frame) => jsonrpc::success_text_for(&id_json, &wire.frame_json(frame)),
        Err(err) => jsonrpc::failure(&render_id, err, version).to_string(),
    };
    let frames = match op {
        Operation::SendStreamingMessage => match decode_send_raw(&params, wire) {
            Ok(send) => ops::send_streaming(state, scope, send, version)
                .await
                .map(|f| (f, false)),
            Err(e) => Err(e),
        },
        _ => match parse_params_raw::<TaskIdRequest>(&params) {
            Ok(sub) => {
                // 0.3 requests may carry the cursor in params.metadata (clients that
                // cannot set headers); the header wins.
                let cursor = req
                    .last_event_id()
                    .or_else(|| metadata_cursor(sub.metadata.as_ref()));
                ops::subscribe(state, scope, &sub.id, cursor)
                    .await
                    .map(|s| (s.frames, s.resumed))
            }
            Err(e) => Err(e),
        },
    };
    let frames = frames
        .and_then(|(frames, resumed)| Ok((crate::limits::claim(state, scope, frames)?, resumed)));
    match frames {
        Ok((frames, resumed)) => {
            wire::resumable_sse(req, frames, resumed, state.shutdown.clone(), render)
        }
        // 0.3 clients read a streaming method's errors as an SSE event (the 0.3 SDKs
        // and TCK); 1.0 wants a plain JSON-RPC error before any stream starts.
        Err(err) if version == Version::V0_3 => {
            wire::sse_error(state.shutdown.clone(), render, err)
        }
        Err(err) => reply(&id, Err(err), version),
    }
}
