//! The HTTP+JSON binding, A2A 1.0 (ProtoJSON routes at the interface URL, under
//! `/{tenant}` when the interface names one) and 0.3 (ProtoJSON of the 0.3 proto under
//! `/v1`, read into the 1.0 model by `sb_protocol::v03`). A server's error comes back as
//! the [`A2AError`] it names: by the `google.rpc.ErrorInfo` reason of a `google.rpc.Status`
//! body, else by the JSON-RPC code a 0.3 body carries, else by the HTTP status.
//!
//! Routes (digest §1.4): `POST message:send`, `POST message:stream`, `GET tasks/{id}`,
//! `GET tasks` (1.0), `POST tasks/{id}:cancel`, `GET tasks/{id}:subscribe` (the proto's
//! verb; the only one 0.3 Python servers serve), and `tasks/{id}/pushNotificationConfigs`
//! (`POST`, `GET`) and `…/{configId}` (`GET`, `DELETE`).

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Method, StatusCode, Url};
use sb_protocol::requests::{ListTasksRequest, ListTasksResponse, SendMessageRequest, require_id};
use sb_protocol::v03::{self, Dialect03};
use sb_protocol::{
    A2AError, ErrorKind, SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::auth::Placement;
use crate::interface::{Binding, Chosen, Generation};
use crate::sse;
use crate::transport::{CallError, EventStream, Transport};

/// A client of one agent's HTTP+JSON interface.
#[derive(Clone, Debug)]
pub struct RestTransport {
    http: reqwest::Client,
    chosen: Chosen,
    generation: Generation,
    placement: Placement,
    /// The interface URL with the segment the routes go under: the tenant (1.0), `v1` (0.3).
    base: Url,
}

impl RestTransport {
    /// A client of `chosen`, which must be an HTTP+JSON interface of version 1.0 or 0.3.
    #[allow(clippy::new_ret_no_self)] // the shape `connect` takes every binding's in
    pub fn new(
        http: reqwest::Client,
        chosen: &Chosen,
        placement: Placement,
    ) -> Result<Arc<dyn Transport>, CallError> {
        let (generation, prefix) = match (chosen.binding, Generation::of(&chosen.version)) {
            (Binding::HttpJson, Some(Generation::V1)) => (Generation::V1, chosen.tenant.clone()),
            (Binding::HttpJson, Some(Generation::V03)) => (Generation::V03, Some("v1".to_owned())),
            (binding, _) => {
                let version = &chosen.version;
                return Err(CallError::Transport(format!(
                    "{binding:?} {version} is not an HTTP+JSON interface this client speaks"
                )));
            }
        };
        let bad_url = |reason: String| {
            CallError::Transport(format!("{} is no interface URL: {reason}", chosen.url))
        };
        let mut base = Url::parse(&chosen.url).map_err(|e| bad_url(e.to_string()))?;
        base.path_segments_mut()
            .map_err(|()| bad_url("it cannot take a path".into()))?
            .pop_if_empty()
            .extend(prefix);
        Ok(Arc::new(RestTransport {
            http,
            chosen: chosen.clone(),
            generation,
            placement,
            base,
        }))
    }

    /// Calls the route `path` (each item one path segment, escaped as needed).
    async fn call(
        &self,
        name: &str,
        method: Method,
        path: &[&str],
        query: &(impl Serialize + ?Sized),
        body: Option<Value>,
    ) -> Result<Value, CallError> {
        let (request, url) = self.request(method, path, body, false)?;
        let sent = request.query(query).send().await;
        let response = sent.map_err(|e| CallError::unreachable(name, &url, &e))?;
        answer(name, response, path.len() > 1).await
    }

    fn request(
        &self,
        method: Method,
        path: &[&str],
        body: Option<Value>,
        stream: bool,
    ) -> Result<(reqwest::RequestBuilder, Url), CallError> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| CallError::Transport(format!("{} cannot take a path", self.base)))?
            .extend(path);
        let version = self.generation.header();
        let media = match self.generation {
            Generation::V1 => "application/a2a+json",
            Generation::V03 => "application/json",
        };
        let accept = match stream {
            true => "text/event-stream".to_owned(),
            false => format!("{media}, application/json"),
        };
        let mut request = self
            .http
            .request(method, url.clone())
            .header("A2A-Version", version)
            .header(ACCEPT, accept);
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, media).body(body.to_string());
        }
        Ok((self.placement.apply(request), url))
    }

    async fn stream(
        &self,
        name: &'static str,
        (method, path): (Method, &[&str]),
        body: Option<Value>,
        last_event_id: Option<&str>,
    ) -> Result<EventStream, CallError> {
        let (mut request, url) = self.request(method, path, body, true)?;
        if let Some(id) = last_event_id {
            // 0.3 named the extensions header `X-A2A-Extensions`.
            let extensions = match self.generation {
                Generation::V1 => "a2a-extensions",
                Generation::V03 => "x-a2a-extensions",
            };
            request = request
                .header("last-event-id", id)
                .header(extensions, sb_protocol::card::RESUME_EXTENSION);
        }
        let sent = request.send().await;
        let response = sent.map_err(|e| CallError::unreachable(name, &url, &e))?;
        if !sse::is_event_stream(&response) {
            let reply = answer(name, response, path.len() > 1).await?;
            return Err(match error_in(&reply) {
                Some(refused) => CallError::A2A(refused),
                None => CallError::Transport(format!("{name}: a result instead of a stream")),
            });
        }
        let generation = self.generation;
        Ok(sse::events(response, move |data| {
            let event: Value = serde_json::from_str(data)
                .map_err(|e| CallError::Transport(format!("{name}: an unreadable event: {e}")))?;
            if let Some(refused) = error_in(&event) {
                return Err(CallError::A2A(refused));
            }
            read_in::<StreamResponse>(generation, name, event, v03::stream_event_from_v03)
        }))
    }

    fn send_body(&self, request: &SendMessageRequest) -> Result<Value, CallError> {
        match self.generation {
            Generation::V1 => {
                let mut body = serde_json::to_value(request)
                    .map_err(|e| CallError::Transport(format!("SendMessage: {e}")))?;
                // ProtoJSON leaves unset fields out.
                if let Some(fields) = body.as_object_mut() {
                    fields.retain(|_, value| !value.is_null());
                }
                Ok(body)
            }
            // `blocking` is always written: a proto3 bool left out reads as non-blocking.
            Generation::V03 => Ok(v03::send_params_to_v03(request, Dialect03::ProtoJson)),
        }
    }
}

