//! The task-state service over gRPC: [`TaskStateServer`] wraps the in-process services;
//! [`TaskStateClient`] implements [`TaskService`], [`PushConfigService`] and
//! [`TurnRunner`] for processes that reach task state across the network.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use sb_agent::TurnRunner;
use sb_protocol::requests::ListTasksRequest;
use sb_protocol::*;
use sb_store::{StoredEvent, TaskRecord};
use sb_tasks::{NewTask, Scope, TaskListing, TaskResult, TaskService, TaskUpdate};
use sb_webhooks::PushConfigService;
use tokio::sync::oneshot;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use crate::pb;
use crate::pb::task_state_client::TaskStateClient as Raw;
use crate::wire::*;

fn scope_pb(scope: &Scope) -> Option<pb::Scope> {
    Some(pb::Scope {
        agent: scope.agent.clone(),
        owner: scope.owner.clone(),
    })
}

fn scope_from(scope: Option<pb::Scope>) -> Scope {
    let scope = scope.unwrap_or_default();
    Scope {
        agent: scope.agent,
        owner: scope.owner,
    }
}

fn record_pb(record: &TaskRecord) -> pb::TaskRecord {
    pb::TaskRecord {
        json: to_json(record),
    }
}

fn record_from(record: Option<pb::TaskRecord>) -> Result<TaskRecord, A2AError> {
    let record =
        record.ok_or_else(|| A2AError::internal("task record missing on the internal API"))?;
    from_json(&record.json, "task record")
}

pub(crate) fn event_pb(event: &StoredEvent) -> pb::TaskEvent {
    pb::TaskEvent {
        task_id: event.task_id.clone(),
        seq: event.seq,
        json: to_json(&event.event),
    }
}

pub(crate) fn event_from(event: pb::TaskEvent) -> Result<StoredEvent, A2AError> {
    Ok(StoredEvent {
        task_id: event.task_id,
        seq: event.seq,
        event: from_json(&event.json, "task event")?,
        traceparent: None,
    })
}

fn version_from(raw: &str) -> Version {
    if raw == "0.3" {
        Version::V0_3
    } else {
        Version::V1_0
    }
}

fn states_pb(states: &[TaskState]) -> Vec<String> {
    states.iter().map(|s| s.as_str().to_owned()).collect()
}

fn states_from(states: &[String]) -> Result<Vec<TaskState>, A2AError> {
    states
        .iter()
        .map(|s| from_json(to_json(s).as_slice(), "task state"))
        .collect()
}

type Reply<T> = Result<Response<T>, Status>;

fn reply<T>(result: Result<T, A2AError>) -> Reply<T> {
    result.map(Response::new).map_err(status_from)
}

/// The server side: the in-process services this replica runs.
#[derive(Debug, Clone)]
pub struct TaskStateServer {
    pub tasks: Arc<dyn TaskService>,
    pub push: Arc<dyn PushConfigService>,
    pub runner: Arc<dyn TurnRunner>,
}

impl TaskStateServer {
    pub fn into_service(self) -> pb::task_state_server::TaskStateServer<TaskStateServer> {
        pb::task_state_server::TaskStateServer::new(self)
    }
}

type TurnStream = futures::stream::BoxStream<'static, Result<pb::TurnProgress, Status>>;

#[async_trait]
impl pb::task_state_server::TaskState for TaskStateServer {
    async fn create(&self, request: Request<pb::CreateTaskRequest>) -> Reply<pb::TaskRecord> {
        let req = request.into_inner();
        let result = async {
            let metadata = if req.metadata_json.is_empty() {
                None
            } else {
                Some(from_json(&req.metadata_json, "metadata")?)
            };
            let new = NewTask {
                scope: scope_from(req.scope),
                message: from_json(&req.message_json, "message")?,
                metadata,
            };
            Ok(record_pb(&self.tasks.create(new).await?))
        }
        .await;
        reply(result)
    }

    async fn get(&self, request: Request<pb::GetTaskRequest>) -> Reply<pb::TaskRecord> {
        let req = request.into_inner();
        let scope = scope_from(req.scope);
        reply(
            self.tasks
                .get(&scope, &req.task_id)
                .await
                .map(|r| record_pb(&r)),
        )
    }

