//! The HTTP+JSON binding: 1.0 paths (optionally under a `/{tenant}` prefix) and the 0.3
//! paths under `/v1`, which speak the 0.3 proto-JSON dialect.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use sb_protocol::requests::{GetTaskRequest, ListTasksRequest, parse_params};
use sb_protocol::v03::{self, Dialect03};
use sb_protocol::{A2AError, ErrorKind, TaskPushNotificationConfig, Version};
use sb_tasks::Scope;
use serde_json::{Map, Value, json};

use crate::jsonrpc::{check_json_content_type, decode_send};
use crate::wire::{self, Wire, json_response};
use crate::{AppState, Request};
use crate::{metrics, ops};

/// A REST route, parsed from the path segments after the agent's base.
#[derive(Debug, PartialEq)]
enum Route {
    Send,
    Stream,
    List,
    Get(String),
    Cancel(String),
    Subscribe(String),
    PushConfigs(String),
    PushConfig(String, String),
    ExtendedCard,
}

impl Route {
    /// The A2A operation, for metrics.
    fn operation(&self) -> &'static str {
        match self {
            Route::Send => "SendMessage",
            Route::Stream => "SendStreamingMessage",
            Route::List => "ListTasks",
            Route::Get(_) => "GetTask",
            Route::Cancel(_) => "CancelTask",
            Route::Subscribe(_) => "SubscribeToTask",
            Route::PushConfigs(_) => "PushConfigs",
            Route::PushConfig(..) => "PushConfig",
            Route::ExtendedCard => "GetExtendedAgentCard",
        }
    }
}

fn parse_route(segments: &[&str]) -> Option<Route> {
    let route = match segments {
        ["message:send"] => Route::Send,
        ["message:stream"] => Route::Stream,
        ["tasks"] => Route::List,
        ["tasks", last] => match last.rsplit_once(':') {
            Some((id, "cancel")) => Route::Cancel(id.to_owned()),
            Some((id, "subscribe")) => Route::Subscribe(id.to_owned()),
            Some(_) => return None,
            None => Route::Get((*last).to_owned()),
        },
        ["tasks", id, "pushNotificationConfigs"] => Route::PushConfigs((*id).to_owned()),
        ["tasks", id, "pushNotificationConfigs", cid] => {
            Route::PushConfig((*id).to_owned(), (*cid).to_owned())
        }
        ["extendedAgentCard"] | ["card"] => Route::ExtendedCard,
        _ => return None,
    };
    Some(route)
}

fn error_response(err: &A2AError, version: Version) -> Response {
    let status =
        StatusCode::from_u16(err.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &err.rest_body(version))
}

/// Handles a REST request; `None` when the path is no A2A route (the caller 404s).
pub async fn handle(
    state: &AppState,
    scope: &Scope,
    req: Request,
    segments: &[&str],
) -> Option<Response> {
    let (wire, rest) = match segments {
        ["v1", rest @ ..] => (Wire::V03(Dialect03::ProtoJson), rest),
        rest => (Wire::V1, rest),
    };
    // A 1.0 tenant prefix (`/{tenant}/message:send`, …) is accepted; no interface
    // declares a tenant, so it does not scope anything yet.
    let route = match parse_route(rest) {
        Some(route) => route,
        None if wire == Wire::V1 && rest.len() > 1 => parse_route(&rest[1..])?,
        None => return None,
    };
    let version = wire.version();
    if let Err(err) = Version::negotiate(req.header("a2a-version")) {
        return Some(error_response(&err, version));
    }
    if matches!(req.method, Method::POST)
        && !req.body.is_empty()
        && let Err(err) = check_json_content_type(&req.headers)
    {
        // A body in a media type we do not read is HTTP's 415, whatever A2A maps
        // ContentTypeNotSupported (a part's media type) to.
        let mut body = err.rest_body(version);
        body["error"]["code"] = json!(StatusCode::UNSUPPORTED_MEDIA_TYPE.as_u16());
        return Some(json_response(StatusCode::UNSUPPORTED_MEDIA_TYPE, &body));
    }
    let name = route.operation();
    let response = match route {
        Route::Stream | Route::Subscribe(_) => stream(state, scope, &req, route, wire).await,
        route => {
            let result = unary(state, scope, &req, route, wire).await;
            let outcome = metrics::outcome(&result);
            let response = match result {
                Ok(Some(body)) => json_response(StatusCode::OK, &body),
                Ok(None) => json_response(StatusCode::OK, &json!({})),
                Err(err) => error_response(&err, version),
            };
            metrics::tag(response, name, outcome)
        }
    };
    Some(metrics::name_operation(response, name))
}

fn method_not_allowed(req: &Request) -> A2AError {
    A2AError::new(
        ErrorKind::MethodNotFound,
        format!("{} is not allowed on {}", req.method, req.path),
    )
}

fn body_json(req: &Request) -> Result<Value, A2AError> {
    if req.body.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_slice(&req.body).map_err(|e| {
        A2AError::new(
            ErrorKind::ParseError,
            format!("request body is not valid JSON: {e}"),
        )
    })
}

/// Query parameters as a JSON object of strings (the request types accept strings for
/// numbers and booleans, as ProtoJSON query mapping requires).
fn query_json(req: &Request) -> Result<Value, A2AError> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(req.query.as_deref().unwrap_or_default())
            .map_err(|e| A2AError::invalid_params(format!("invalid query string: {e}")))?;
    let map: Map<String, Value> = pairs
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    Ok(Value::Object(map))
}

