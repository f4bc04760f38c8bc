//! One agent interface, whatever its binding and protocol version: the calls of A2A as
//! a trait ([`Transport`]), so what drives a task ([`crate::follow`], the bridge, the
//! CLI) is written once. [`connect`] makes the transport for a chosen interface.

use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use sb_protocol::requests::{ListTasksRequest, ListTasksResponse, SendMessageRequest};
use sb_protocol::{
    A2AError, SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig,
};

use crate::auth::Placement;
use crate::interface::{Binding, Chosen};

/// Why a call failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CallError {
    /// The server answered with an A2A error.
    #[error("{0}")]
    A2A(A2AError),
    /// Nothing usable came back: the connection failed, or the answer was not A2A.
    #[error("{0}")]
    Transport(String),
}

impl CallError {
    /// A call that did not get through to `url`.
    pub fn unreachable(
        call: &str,
        url: impl std::fmt::Display,
        error: &reqwest::Error,
    ) -> CallError {
        CallError::Transport(format!("{call} to {url}: {error}"))
    }

    /// An answer that is not what the call returns.
    pub fn unreadable(call: &str, reason: impl std::fmt::Display) -> CallError {
        CallError::Transport(format!("{call}: an unreadable result: {reason}"))
    }

    /// Whether the server refused the call itself (an A2A error), as opposed to the call
    /// not getting through.
    pub fn is_refusal(&self) -> bool {
        matches!(self, CallError::A2A(_))
    }
}

/// One event of a stream, with its SSE id when the server gave one (a Switchboard
/// server's ids resume the stream after a break, through `Last-Event-ID`).
#[derive(Clone, Debug, PartialEq)]
pub struct StreamItem {
    pub id: Option<String>,
    pub event: StreamResponse,
}

/// A stream's events as they come; it ends when the server closes it.
pub type EventStream = BoxStream<'static, Result<StreamItem, CallError>>;

/// The calls of A2A on one interface.
#[async_trait]
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// The interface this transport calls.
    fn interface(&self) -> &Chosen;
    async fn send(&self, request: &SendMessageRequest) -> Result<SendMessageResponse, CallError>;
    async fn send_streaming(&self, request: &SendMessageRequest) -> Result<EventStream, CallError>;
    /// Subscribes to a task's events; `last_event_id` resumes after that event where
    /// the server offers the resume extension (others send the task, then live events).
    async fn subscribe(
        &self,
        task_id: &str,
        last_event_id: Option<&str>,
    ) -> Result<EventStream, CallError>;
    async fn get_task(&self, task_id: &str, history_length: Option<i32>)
    -> Result<Task, CallError>;
    async fn list_tasks(&self, request: &ListTasksRequest) -> Result<ListTasksResponse, CallError>;
    async fn cancel_task(&self, task_id: &str) -> Result<Task, CallError>;
    async fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, CallError>;
    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<TaskPushNotificationConfig, CallError>;
    async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, CallError>;
    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), CallError>;
}

/// The transport for `chosen`, sending the credentials `placement` places with every
/// call.
pub fn connect(
    http: reqwest::Client,
    chosen: &Chosen,
    placement: Placement,
) -> Result<Arc<dyn Transport>, CallError> {
    match chosen.binding {
        Binding::JsonRpc => Ok(Arc::new(crate::jsonrpc::JsonRpcTransport::new(
            http, chosen, placement,
        )?)),
        Binding::HttpJson => crate::rest::RestTransport::new(http, chosen, placement),
        Binding::Grpc => crate::grpc::GrpcTransport::new(http, chosen, placement),
    }
}