    async fn list(&self, request: Request<pb::ListTasksRequest>) -> Reply<pb::ListTasksResponse> {
        let req = request.into_inner();
        let result = async {
            let list: ListTasksRequest = from_json(&req.request_json, "list request")?;
            let listing = self.tasks.list(&scope_from(req.scope), &list).await?;
            Ok(pb::ListTasksResponse {
                records: listing.records.iter().map(record_pb).collect(),
                total: listing.total as u64,
                next_page_token: listing.next_page_token,
                page_size: listing.page_size as u64,
            })
        }
        .await;
        reply(result)
    }

    async fn update(
        &self,
        request: Request<pb::UpdateTaskRequest>,
    ) -> Reply<pb::UpdateTaskResponse> {
        let req = request.into_inner();
        let result = async {
            let update: TaskUpdate = from_json(&req.update_json, "task update")?;
            let record = if req.expected_states.is_empty() {
                Some(self.tasks.update(&req.task_id, update).await?)
            } else {
                let expected = states_from(&req.expected_states)?;
                self.tasks
                    .update_if(&req.task_id, &expected, update)
                    .await?
            };
            Ok(pb::UpdateTaskResponse {
                record: record.as_ref().map(record_pb),
            })
        }
        .await;
        reply(result)
    }

    async fn cancel(&self, request: Request<pb::CancelTaskRequest>) -> Reply<pb::TaskRecord> {
        let req = request.into_inner();
        let scope = scope_from(req.scope);
        reply(
            self.tasks
                .cancel(&scope, &req.task_id)
                .await
                .map(|r| record_pb(&r)),
        )
    }

    async fn events_after(
        &self,
        request: Request<pb::EventsAfterRequest>,
    ) -> Reply<pb::EventsAfterResponse> {
        let req = request.into_inner();
        let limit = (req.limit as usize).clamp(1, 1024);
        let events = self
            .tasks
            .events_after(&req.task_id, req.after, limit)
            .await;
        reply(events.map(|events| pb::EventsAfterResponse {
            events: events.iter().map(event_pb).collect(),
        }))
    }

    async fn create_push_config(
        &self,
        request: Request<pb::CreatePushConfigRequest>,
    ) -> Reply<pb::PushConfig> {
        let req = request.into_inner();
        let result = async {
            let config = from_json(&req.config_json, "push config")?;
            let scope = scope_from(req.scope);
            let created = self
                .push
                .create(&scope, config, version_from(&req.version))
                .await?;
            Ok(pb::PushConfig {
                json: to_json(&created),
            })
        }
        .await;
        reply(result)
    }

    async fn get_push_config(&self, request: Request<pb::PushConfigRef>) -> Reply<pb::PushConfig> {
        let req = request.into_inner();
        let scope = scope_from(req.scope);
        let found = self.push.get(&scope, &req.task_id, &req.config_id).await;
        reply(found.map(|c| pb::PushConfig { json: to_json(&c) }))
    }

    async fn list_push_configs(
        &self,
        request: Request<pb::ListPushConfigsRequest>,
    ) -> Reply<pb::ListPushConfigsResponse> {
        let req = request.into_inner();
        let scope = scope_from(req.scope);
        let configs = self.push.list(&scope, &req.task_id).await;
        reply(configs.map(|configs| {
            pb::ListPushConfigsResponse {
                configs: configs
                    .iter()
                    .map(|c| pb::PushConfig { json: to_json(c) })
                    .collect(),
            }
        }))
    }

    async fn delete_push_config(
        &self,
        request: Request<pb::PushConfigRef>,
    ) -> Reply<pb::DeletePushConfigResponse> {
        let req = request.into_inner();
        let scope = scope_from(req.scope);
        let deleted = self.push.delete(&scope, &req.task_id, &req.config_id).await;
        reply(deleted.map(|()| pb::DeletePushConfigResponse {}))
    }

    type AssignStream = TurnStream;

