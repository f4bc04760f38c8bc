//! The gRPC binding (`lf.a2a.v1.A2AService`, A2A 1.0 only: the package is the version).
//!
//! Each RPC decodes its prost request into the model (through ProtoJSON, see
//! [`sb_a2a_grpc::convert`]), calls the same [`ops`] function as the HTTP bindings, and
//! encodes the result back. Metadata plays the part of HTTP headers: credentials,
//! `a2a-version`, `a2a-extensions`, `last-event-id`, `traceparent`.
//!
//! Every agent shares one gRPC address, so the request's `tenant` picks the agent: empty
//! is the default agent (the root card's interface names no tenant), otherwise an agent
//! name (each agent's card names it as the interface's `tenant`, which clients copy into
//! every request, spec §5.3).

use std::future::Future;

use axum::http::HeaderMap;
use futures::StreamExt;
use futures::stream::BoxStream;
use sb_a2a_grpc::pb::a2a_service_server::{A2aService, A2aServiceServer};
use sb_a2a_grpc::{convert, pb, status, wkt};
use sb_protocol::requests::{
    GetTaskRequest, ListPushConfigsResponse, ListTasksRequest, SendMessageRequest, require_id,
};
use sb_protocol::{A2AError, ErrorKind, TaskPushNotificationConfig, Version};
use sb_tasks::Scope;
use tonic::{Request, Response, Status};

use crate::{AppState, auth, limits, metrics, ops};

/// The service, ready to add to a tonic router.
pub fn service(state: AppState) -> A2aServiceServer<GrpcGateway> {
    let limit = state.max_body_bytes;
    A2aServiceServer::new(GrpcGateway { state }).max_decoding_message_size(limit)
}

/// The gRPC face of the gateway: [`AppState`] behind the generated service trait.
#[derive(Clone, Debug)]
pub struct GrpcGateway {
    state: AppState,
}

type Streamed = BoxStream<'static, Result<pb::StreamResponse, Status>>;

/// Requests that carry the 1.0 `tenant` field.
trait Tenanted {
    fn tenant(&self) -> &str;
}

macro_rules! tenanted {
    ($($t:ty),*) => {$(impl Tenanted for $t {
        fn tenant(&self) -> &str {
            &self.tenant
        }
    })*};
}

tenanted!(
    pb::SendMessageRequest,
    pb::GetTaskRequest,
    pb::ListTasksRequest,
    pb::CancelTaskRequest,
    pb::SubscribeToTaskRequest,
    pb::TaskPushNotificationConfig,
    pb::GetTaskPushNotificationConfigRequest,
    pb::ListTaskPushNotificationConfigsRequest,
    pb::DeleteTaskPushNotificationConfigRequest,
    pb::GetExtendedAgentCardRequest
);

/// One admitted call: whose, for which agent, and the caller's metadata as headers.
struct Call {
    state: AppState,
    scope: Scope,
    headers: HeaderMap,
}

impl GrpcGateway {
    /// Picks the agent, checks the version and the credentials, like the HTTP dispatcher.
    fn admit(&self, headers: &HeaderMap, tenant: &str) -> Result<Scope, Status> {
        let state = &self.state;
        let fleet = state.registry.fleet();
        let agent = match tenant.trim() {
            "" => fleet.default_agent().map(str::to_owned),
            name => Some(name.to_owned()),
        };
        let Some(agent) = agent.filter(|a| state.takes_requests_for(&fleet, a)) else {
            let err = A2AError::new(
                ErrorKind::MethodNotFound,
                match tenant.trim() {
                    "" => "no default agent is served here; name one in `tenant`".to_owned(),
                    name => format!("no agent named \"{name}\" is served here"),
                },
            );
            return Err(status::to_status(&err));
        };
        // The package is 1.0; a client that says otherwise gets VersionNotSupported.
        // No header is fine here (unlike HTTP, where it means 0.3).
        let version = headers.get("a2a-version").and_then(|v| v.to_str().ok());
        if version.is_some_and(|v| !v.trim().is_empty()) {
            match Version::negotiate(version) {
                Ok(Version::V1_0) => {}
                Ok(Version::V0_3) => {
                    let err = A2AError::new(
                        ErrorKind::VersionNotSupported,
                        "lf.a2a.v1.A2AService speaks A2A 1.0; 0.3 clients use JSON-RPC or HTTP+JSON",
                    );
                    return Err(status::to_status(&err));
                }
                Err(err) => return Err(status::to_status(&err)),
            }
        }
        let caller = match state.auth.get(&agent).map(|a| a.authenticate(headers)) {
            None => auth::Caller::Anonymous,
            Some(Ok(caller)) => caller,
            Some(Err(refusal)) => return Err(unauthenticated(&refusal)),
        };
        Ok(Scope {
            agent,
            owner: caller.owner().to_owned(),
        })
    }

