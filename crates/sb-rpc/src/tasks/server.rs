use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use sb_agent::{TurnOver, TurnRunner};
use sb_protocol::requests::ListTasksRequest;
use sb_tasks::{NewTask, Scope, TaskService, TaskUpdate};
use sb_webhooks::PushConfigService;
use tonic::{Request, Response, Status};

use super::{event_pb, record_from, record_pb, scope_from, states_from, version_from};
use crate::pb;
use crate::wire::{from_json, status_from, to_json};
use crate::workers::assignment::entry_of;
use sb_protocol::{A2AError, ErrorKind, Message};

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
    /// The turn queue, whose leases fence remote workers' updates.
    pub queue: Option<Arc<dyn sb_store::WorkQueue>>,
}

impl TaskStateServer {
    /// Refuses an update from a worker whose turn is no longer leased to it.
    async fn check_lease(&self, req: &pb::UpdateTaskRequest) -> Result<(), A2AError> {
        let (Some(queue), false) = (&self.queue, req.assignment_id.is_empty()) else {
            return Ok(());
        };
        let leased = match entry_of(&req.assignment_id, &req.agent) {
            Some(entry_id) => queue.is_leased(&req.agent, entry_id).await.map_err(|e| {
                A2AError::internal(format!("cannot check the turn's lease: {e}")).retryable(true)
            })?,
            None => false,
        };
        if leased {
            return Ok(());
        }
        Err(A2AError::new(
            ErrorKind::UnsupportedOperation,
            format!(
                "turn {} of task {} is no longer leased to this worker (it was lost, queued again or is over); stop working on it",
                req.assignment_id, req.task_id
            ),
        )
        .with_task(&req.task_id))
    }
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
        let result = async {
            let new = new_task_from(request.into_inner())?;
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
            self.check_lease(&req).await?;
            let update: TaskUpdate = from_json(&req.update_json, "task update")?;
            let record = if !req.more_updates_json.is_empty() {
                if !req.expected_states.is_empty() {
                    return Err(A2AError::invalid_params(
                        "more_updates_json cannot be combined with expected_states",
                    ));
                }
                let mut updates = vec![update];
                for json in &req.more_updates_json {
                    updates.push(from_json(json, "task update")?);
                }
                Some(self.tasks.update_all(&req.task_id, &updates).await?)
            } else if req.expected_states.is_empty() {
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

    async fn check_push_config(
        &self,
        request: Request<pb::CheckPushConfigRequest>,
    ) -> Reply<pb::CheckPushConfigResponse> {
        let req = request.into_inner();
        let result = async {
            let config = from_json(&req.config_json, "push config")?;
            self.push.check(&config).await?;
            Ok(pb::CheckPushConfigResponse {})
        }
        .await;
        reply(result)
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
            let turn = self.runner.dispatch(&record, message).await?;
            let scope = Scope {
                agent: record.agent,
                owner: record.owner,
            };
            Ok(self.progress(scope, record.task.id, None, turn))
        }
        .await;
        reply(result)
    }

    type StartStream = TurnStream;

    async fn start(&self, request: Request<pb::CreateTaskRequest>) -> Reply<TurnStream> {
        let result = async {
            let request = request.into_inner();
            let wait = Duration::from_millis(request.wait_ms);
            let new = new_task_from(request)?;
            let scope = new.scope.clone();
            let (record, turn) = self.runner.start(new).await?;
            if wait.is_zero() {
                let created = record_pb(&record);
                return Ok(self.progress(scope, record.task.id, Some(created), turn));
            }
            // Only the id is kept while the turn runs: the answer is read anew at its end.
            let task_id = record.task.id;
            // Waited for here, before the response begins: its headers, its one message
            // and its trailers then leave in one write, and the caller wakes once, where
            // a stream begun at once sends the headers now and the rest at the end.
            let settled =
                sb_agent::task_after_turn(&*self.tasks, &scope, &task_id, turn, wait).await;
            let over = pb::TurnProgress {
                over: true,
                record: settled.ok().map(|r| record_pb(&r)),
            };
            Ok(futures::stream::once(futures::future::ready(Ok(over))).boxed())
        }
        .await;
        reply(result)
    }
}

impl TaskStateServer {
    /// A turn's progress as streamed: queued (with the task as created, for a start),
    /// then over, with the task as the turn left it.
    fn progress(
        &self,
        scope: Scope,
        task_id: String,
        created: Option<pb::TaskRecord>,
        turn: TurnOver,
    ) -> TurnStream {
        let queued = futures::stream::once(async move {
            Ok(pb::TurnProgress {
                over: false,
                record: created,
            })
        });
        let tasks = self.tasks.clone();
        let over = futures::stream::once(async move {
            // A lost signal (the replica running the turn went away) still ends the wait:
            // the caller then answers with the task as it is. A worker's turn is never
            // unsaved here: the worker hears of a refused report and settles through
            // this service.
            let record = match turn.await {
                Ok(Some(record)) => Some(record_pb(&record)),
                Ok(None) | Err(_) => tasks
                    .get(&scope, &task_id)
                    .await
                    .ok()
                    .map(|r| record_pb(&r)),
            };
            Ok(pb::TurnProgress { over: true, record })
        });
        queued.chain(over).boxed()
    }
}

fn new_task_from(req: pb::CreateTaskRequest) -> Result<NewTask, A2AError> {
    let metadata = if req.metadata_json.is_empty() {
        None
    } else {
        Some(from_json(&req.metadata_json, "metadata")?)
    };
    Ok(NewTask {
        scope: scope_from(req.scope),
        message: from_json(&req.message_json, "message")?,
        metadata,
    })
}
