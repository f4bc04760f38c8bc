//! The gRPC binding, A2A 1.0 only (`lf.a2a.v1.A2AService`: the package is the version;
//! an A2A 0.3 gRPC interface is refused, its agent is called on JSON-RPC or HTTP+JSON).
//! Requests and replies cross to the `sb-protocol` model through ProtoJSON
//! ([`sb_a2a_grpc::convert`]); a server's status comes back as the
//! [`A2AError`](sb_protocol::A2AError) it names ([`sb_a2a_grpc::refusal`]), so a caller
//! handles TaskNotFound or TaskNotCancelable the same whichever binding it used.
//!
//! Metadata plays the part of HTTP headers: `a2a-version: 1.0` and the credentials go
//! with every call. Every stream activates Switchboard's resume extension
//! (`a2a-extensions`): a Switchboard server then tags each task event with its sequence
//! number in the event's metadata (gRPC has no SSE id), which becomes the
//! [`StreamItem`](crate::transport::StreamItem)'s id, for [`Transport::subscribe`] to
//! send back as `last-event-id`. Other servers ignore the extension; their events have
//! no id.
//!
//! The card gives the address as `host:port`; `http://host:port` is accepted too. TLS
//! (`https://`) is not built in: the workspace's tonic has no TLS feature. The channel
//! connects on the first call, so [`GrpcTransport::new`] needs no network, only a Tokio
//! runtime to run the channel on.

mod answer;
mod request;

use std::sync::Arc;

use async_trait::async_trait;
use sb_a2a_grpc::pb;
use sb_a2a_grpc::pb::a2a_service_client::A2aServiceClient;
use sb_protocol::requests::{ListTasksRequest, ListTasksResponse, SendMessageRequest};
use sb_protocol::{SendMessageResponse, Task, TaskPushNotificationConfig};
use tonic::metadata::MetadataMap;
use tonic::transport::Channel;

use crate::auth::Placement;
use crate::interface::{Binding, Chosen};
use crate::transport::{CallError, EventStream, Transport};
use crate::wire::Tap;

use answer::{refused, to_model};
use request::{endpoint, metadata, to_proto};

/// The largest reply read (tonic's default is 4 MiB, less than a server may send: a
/// Switchboard server takes bodies of 10 MiB by default, and a task holds its artifacts).
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// The most pages of push configs one listing reads.
const MAX_PAGES: usize = 100;

/// One call of the RPC `$rpc` with `$request` (a message, sent with the transport's
/// metadata, or a `tonic::Request` already made): its reply, or the failure.
macro_rules! call {
    ($self:ident, $method:expr, $rpc:ident, $message:expr) => {{
        let reply = call!(@send $self, $method, $rpc; $self.request($message));
        if let Ok(message) = &reply {
            $self.tap.message($method, false, message);
        }
        reply
    }};
    ($self:ident, $method:expr, $rpc:ident; $request:expr) => {
        call!(@send $self, $method, $rpc; $request)
    };
    // The request and a refusal shown to the wire tap (a stream's events are shown as
    // they come, by `events`).
    (@send $self:ident, $method:expr, $rpc:ident; $request:expr) => {{
        let request = $request;
        $self.tap.message($method, true, request.get_ref());
        let reply = $self
            .client
            .clone()
            .$rpc(request)
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| refused($method, &$self.chosen.url, &status));
        if let Err(error) = &reply {
            $self.tap.message($method, false, &error.to_string());
        }
        reply
    }};
}

/// A client of one agent's gRPC interface.
#[derive(Clone, Debug)]
pub struct GrpcTransport {
    client: A2aServiceClient<Channel>,
    chosen: Chosen,
    /// `a2a-version` and the credentials (marked sensitive: Debug does not show them).
    metadata: MetadataMap,
    tap: Tap,
}

impl GrpcTransport {
    /// A client of `chosen`, which must be a gRPC interface of version 1.0, sending the
    /// credentials `placement` places as metadata (names lowercased). gRPC has no query
    /// string, so a credential placed in one (an API key the card puts in the query) is
    /// sent as metadata under the parameter's name. `_http` is for the HTTP bindings.
    #[allow(clippy::new_ret_no_self)] // the shape `connect` takes every binding's in
    pub fn new(
        _http: reqwest::Client,
        chosen: &Chosen,
        placement: Placement,
    ) -> Result<Arc<dyn Transport>, CallError> {
        match (chosen.binding, chosen.version.as_str()) {
            (Binding::Grpc, "1.0") => {}
            (Binding::Grpc, "0.3") => {
                return Err(CallError::Transport(format!(
                    "{}: A2A 0.3 gRPC is not spoken by this client (only lf.a2a.v1, A2A 1.0); \
                     call the agent's JSON-RPC or HTTP+JSON interface instead",
                    chosen.url
                )));
            }
            (binding, version) => {
                return Err(CallError::Transport(format!(
                    "{binding:?} {version} is not a gRPC interface this client speaks"
                )));
            }
        }
        let endpoint = endpoint(&chosen.url)?;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(CallError::Transport(
                "a gRPC transport is made inside a Tokio runtime (its channel runs there)".into(),
            ));
        }
        let client = A2aServiceClient::new(endpoint.connect_lazy())
            .max_decoding_message_size(MAX_MESSAGE_BYTES);
        Ok(Arc::new(GrpcTransport {
            client,
            chosen: chosen.clone(),
            metadata: metadata(&placement)?,
            tap: Tap::new(&placement),
        }))
    }
}

#[async_trait]
impl Transport for GrpcTransport {
    fn interface(&self) -> &Chosen {
        &self.chosen
    }