    async fn assign(&self, request: Request<pb::AssignRequest>) -> Reply<TurnStream> {
        let req = request.into_inner();
        let result = async {
            let record = record_from(req.record)?;
            let message: Message = from_json(&req.message_json, "message")?;
            self.runner.dispatch(&record, message).await
        }
        .await;
        let turn = result.map_err(status_from)?;
        let queued = futures::stream::once(async { Ok(pb::TurnProgress { over: false }) });
        let over = futures::stream::once(async move {
            // A lost signal (the replica running the turn went away) still ends the wait:
            // the caller then answers with the task as it is.
            let _ = turn.await;
            Ok(pb::TurnProgress { over: true })
        });
        Ok(Response::new(queued.chain(over).boxed()))
    }
}

/// The client side, over a channel to every task-state replica.
#[derive(Debug, Clone)]
pub struct TaskStateClient {
    raw: Raw<Channel>,
    /// Decides direct replies at the edge: a pure function of the message, known for the
    /// agents whose code this process has (the built-in ones).
    local_agents: Arc<std::collections::BTreeMap<String, Option<Arc<dyn sb_agent::Agent>>>>,
}

impl TaskStateClient {
    /// `agents`: every agent served, with its code when this process has it.
    pub fn new(
        channel: Channel,
        agents: std::collections::BTreeMap<String, Option<Arc<dyn sb_agent::Agent>>>,
    ) -> TaskStateClient {
        TaskStateClient {
            raw: Raw::new(channel)
                .max_decoding_message_size(64 * 1024 * 1024)
                .max_encoding_message_size(64 * 1024 * 1024),
            local_agents: Arc::new(agents),
        }
    }

    fn raw(&self) -> Raw<Channel> {
        self.raw.clone()
    }
}

/// Sends an idempotent call, once more if it did not reach a replica.
macro_rules! idempotent {
    ($self:ident, $method:ident, $message:expr) => {{
        let message = $message;
        match $self.raw().$method(request(message.clone())).await {
            Err(status) if is_transient(&status) => $self.raw().$method(request(message)).await,
            other => other,
        }
        .map(Response::into_inner)
        .map_err(error_from)
    }};
}

/// Sends a call that must not be repeated blindly (it writes).
macro_rules! once {
    ($self:ident, $method:ident, $message:expr) => {{
        $self
            .raw()
            .$method(request($message))
            .await
            .map(Response::into_inner)
            .map_err(error_from)
    }};
}

#[async_trait]
impl TaskService for TaskStateClient {
    async fn create(&self, new: NewTask) -> TaskResult<TaskRecord> {
        let message = pb::CreateTaskRequest {
            scope: scope_pb(&new.scope),
            message_json: to_json(&new.message),
            metadata_json: new.metadata.as_ref().map(to_json).unwrap_or_default(),
        };
        record_from(Some(once!(self, create, message)?))
    }

    async fn get(&self, scope: &Scope, task_id: &str) -> TaskResult<TaskRecord> {
        let message = pb::GetTaskRequest {
            scope: scope_pb(scope),
            task_id: task_id.to_owned(),
        };
        record_from(Some(idempotent!(self, get, message)?))
    }

    async fn list(&self, scope: &Scope, request: &ListTasksRequest) -> TaskResult<TaskListing> {
        let message = pb::ListTasksRequest {
            scope: scope_pb(scope),
            request_json: to_json(request),
        };
        let listing = idempotent!(self, list, message)?;
        Ok(TaskListing {
            records: listing
                .records
                .into_iter()
                .map(|r| record_from(Some(r)))
                .collect::<Result<_, _>>()?,
            total: listing.total as usize,
            next_page_token: listing.next_page_token,
            page_size: listing.page_size as usize,
        })
    }

    async fn update(&self, task_id: &str, update: TaskUpdate) -> TaskResult<TaskRecord> {
        let message = pb::UpdateTaskRequest {
            task_id: task_id.to_owned(),
            update_json: to_json(&update),
            expected_states: Vec::new(),
        };
        record_from(once!(self, update, message)?.record)
    }

