//! The JSON-RPC binding, A2A 1.0 (PascalCase methods, ProtoJSON) and 0.3 (slash
//! methods, `kind` JSON, read into the 1.0 model by `sb_protocol::v03`). A server's
//! error comes back as the [`A2AError`] it names, so a caller handles TaskNotFound or
//! TaskNotCancelable the same whichever binding and version it used.

use async_trait::async_trait;
use sb_protocol::requests::{ListTasksRequest, ListTasksResponse, SendMessageRequest};
use sb_protocol::v03::{self, Dialect03};
use sb_protocol::{
    A2AError, ErrorKind, SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig,
};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::auth::Placement;
use crate::interface::{Binding, Chosen, Generation};
use crate::sse;
use crate::transport::{CallError, EventStream, Transport};
use crate::wire::Tap;

/// A client of one agent's JSON-RPC interface.
#[derive(Clone, Debug)]
pub struct JsonRpcTransport {
    http: reqwest::Client,
    chosen: Chosen,
    generation: Generation,
    placement: Placement,
    tap: Tap,
}

impl JsonRpcTransport {
    /// A client of `chosen`, which must be a JSON-RPC interface of version 1.0 or 0.3.
    pub fn new(
        http: reqwest::Client,
        chosen: &Chosen,
        placement: Placement,
    ) -> Result<JsonRpcTransport, CallError> {
        let generation = match (chosen.binding, Generation::of(&chosen.version)) {
            (Binding::JsonRpc, Some(generation)) => generation,
            (binding, _) => {
                let version = &chosen.version;
                return Err(CallError::Transport(format!(
                    "{binding:?} {version} is not a JSON-RPC interface this client speaks"
                )));
            }
        };
        Ok(JsonRpcTransport {
            http,
            chosen: chosen.clone(),
            generation,
            tap: Tap::new(&placement),
            placement,
        })
    }

    fn request(&self, method: &str, mut params: Value) -> reqwest::RequestBuilder {
        if let (Some(tenant), Some(fields)) = (&self.chosen.tenant, params.as_object_mut()) {
            fields.insert("tenant".into(), json!(tenant));
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let version = self.generation.header();
        let body = body.to_string();
        self.tap
            .request(method, "POST", &self.chosen.url, Some(&body));
        let request = self
            .http
            .post(&self.chosen.url)
            .header("A2A-Version", version)
            .header("content-type", "application/json")
            .body(body);
        self.placement.apply(request)
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, CallError> {
        let response = self
            .request(method, params)
            .send()
            .await
            .map_err(|e| CallError::unreachable(method, &self.chosen.url, &e))?;
        let reply = self.reply(method, response).await?;
        result_of(method, reply)
    }

    async fn stream(
        &self,
        method: &str,
        params: Value,
        last_event_id: Option<&str>,
    ) -> Result<EventStream, CallError> {
        let mut request = self
            .request(method, params)
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request
                .header("last-event-id", id)
                .header("a2a-extensions", sb_protocol::card::RESUME_EXTENSION);
        }
        let response = request
            .send()
            .await
            .map_err(|e| CallError::unreachable(method, &self.chosen.url, &e))?;
        if !sse::is_event_stream(&response) {
            let reply = self.reply(method, response).await?;
            return Err(match result_of(method, reply) {
                Err(refused) => refused,
                Ok(_) => CallError::Transport(format!("{method}: a result instead of a stream")),
            });
        }
        let generation = self.generation;
        let method = method.to_owned();
        Ok(sse::events(
            response,
            method.clone(),
            self.tap.clone(),
            move |data| {
                let reply: Value = serde_json::from_str(data).map_err(|e| {
                    CallError::Transport(format!("{method}: an unreadable event: {e}"))
                })?;
                let result = result_of(&method, reply)?;
                let result = match generation {
                    Generation::V1 => result,
                    Generation::V03 => v03::stream_event_from_v03(result, Dialect03::KindJson)
                        .map_err(|e| CallError::unreadable(&method, e))?,
                };
                read::<StreamResponse>(&method, result)
            },
        ))
    }

    /// The JSON body of an answer that is not a stream.
    async fn reply(&self, method: &str, response: reqwest::Response) -> Result<Value, CallError> {
        let status = response.status();
        let body = response.bytes().await.map_err(|e| {
            CallError::Transport(format!("{method}: HTTP {status}, the body broke: {e}"))
        })?;
        self.tap.response(method, status, &body);
        serde_json::from_slice(&body).map_err(|e| {
            CallError::Transport(format!(
                "{method}: HTTP {status} without a JSON-RPC body: {e}"
            ))
        })
    }

    fn method(&self, v1: &'static str, v03: &'static str) -> &'static str {
        match self.generation {
            Generation::V1 => v1,
            Generation::V03 => v03,
        }
    }

    fn send_params(&self, request: &SendMessageRequest) -> Result<Value, CallError> {
        match self.generation {
            Generation::V1 => {
                // Unset fields are left out by the type itself, as ProtoJSON does.
                serde_json::to_value(request)
                    .map_err(|e| CallError::Transport(format!("SendMessage: {e}")))
            }
            Generation::V03 => Ok(v03::send_params_to_v03(request, Dialect03::KindJson)),
        }
    }

    fn task_of(&self, method: &str, result: Value) -> Result<Task, CallError> {
        let result = match self.generation {
            Generation::V1 => result,
            Generation::V03 => v03::task_from_v03(result, Dialect03::KindJson)
                .map_err(|e| CallError::unreadable(method, e))?,
        };
        read(method, result)
    }