    async fn send(&self, request: &SendMessageRequest) -> Result<SendMessageResponse, CallError> {
        const METHOD: &str = "SendMessage";
        let mut message: pb::SendMessageRequest = to_proto(METHOD, request)?;
        self.set_tenant(&mut message.tenant);
        let reply = call!(self, METHOD, send_message, message)?;
        to_model(METHOD, &reply)
    }

    async fn send_streaming(&self, request: &SendMessageRequest) -> Result<EventStream, CallError> {
        const METHOD: &str = "SendStreamingMessage";
        let mut message: pb::SendMessageRequest = to_proto(METHOD, request)?;
        self.set_tenant(&mut message.tenant);
        let request = self.stream_request(message, None)?;
        Ok(self.events(
            METHOD,
            call!(self, METHOD, send_streaming_message; request)?,
        ))
    }

    async fn subscribe(
        &self,
        task_id: &str,
        last_event_id: Option<&str>,
    ) -> Result<EventStream, CallError> {
        const METHOD: &str = "SubscribeToTask";
        let message = pb::SubscribeToTaskRequest {
            tenant: self.tenant(),
            id: task_id.to_owned(),
        };
        let request = self.stream_request(message, last_event_id)?;
        Ok(self.events(METHOD, call!(self, METHOD, subscribe_to_task; request)?))
    }

    async fn get_task(
        &self,
        task_id: &str,
        history_length: Option<i32>,
    ) -> Result<Task, CallError> {
        const METHOD: &str = "GetTask";
        let message = pb::GetTaskRequest {
            tenant: self.tenant(),
            id: task_id.to_owned(),
            history_length,
        };
        let reply = call!(self, METHOD, get_task, message)?;
        to_model(METHOD, &reply)
    }

    async fn list_tasks(&self, request: &ListTasksRequest) -> Result<ListTasksResponse, CallError> {
        const METHOD: &str = "ListTasks";
        let mut message: pb::ListTasksRequest = to_proto(METHOD, request)?;
        self.set_tenant(&mut message.tenant);
        let reply = call!(self, METHOD, list_tasks, message)?;
        // By hand: ProtoJSON leaves out the empty token and zero sizes the model requires.
        Ok(ListTasksResponse {
            tasks: reply
                .tasks
                .iter()
                .map(|task| to_model(METHOD, task))
                .collect::<Result<_, _>>()?,
            next_page_token: reply.next_page_token,
            page_size: reply.page_size,
            total_size: reply.total_size,
        })
    }

    async fn cancel_task(&self, task_id: &str) -> Result<Task, CallError> {
        const METHOD: &str = "CancelTask";
        let message = pb::CancelTaskRequest {
            tenant: self.tenant(),
            id: task_id.to_owned(),
            metadata: None,
        };
        let reply = call!(self, METHOD, cancel_task, message)?;
        to_model(METHOD, &reply)
    }

    async fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, CallError> {
        const METHOD: &str = "CreateTaskPushNotificationConfig";
        let mut message: pb::TaskPushNotificationConfig = to_proto(METHOD, config)?;
        self.set_tenant(&mut message.tenant);
        let reply = call!(self, METHOD, create_task_push_notification_config, message)?;
        to_model(METHOD, &reply)
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<TaskPushNotificationConfig, CallError> {
        const METHOD: &str = "GetTaskPushNotificationConfig";
        let message = pb::GetTaskPushNotificationConfigRequest {
            tenant: self.tenant(),
            task_id: task_id.to_owned(),
            id: config_id.to_owned(),
        };
        let reply = call!(self, METHOD, get_task_push_notification_config, message)?;
        to_model(METHOD, &reply)
    }

    async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, CallError> {
        const METHOD: &str = "ListTaskPushNotificationConfigs";
        let mut configs = Vec::new();
        let mut page_token = String::new();
        for _ in 0..MAX_PAGES {
            let message = pb::ListTaskPushNotificationConfigsRequest {
                tenant: self.tenant(),
                task_id: task_id.to_owned(),
                page_size: 0,
                page_token: page_token.clone(),
            };
            let reply = call!(self, METHOD, list_task_push_notification_configs, message)?;
            for config in &reply.configs {
                configs.push(to_model(METHOD, config)?);
            }
            if reply.next_page_token.is_empty() || reply.next_page_token == page_token {
                return Ok(configs);
            }
            page_token = reply.next_page_token;
        }
        Err(CallError::Transport(format!(
            "{METHOD}: more than {MAX_PAGES} pages of push configs"
        )))
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<(), CallError> {
        const METHOD: &str = "DeleteTaskPushNotificationConfig";
        let message = pb::DeleteTaskPushNotificationConfigRequest {
            tenant: self.tenant(),
            task_id: task_id.to_owned(),
            id: config_id.to_owned(),
        };
        call!(self, METHOD, delete_task_push_notification_config, message).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(url: &str, version: &str) -> Chosen {
        Chosen {
            binding: Binding::Grpc,
            version: version.into(),
            url: url.into(),
            tenant: None,
        }
    }

    #[tokio::test]
    async fn addresses_and_versions_are_checked_up_front() {
        let new = |url: &str, version: &str| {
            GrpcTransport::new(
                reqwest::Client::new(),
                &chosen(url, version),
                Placement::default(),
            )
        };
        assert!(new("127.0.0.1:1", "1.0").is_ok());
        assert!(new("http://127.0.0.1:1/", "1.0").is_ok());
        let refused = |url: &str, version: &str| match new(url, version) {
            Err(CallError::Transport(why)) => why,
            other => panic!("{other:?}"),
        };
        assert!(refused("127.0.0.1:1", "0.3").contains("A2A 0.3 gRPC is not spoken"));
        assert!(refused("https://h:443", "1.0").contains("TLS"));
        assert!(refused("ftp://h:1", "1.0").contains("host:port"));
    }
}