/// No query parameters.
const NO_QUERY: &[(&str, &str)] = &[];

#[async_trait]
impl Transport for RestTransport {
    fn interface(&self) -> &Chosen {
        &self.chosen
    }

    async fn send(&self, request: &SendMessageRequest) -> Result<SendMessageResponse, CallError> {
        let (name, body) = ("SendMessage", Some(self.send_body(request)?));
        let path = ["message:send"];
        let result = self.call(name, Method::POST, &path, NO_QUERY, body).await?;
        let mut sent = read_in(self.generation, name, result, v03::message_or_task_from_v03)?;
        let config = request.configuration.as_ref();
        if let (SendMessageResponse::Task(task), Some(0)) =
            (&mut sent, config.and_then(|c| c.history_length))
        {
            task.history.clear(); // a 0.3 server reads 0 as "no limit"
        }
        Ok(sent)
    }

    async fn send_streaming(&self, request: &SendMessageRequest) -> Result<EventStream, CallError> {
        let body = Some(self.send_body(request)?);
        let route = (Method::POST, &["message:stream"][..]);
        self.stream("SendStreamingMessage", route, body, None).await
    }

    async fn subscribe(
        &self,
        task_id: &str,
        last_event_id: Option<&str>,
    ) -> Result<EventStream, CallError> {
        segment(task_id, "id")?;
        let subscribe = format!("{task_id}:subscribe");
        let route = (Method::GET, &["tasks", subscribe.as_str()][..]);
        self.stream("SubscribeToTask", route, None, last_event_id)
            .await
    }