    fn push_config_of(
        &self,
        method: &str,
        result: Value,
    ) -> Result<TaskPushNotificationConfig, CallError> {
        let result = match self.generation {
            Generation::V1 => result,
            Generation::V03 => {
                v03::push_config_from_v03(result).map_err(|e| CallError::unreadable(method, e))?
            }
        };
        read(method, result)
    }
}

#[async_trait]
impl Transport for JsonRpcTransport {
    fn interface(&self) -> &Chosen {
        &self.chosen
    }

    async fn send(&self, request: &SendMessageRequest) -> Result<SendMessageResponse, CallError> {
        let method = self.method("SendMessage", "message/send");
        let result = self.call(method, self.send_params(request)?).await?;
        let result = match self.generation {
            Generation::V1 => result,
            Generation::V03 => v03::message_or_task_from_v03(result, Dialect03::KindJson)
                .map_err(|e| CallError::unreadable(method, e))?,
        };
        read(method, result)
    }

    async fn send_streaming(&self, request: &SendMessageRequest) -> Result<EventStream, CallError> {
        let method = self.method("SendStreamingMessage", "message/stream");
        self.stream(method, self.send_params(request)?, None).await
    }

    async fn subscribe(
        &self,
        task_id: &str,
        last_event_id: Option<&str>,
    ) -> Result<EventStream, CallError> {
        let method = self.method("SubscribeToTask", "tasks/resubscribe");
        self.stream(method, json!({"id": task_id}), last_event_id)
            .await
    }

    async fn get_task(
        &self,
        task_id: &str,
        history_length: Option<i32>,
    ) -> Result<Task, CallError> {
        let method = self.method("GetTask", "tasks/get");
        let mut params = json!({"id": task_id});
        if let Some(length) = history_length {
            params["historyLength"] = json!(length);
        }
        let result = self.call(method, params).await?;
        self.task_of(method, result)
    }

    async fn list_tasks(&self, request: &ListTasksRequest) -> Result<ListTasksResponse, CallError> {
        if self.generation == Generation::V03 {
            return Err(CallError::A2A(A2AError::unsupported(
                "A2A 0.3 has no way to list tasks (ListTasks is 1.0)",
            )));
        }
        let mut params = serde_json::to_value(request)
            .map_err(|e| CallError::Transport(format!("ListTasks: {e}")))?;
        if let Some(fields) = params.as_object_mut() {
            fields.retain(|_, value| !value.is_null() && value != &json!(false));
        }
        let result = self.call("ListTasks", params).await?;
        read("ListTasks", result)
    }

    async fn cancel_task(&self, task_id: &str) -> Result<Task, CallError> {
        let method = self.method("CancelTask", "tasks/cancel");
        let result = self.call(method, json!({"id": task_id})).await?;
        self.task_of(method, result)
    }

    async fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, CallError> {
        let method = self.method(
            "CreateTaskPushNotificationConfig",
            "tasks/pushNotificationConfig/set",
        );
        let params = match self.generation {
            Generation::V1 => serde_json::to_value(config)
                .map_err(|e| CallError::Transport(format!("{method}: {e}")))?,
            Generation::V03 => v03::push_config_to_v03(config, Dialect03::KindJson),
        };
        let result = self.call(method, params).await?;
        self.push_config_of(method, result)
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<TaskPushNotificationConfig, CallError> {
        let (method, params) = match self.generation {
            Generation::V1 => (
                "GetTaskPushNotificationConfig",
                json!({"taskId": task_id, "id": config_id}),
            ),
            Generation::V03 => (
                "tasks/pushNotificationConfig/get",
                json!({"id": task_id, "pushNotificationConfigId": config_id}),
            ),
        };
        let result = self.call(method, params).await?;
        self.push_config_of(method, result)
    }

    async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, CallError> {
        let (method, params) = match self.generation {
            Generation::V1 => (
                "ListTaskPushNotificationConfigs",
                json!({"taskId": task_id}),
            ),
            Generation::V03 => ("tasks/pushNotificationConfig/list", json!({"id": task_id})),
        };
        let result = self.call(method, params).await?;
        let configs = match (self.generation, result) {
            (Generation::V1, result) => result.get("configs").cloned().unwrap_or(json!([])),
            (Generation::V03, result) => result,
        };
        let Value::Array(configs) = configs else {
            return Err(CallError::unreadable(method, "the configs are not a list"));
        };
        configs
            .into_iter()
            .map(|config| self.push_config_of(method, config))
            .collect()
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), CallError> {
        let (method, params) = match self.generation {
            Generation::V1 => (
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": task_id, "id": config_id}),
            ),
            Generation::V03 => (
                "tasks/pushNotificationConfig/delete",
                json!({"id": task_id, "pushNotificationConfigId": config_id}),
            ),
        };
        self.call(method, params).await.map(drop)
    }
}

fn read<T: DeserializeOwned>(method: &str, result: Value) -> Result<T, CallError> {
    serde_json::from_value(result).map_err(|e| CallError::unreadable(method, e.to_string()))
}

/// The result of a JSON-RPC answer, or the A2A error it carries.
fn result_of(method: &str, mut reply: Value) -> Result<Value, CallError> {
    if let Some(error) = reply.get("error") {
        return Err(CallError::A2A(error_of(error)));
    }
    reply.get_mut("result").map(Value::take).ok_or_else(|| {
        CallError::Transport(format!(
            "{method}: a JSON-RPC answer without result or error"
        ))
    })
}

/// The A2A error a JSON-RPC error object names (an unknown code reads as Internal).
fn error_of(error: &Value) -> A2AError {
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the server sent an error without a message");
    let kind = ErrorKind::from_jsonrpc_code(code).unwrap_or(ErrorKind::Internal);
    A2AError::new(kind, message)
}