    /// Runs one RPC: admission, a span continuing the caller's trace, the handler, and
    /// the request count (binding `grpc`, the operation, `ok`/`stream` or the reason).
    async fn run<Req, Resp, Fut>(
        &self,
        operation: &'static str,
        request: Request<Req>,
        handler: impl FnOnce(Call, Req) -> Fut,
    ) -> Result<Response<Resp>, Status>
    where
        Req: Tenanted,
        Fut: Future<Output = Result<Response<Resp>, A2AError>>,
    {
        let (metadata, _, message) = request.into_parts();
        let headers = metadata.into_headers();
        let span = tracing::info_span!("a2a_request", binding = "grpc", method = operation);
        sb_telemetry::extract(&span, &headers);
        let admitted = self.admit(&headers, message.tenant());
        let result = match admitted {
            Ok(scope) => {
                let call = Call {
                    state: self.state.clone(),
                    scope,
                    headers,
                };
                tracing::Instrument::instrument(handler(call, message), span)
                    .await
                    .map_err(|e| status::to_status(&e))
            }
            Err(refused) => Err(refused),
        };
        let outcome = match &result {
            Ok(_) if operation.contains("Subscribe") || operation.contains("Streaming") => {
                "stream".into()
            }
            Ok(_) => "ok".into(),
            Err(s) => status::reason(s).map_or("unrouted".into(), Into::into),
        };
        let tagged = metrics::Tagged { operation, outcome };
        self.state.metrics.request("grpc", Some(&tagged));
        result
    }
}

/// UNAUTHENTICATED with the challenge HTTP would send in `WWW-Authenticate`.
fn unauthenticated(refusal: &auth::Refusal) -> Status {
    let err = A2AError::new(ErrorKind::Unauthenticated, refusal.message.clone());
    let mut status = status::to_status(&err);
    if let Ok(value) = refusal.challenge.parse() {
        status.metadata_mut().insert("www-authenticate", value);
    }
    status
}

fn reply<M>(message: M) -> Result<Response<M>, A2AError> {
    Ok(Response::new(message))
}

/// Streams frames as `StreamResponse`s, holding one of the caller's stream slots, until
/// the frames end or the server shuts down. Under the resume extension (activated, or a
/// `last-event-id` given) each task event carries its seq in metadata, the only place a
/// gRPC client can read it, and the response metadata echoes the extension.
fn stream_out(
    call: &Call,
    frames: ops::FrameStream,
    resumed: bool,
) -> Result<Response<Streamed>, A2AError> {
    let frames = limits::claim(&call.state, &call.scope, frames)?;
    let active = resumed || crate::activates(&call.headers, ops::RESUME_EXTENSION);
    let messages = frames
        .map(move |item| {
            let frame = item.map_err(|e| status::to_status(&e))?;
            let frame = if active {
                ops::tag_with_seq(frame)
            } else {
                frame
            };
            convert::response(&frame.event).map_err(|e| status::to_status(&e))
        })
        .take_until(call.state.shutdown.clone().cancelled_owned())
        .boxed();
    let mut response = Response::new(messages);
    if active {
        response.metadata_mut().insert(
            "a2a-extensions",
            tonic::metadata::MetadataValue::from_static(ops::RESUME_EXTENSION),
        );
    }
    Ok(response)
}

