//! A2A 1.0 over JSON-RPC: the unary calls (send, get, cancel) to the interface a card
//! offers. A server's error comes back as the [`A2AError`] it names, so a caller handles
//! TaskNotFound or TaskNotCancelable the same whichever binding it used.

use sb_protocol::requests::SendMessageRequest;
use sb_protocol::{A2AError, ErrorKind, SendMessageResponse, Task};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::interface::{Binding, Chosen};

/// Why a call failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CallError {
    /// The server answered with an A2A error.
    #[error("{0}")]
    A2A(A2AError),
    /// Nothing usable came back: the connection failed, or the answer was not JSON-RPC.
    #[error("{0}")]
    Transport(String),
}

/// A client of one agent's JSON-RPC 1.0 interface.
#[derive(Clone, Debug)]
pub struct JsonRpcClient {
    http: reqwest::Client,
    url: String,
    tenant: Option<String>,
}

impl JsonRpcClient {
    /// A client of `chosen`, which must be a JSON-RPC 1.0 interface.
    pub fn new(http: reqwest::Client, chosen: &Chosen) -> Result<JsonRpcClient, CallError> {
        if chosen.binding != Binding::JsonRpc || chosen.version != "1.0" {
            return Err(CallError::Transport(format!(
                "{:?} {} is not the JSON-RPC 1.0 interface this client speaks",
                chosen.binding, chosen.version
            )));
        }
        Ok(JsonRpcClient {
            http,
            url: chosen.url.clone(),
            tenant: chosen.tenant.clone(),
        })
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        mut params: Value,
    ) -> Result<T, CallError> {
        if let (Some(tenant), Some(fields)) = (&self.tenant, params.as_object_mut()) {
            fields.insert("tenant".into(), json!(tenant));
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response = self
            .http
            .post(&self.url)
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .map_err(|e| CallError::Transport(format!("{method} to {}: {e}", self.url)))?;
        let status = response.status();
        let reply: Value = response.json().await.map_err(|e| {
            CallError::Transport(format!(
                "{method}: HTTP {status} without a JSON-RPC body: {e}"
            ))
        })?;
        if let Some(error) = reply.get("error") {
            return Err(CallError::A2A(error_of(error)));
        }
        let result = reply.get("result").cloned().ok_or_else(|| {
            CallError::Transport(format!(
                "{method}: a JSON-RPC answer without result or error"
            ))
        })?;
        serde_json::from_value(result)
            .map_err(|e| CallError::Transport(format!("{method}: an unreadable result: {e}")))
    }

    pub async fn send_message(
        &self,
        request: &SendMessageRequest,
    ) -> Result<SendMessageResponse, CallError> {
        let mut params = serde_json::to_value(request)
            .map_err(|e| CallError::Transport(format!("SendMessage: {e}")))?;
        // ProtoJSON leaves unset fields out.
        if let Some(fields) = params.as_object_mut() {
            fields.retain(|_, value| !value.is_null());
        }
        self.call("SendMessage", params).await
    }

    pub async fn get_task(&self, id: &str, history_length: Option<u32>) -> Result<Task, CallError> {
        let mut params = json!({"id": id});
        if let Some(length) = history_length {
            params["historyLength"] = json!(length);
        }
        self.call("GetTask", params).await
    }

    pub async fn cancel_task(&self, id: &str) -> Result<Task, CallError> {
        self.call("CancelTask", json!({"id": id})).await
    }
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
