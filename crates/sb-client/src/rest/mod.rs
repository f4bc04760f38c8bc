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

mod answer;
mod bodies;
mod route;

use std::sync::Arc;

use async_trait::async_trait;
use reqwest::{Method, Url};
use sb_protocol::requests::{ListTasksRequest, ListTasksResponse, SendMessageRequest};
use sb_protocol::{A2AError, SendMessageResponse, Task, TaskPushNotificationConfig, v03};
use serde_json::{Value, json};

use crate::auth::Placement;
use crate::interface::{Binding, Chosen, Generation};
use crate::transport::{CallError, EventStream, Transport};
use crate::wire::Tap;

use bodies::{push_config_from_v03, read_in};
use route::segment;

/// A client of one agent's HTTP+JSON interface.
#[derive(Clone, Debug)]
pub struct RestTransport {
    http: reqwest::Client,
    chosen: Chosen,
    generation: Generation,
    placement: Placement,
    tap: Tap,
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
            tap: Tap::new(&placement),
            placement,
            base,
        }))
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
        let body = self.push_config_body(config)?;
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use sb_protocol::ErrorKind;

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