#[tonic::async_trait]
impl A2aService for GrpcGateway {
    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        self.run("SendMessage", request, |call, message| async move {
            let req: SendMessageRequest = convert::request(&message)?;
            let sent = ops::send(&call.state, &call.scope, req, Version::V1_0).await?;
            reply(convert::response(&sent.into_response())?)
        })
        .await
    }

    type SendStreamingMessageStream = Streamed;

    async fn send_streaming_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<Streamed>, Status> {
        self.run(
            "SendStreamingMessage",
            request,
            |call, message| async move {
                let req: SendMessageRequest = convert::request(&message)?;
                let frames =
                    ops::send_streaming(&call.state, &call.scope, req, Version::V1_0).await?;
                stream_out(&call, frames, false)
            },
        )
        .await
    }

    async fn get_task(
        &self,
        request: Request<pb::GetTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        self.run("GetTask", request, |call, message| async move {
            let req: GetTaskRequest = convert::request(&message)?;
            let task = ops::get_task(&call.state, &call.scope, &req).await?;
            reply(convert::response(&task)?)
        })
        .await
    }

    async fn list_tasks(
        &self,
        request: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        self.run("ListTasks", request, |call, message| async move {
            let req: ListTasksRequest = convert::request(&message)?;
            let listing = ops::list_tasks(&call.state, &call.scope, &req).await?;
            reply(convert::response(&listing)?)
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: Request<pb::CancelTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        self.run("CancelTask", request, |call, message| async move {
            let task = ops::cancel_task(&call.state, &call.scope, &message.id, Version::V1_0);
            reply(convert::response(&task.await?)?)
        })
        .await
    }

    type SubscribeToTaskStream = Streamed;

    async fn subscribe_to_task(
        &self,
        request: Request<pb::SubscribeToTaskRequest>,
    ) -> Result<Response<Streamed>, Status> {
        self.run("SubscribeToTask", request, |call, message| async move {
            let cursor = crate::last_event_id(&call.headers);
            let sub = ops::subscribe(&call.state, &call.scope, &message.id, cursor).await?;
            stream_out(&call, sub.frames, sub.resumed)
        })
        .await
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        self.run(
            "CreateTaskPushNotificationConfig",
            request,
            |call, message| async move {
                let config: TaskPushNotificationConfig = convert::request(&message)?;
                let created =
                    ops::create_push_config(&call.state, &call.scope, config, Version::V1_0)
                        .await?;
                reply(convert::response(&created)?)
            },
        )
        .await
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        self.run(
            "GetTaskPushNotificationConfig",
            request,
            |call, message| async move {
                require_id(&message.id, "id")?;
                let config = ops::get_push_config(
                    &call.state,
                    &call.scope,
                    &message.task_id,
                    Some(&message.id),
                );
                reply(convert::response(&config.await?)?)
            },
        )
        .await
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        self.run(
            "ListTaskPushNotificationConfigs",
            request,
            |call, message| async move {
                let configs = ops::list_push_configs(&call.state, &call.scope, &message.task_id);
                let listing = ListPushConfigsResponse {
                    configs: configs.await?,
                    next_page_token: String::new(),
                };
                reply(convert::response(&listing)?)
            },
        )
        .await
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<Response<pb::AgentCard>, Status> {
        self.run("GetExtendedAgentCard", request, |call, _| async move {
            let card = ops::extended_card(&call.state, &call.scope, Version::V1_0)?;
            reply(convert::from_json(card)?)
        })
        .await
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<wkt::Empty>, Status> {
        self.run(
            "DeleteTaskPushNotificationConfig",
            request,
            |call, message| async move {
                ops::delete_push_config(&call.state, &call.scope, &message.task_id, &message.id)
                    .await?;
                reply(wkt::Empty {})
            },
        )
        .await
    }
}