    async fn update_if(
        &self,
        task_id: &str,
        expected: &[TaskState],
        update: TaskUpdate,
    ) -> TaskResult<Option<TaskRecord>> {
        let message = pb::UpdateTaskRequest {
            task_id: task_id.to_owned(),
            update_json: to_json(&update),
            expected_states: states_pb(expected),
        };
        match once!(self, update, message)?.record {
            Some(record) => record_from(Some(record)).map(Some),
            None => Ok(None),
        }
    }

    async fn cancel(&self, scope: &Scope, task_id: &str) -> TaskResult<TaskRecord> {
        // Canceling twice answers the canceled task: safe to repeat.
        let message = pb::CancelTaskRequest {
            scope: scope_pb(scope),
            task_id: task_id.to_owned(),
        };
        record_from(Some(idempotent!(self, cancel, message)?))
    }

    async fn events_after(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> TaskResult<Vec<StoredEvent>> {
        let message = pb::EventsAfterRequest {
            task_id: task_id.to_owned(),
            after,
            limit: limit.min(u32::MAX as usize) as u32,
        };
        idempotent!(self, events_after, message)?
            .events
            .into_iter()
            .map(event_from)
            .collect()
    }
}

#[async_trait]
impl PushConfigService for TaskStateClient {
    async fn create(
        &self,
        scope: &Scope,
        config: TaskPushNotificationConfig,
        version: Version,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        let message = pb::CreatePushConfigRequest {
            scope: scope_pb(scope),
            config_json: to_json(&config),
            version: version.as_str().to_owned(),
        };
        from_json(
            &once!(self, create_push_config, message)?.json,
            "push config",
        )
    }

    async fn get(
        &self,
        scope: &Scope,
        task_id: &str,
        config_id: &str,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        let message = pb::PushConfigRef {
            scope: scope_pb(scope),
            task_id: task_id.to_owned(),
            config_id: config_id.to_owned(),
        };
        from_json(
            &idempotent!(self, get_push_config, message)?.json,
            "push config",
        )
    }

    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
        let message = pb::ListPushConfigsRequest {
            scope: scope_pb(scope),
            task_id: task_id.to_owned(),
        };
        idempotent!(self, list_push_configs, message)?
            .configs
            .iter()
            .map(|c| from_json(&c.json, "push config"))
            .collect()
    }

    async fn delete(&self, scope: &Scope, task_id: &str, config_id: &str) -> Result<(), A2AError> {
        let message = pb::PushConfigRef {
            scope: scope_pb(scope),
            task_id: task_id.to_owned(),
            config_id: config_id.to_owned(),
        };
        idempotent!(self, delete_push_config, message).map(|_| ())
    }
}

#[async_trait]
impl TurnRunner for TaskStateClient {
    fn serves(&self, agent: &str) -> bool {
        self.local_agents.contains_key(agent)
    }

    fn direct_reply(&self, agent: &str, message: &Message) -> Option<Message> {
        self.local_agents
            .get(agent)?
            .as_ref()?
            .direct_reply(message)
    }

    async fn dispatch(
        &self,
        record: &TaskRecord,
        message: Message,
    ) -> Result<oneshot::Receiver<()>, A2AError> {
        let request = pb::AssignRequest {
            record: Some(record_pb(record)),
            message_json: to_json(&message),
            traceparent: sb_telemetry::traceparent().unwrap_or_default(),
        };
        // No deadline: the stream lasts as long as the turn.
        let mut progress = self
            .raw()
            .assign(traced(request))
            .await
            .map_err(error_from)?
            .into_inner();
        match progress.message().await {
            Ok(Some(pb::TurnProgress { over: false })) => {}
            Ok(_) => {
                return Err(
                    A2AError::internal("the task-state service did not queue the turn")
                        .retryable(true),
                );
            }
            Err(status) => return Err(error_from(status)),
        }
        let (turn_over, turn) = oneshot::channel();
        tokio::spawn(async move {
            if let Ok(Some(pb::TurnProgress { over: true })) = progress.message().await {
                let _ = turn_over.send(());
            }
        });
        Ok(turn)
    }
}