async fn unary(
    state: &AppState,
    scope: &Scope,
    req: &Request,
    route: Route,
    wire: Wire,
) -> Result<Option<Value>, A2AError> {
    let version = wire.version();
    let method = req.method.clone();
    match (route, method) {
        (Route::Send, Method::POST) => {
            let send = decode_send(body_json(req)?, wire)?;
            let sent = ops::send(state, scope, send, version).await?;
            Ok(Some(wire.send_result(&sent.into_response())))
        }
        (Route::List, Method::GET) if wire == Wire::V1 => {
            let list: ListTasksRequest = parse_params(query_json(req)?)?;
            let listing = ops::list_tasks(state, scope, &list).await?;
            serde_json::to_value(listing)
                .map(Some)
                .map_err(|e| A2AError::internal(e.to_string()))
        }
        (Route::Get(id), Method::GET) => {
            let mut get: GetTaskRequest = parse_params(query_json(req)?)?;
            get.id = id;
            if wire != Wire::V1 && get.history_length == Some(0) {
                get.history_length = None;
            }
            Ok(Some(wire.task(&ops::get_task(state, scope, &get).await?)))
        }
        (Route::Cancel(id), Method::POST) => Ok(Some(
            wire.task(&ops::cancel_task(state, scope, &id, version).await?),
        )),
        (Route::PushConfigs(task_id), Method::POST) => {
            let config = decode_push_config(body_json(req)?, wire, &task_id)?;
            Ok(Some(wire.push_config(
                &ops::create_push_config(state, scope, config, version).await?,
            )))
        }
        (Route::PushConfigs(task_id), Method::GET) => {
            let configs = ops::list_push_configs(state, scope, &task_id).await?;
            let configs: Vec<Value> = configs.iter().map(|c| wire.push_config(c)).collect();
            Ok(Some(json!({"configs": configs, "nextPageToken": ""})))
        }
        (Route::PushConfig(task_id, config_id), Method::GET) => {
            Ok(Some(wire.push_config(
                &ops::get_push_config(state, scope, &task_id, Some(&config_id)).await?,
            )))
        }
        (Route::PushConfig(task_id, config_id), Method::DELETE) => {
            ops::delete_push_config(state, scope, &task_id, &config_id).await?;
            Ok(None)
        }
        (Route::ExtendedCard, Method::GET) => ops::extended_card(state, scope, version).map(Some),
        _ => Err(method_not_allowed(req)),
    }
}

/// A push config body: 1.0 flat; 0.3 either `{config:{…}}`, the proto request with
/// `parent`, or the bare `{name, pushNotificationConfig}` (digest §11.9). The task id
/// always comes from the path.
fn decode_push_config(
    body: Value,
    wire: Wire,
    task_id: &str,
) -> Result<TaskPushNotificationConfig, A2AError> {
    let flat = match wire {
        Wire::V1 => body,
        Wire::V03(_) => {
            let Value::Object(mut obj) = body else {
                return Err(A2AError::invalid_params("body must be an object"));
            };
            // ProtoJSON readers accept the proto field names too (the Python client
            // sends `config_id` and `push_notification_config`).
            let config_id = obj.remove("configId").or_else(|| obj.remove("config_id"));
            let mut config = match obj.remove("config") {
                Some(Value::Object(config)) => config,
                _ => obj,
            };
            let inner = config
                .remove("pushNotificationConfig")
                .or_else(|| config.remove("push_notification_config"))
                .ok_or_else(|| A2AError::invalid_field("pushNotificationConfig", "is required"))?;
            let inner = crate::jsonrpc::default_config_id(inner, task_id);
            let mut flat = v03::push_inner_from_v03(inner).map_err(A2AError::invalid_params)?;
            if let (Some(id), Some(obj)) =
                (config_id.filter(|v| v.is_string()), flat.as_object_mut())
            {
                obj.entry("id").or_insert(id);
            }
            flat
        }
    };
    let mut config: TaskPushNotificationConfig = parse_params(flat)?;
    config.task_id = task_id.to_owned();
    Ok(config)
}

async fn stream(
    state: &AppState,
    scope: &Scope,
    req: &Request,
    route: Route,
    wire: Wire,
) -> Response {
    let version = wire.version();
    let render = move |item: Result<&ops::Frame, &A2AError>| match item {
        Ok(frame) => wire.frame_json(frame).to_string(),
        Err(err) => err.rest_body(version).to_string(),
    };
    let frames = match (route, &req.method) {
        (Route::Stream, &Method::POST) => match body_json(req).and_then(|b| decode_send(b, wire)) {
            Ok(send) => ops::send_streaming(state, scope, send, version)
                .await
                .map(|f| (f, false)),
            Err(e) => Err(e),
        },
        (Route::Subscribe(id), &Method::GET | &Method::POST) => {
            ops::subscribe(state, scope, &id, req.last_event_id())
                .await
                .map(|s| (s.frames, s.resumed))
        }
        _ => Err(method_not_allowed(req)),
    };
    let frames = frames
        .and_then(|(frames, resumed)| Ok((crate::limits::claim(state, scope, frames)?, resumed)));
    match frames {
        Ok((frames, resumed)) => {
            wire::resumable_sse(req, frames, resumed, state.shutdown.clone(), render)
        }
        Err(err) => error_response(&err, version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(
            parse_route(&["tasks", "abc:cancel"]),
            Some(Route::Cancel("abc".into()))
        );
        assert_eq!(
            parse_route(&["tasks", "abc"]),
            Some(Route::Get("abc".into()))
        );
        assert_eq!(parse_route(&["tasks", "abc:frobnicate"]), None);
        assert_eq!(
            parse_route(&["tasks", "t", "pushNotificationConfigs", "c"]),
            Some(Route::PushConfig("t".into(), "c".into()))
        );
        assert_eq!(parse_route(&["nope"]), None);
    }
}