    async fn get_task(
        &self,
        task_id: &str,
        history_length: Option<i32>,
    ) -> Result<Task, CallError> {
        segment(task_id, "id")?;
        let query = history_length.map(|length| [("historyLength", length)]);
        let path = ["tasks", task_id];
        let result = self
            .call("GetTask", Method::GET, &path, &query, None)
            .await?;
        let mut task: Task = read_in(self.generation, "GetTask", result, v03::task_from_v03)?;
        if history_length == Some(0) {
            task.history.clear(); // a 0.3 server reads 0 as "no limit"
        }
        Ok(task)
    }

    async fn list_tasks(&self, request: &ListTasksRequest) -> Result<ListTasksResponse, CallError> {
        if self.generation == Generation::V03 {
            return Err(CallError::A2A(A2AError::unsupported(
                "A2A 0.3 has no way to list tasks (ListTasks is 1.0)",
            )));
        }
        // The query is the request's camelCase fields but the tenant, which is in the path.
        let query = ListTasksRequest {
            tenant: None,
            ..request.clone()
        };
        let result = self
            .call("ListTasks", Method::GET, &["tasks"], &query, None)
            .await?;
        // ProtoJSON may leave out what holds its default (an empty last page token).
        let mut listing = json!({"tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0});
        if let (Some(listing), Value::Object(fields)) = (listing.as_object_mut(), result) {
            listing.extend(fields);
        }
        read_in(Generation::V1, "ListTasks", listing, |v, _| Ok(v))
    }

    async fn cancel_task(&self, task_id: &str) -> Result<Task, CallError> {
        segment(task_id, "id")?;
        let cancel = format!("{task_id}:cancel");
        let (path, body) = (["tasks", cancel.as_str()], Some(json!({})));
        let result = self
            .call("CancelTask", Method::POST, &path, NO_QUERY, body)
            .await?;
        read_in(self.generation, "CancelTask", result, v03::task_from_v03)
    }

    async fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, CallError> {
        let name = "CreateTaskPushNotificationConfig";
        segment(&config.task_id, "taskId")?;
        let body = match self.generation {
            Generation::V1 => serde_json::to_value(config)
                .map_err(|e| CallError::Transport(format!("{name}: {e}")))?,
            Generation::V03 => {
                // The proto request `{parent, configId, config}` (Python SDK, 0.3 spec) with
                // the config's own fields beside it (the JS SDK reads the bare config).
                let v03 = v03::push_config_to_v03(config, Dialect03::ProtoJson);
                let mut body = json!({"parent": format!("tasks/{}", config.task_id)});
                if let Some(id) = &config.id {
                    body["configId"] = json!(id);
                }
                if let (Some(body), Value::Object(fields)) = (body.as_object_mut(), &v03) {
                    body.extend(fields.clone());
                }
                body["config"] = v03;
                body
            }
        };
        let path = ["tasks", config.task_id.as_str(), "pushNotificationConfigs"];
        let result = self
            .call(name, Method::POST, &path, NO_QUERY, Some(body))
            .await?;
        read_in(self.generation, name, result, push_config_from_v03)
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<TaskPushNotificationConfig, CallError> {
        let name = "GetTaskPushNotificationConfig";
        segment(task_id, "taskId")?;
        segment(config_id, "id")?;
        let path = ["tasks", task_id, "pushNotificationConfigs", config_id];
        let result = self.call(name, Method::GET, &path, NO_QUERY, None).await?;
        read_in(self.generation, name, result, push_config_from_v03)
    }

    async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, CallError> {
        let name = "ListTaskPushNotificationConfigs";
        segment(task_id, "taskId")?;
        let path = ["tasks", task_id, "pushNotificationConfigs"];
        // `{configs, nextPageToken}` in both versions (ProtoJSON leaves an empty list out).
        let configs = match self.call(name, Method::GET, &path, NO_QUERY, None).await? {
            Value::Object(mut fields) => fields.remove("configs").unwrap_or(json!([])),
            other => other,
        };
        let Value::Array(configs) = configs else {
            return Err(CallError::unreadable(name, "the configs are not a list"));
        };
        configs
            .into_iter()
            .map(|config| read_in(self.generation, name, config, push_config_from_v03))
            .collect()
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), CallError> {
        let name = "DeleteTaskPushNotificationConfig";
        segment(task_id, "taskId")?;
        segment(config_id, "id")?;
        let path = ["tasks", task_id, "pushNotificationConfigs", config_id];
        // `{}` (Python SDK, ours) or 204 without a body (JS SDK).
        self.call(name, Method::DELETE, &path, NO_QUERY, None)
            .await
            .map(drop)
    }
}

/// Refuses an empty id before it goes into a route, where it would name another one:
/// `GET tasks/` is ListTasks (even under @a2a-js/sdk's 0.3 `/v1`), `GET
/// tasks/{id}/pushNotificationConfigs/` the list of configs.
fn segment(id: &str, field: &str) -> Result<(), CallError> {
    require_id(id, field).map_err(CallError::A2A)
}

/// `result` read as a `T`, from 0.3 into the 1.0 shape by `from_v03` first.
fn read_in<T: DeserializeOwned>(
    generation: Generation,
    name: &str,
    result: Value,
    from_v03: impl FnOnce(Value, Dialect03) -> Result<Value, String>,
) -> Result<T, CallError> {
    let result = match generation {
        Generation::V1 => result,
        Generation::V03 => {
            from_v03(result, Dialect03::ProtoJson).map_err(|e| CallError::unreadable(name, e))?
        }
    };
    serde_json::from_value(result).map_err(|e| CallError::unreadable(name, e.to_string()))
}

fn push_config_from_v03(config: Value, _: Dialect03) -> Result<Value, String> {
    v03::push_config_from_v03(config)
}

/// The JSON of an answer (`Null` for an empty body, e.g. a 204), or the error it carries;
/// `on_task` when the route names a task (`tasks/{id}…`), where a bare 404 means it is not found.
async fn answer(
    name: &str,
    response: reqwest::Response,
    on_task: bool,
) -> Result<Value, CallError> {
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| CallError::Transport(format!("{name}: HTTP {status}, the body broke: {e}")))?;
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
fn error_in(reply: &Value) -> Option<A2AError> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// An empty id is refused before anything is sent: the interface's port is closed,
    /// so a call that went out would fail as a transport error instead.
    #[tokio::test]
    async fn an_empty_id_is_refused_not_sent_to_another_route() {
        for version in ["1.0", "0.3"] {
            let chosen = Chosen {
                binding: Binding::HttpJson,
                version: version.into(),
                url: "http://127.0.0.1:9".into(),
                tenant: None,
            };
            let client =
                RestTransport::new(reqwest::Client::new(), &chosen, Placement::default()).unwrap();
            let config = TaskPushNotificationConfig {
                tenant: None,
                id: None,
                task_id: String::new(),
                url: "http://127.0.0.1:9/hook".into(),
                token: None,
                authentication: None,
            };
            let refusals = [
                client.get_task("", None).await.err(),
                client.cancel_task("").await.err(),
                client.subscribe(" ", None).await.err(),
                client.create_push_config(&config).await.err(),
                client.get_push_config("t1", "").await.err(),
                client.list_push_configs("").await.err(),
                client.delete_push_config("t1", "").await.err(),
            ];
            for refused in refusals {
                assert!(
                    matches!(&refused, Some(CallError::A2A(e)) if e.kind == ErrorKind::InvalidParams),
                    "{version}: {refused:?}"
                );
            }
            let sent = client.get_task("t1", None).await.unwrap_err();
            assert!(
                matches!(sent, CallError::Transport(_)),
                "{version}: {sent:?}"
            );
        }
    }
}
