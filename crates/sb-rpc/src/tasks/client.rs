use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use sb_agent::{TurnOver, TurnRunner, read_until_settled};
use sb_protocol::requests::ListTasksRequest;
use sb_store::{StoredEvent, TaskRecord};
use sb_tasks::{NewTask, Scope, TaskListing, TaskResult, TaskService, TaskUpdate};
use sb_webhooks::PushConfigService;
use tonic::transport::Channel;
use tonic::{Response, Streaming};

use super::{event_from, record_from, record_pb, scope_pb, states_pb};
use crate::pb;
use crate::pb::task_state_client::TaskStateClient as Raw;
use crate::wire::{error_from, from_json, is_transient, request, to_json, traced};
use sb_protocol::{A2AError, Message, TaskPushNotificationConfig, TaskState, Version};

/// The client side, over a channel to every task-state replica.
#[derive(Debug, Clone)]
pub struct TaskStateClient {
    raw: Raw<Channel>,
    /// Decides direct replies at the edge: a pure function of the message, known for the
    /// agents whose code this process has (the built-in ones).
    local_agents: Arc<std::collections::BTreeMap<String, Option<Arc<dyn sb_agent::Agent>>>>,
    /// A worker's turn (assignment id, agent): its updates are fenced by the turn's lease.
    turn: Option<(String, String)>,
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
            turn: None,
        }
    }

    /// The same client for one turn of a remote worker: its updates name the turn, and
    /// are refused once the turn is no longer leased to this worker.
    pub fn for_turn(&self, assignment_id: &str, agent: &str) -> TaskStateClient {
        TaskStateClient {
            turn: Some((assignment_id.to_owned(), agent.to_owned())),
            ..self.clone()
        }
    }

    fn turn_fields(&self) -> (String, String) {
        self.turn.clone().unwrap_or_default()
    }

    pub(super) fn raw(&self) -> Raw<Channel> {
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
        record_from(Some(once!(self, create, create_request(&new))?))
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
            assignment_id: self.turn_fields().0,
            agent: self.turn_fields().1,
            more_updates_json: Vec::new(),
        };
        record_from(once!(self, update, message)?.record)
    }

    async fn update_all(&self, task_id: &str, updates: &[TaskUpdate]) -> TaskResult<TaskRecord> {
        let mut encoded = updates.iter().map(to_json);
        let Some(first) = encoded.next() else {
            return Err(A2AError::invalid_params(
                "update_all needs at least one update",
            ));
        };
        let message = pb::UpdateTaskRequest {
            task_id: task_id.to_owned(),
            update_json: first,
            expected_states: Vec::new(),
            assignment_id: self.turn_fields().0,
            agent: self.turn_fields().1,
            more_updates_json: encoded.collect(),
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
            assignment_id: self.turn_fields().0,
            agent: self.turn_fields().1,
            more_updates_json: Vec::new(),
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
    fn tasks(&self) -> &dyn TaskService {
        self
    }

    fn serves(&self, agent: &str) -> bool {
        self.local_agents.contains_key(agent)
    }

    fn direct_reply(&self, agent: &str, message: &Message) -> Option<Message> {
        self.local_agents
            .get(agent)?
            .as_ref()?
            .direct_reply(message)
    }

    async fn dispatch(&self, record: &TaskRecord, message: Message) -> Result<TurnOver, A2AError> {
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
        queued(&mut progress).await?;
        Ok(self.turn_over(progress, Scope::of(record), record.task.id.clone()))
    }

    /// One call: the task-state service creates the task and queues its turn.
    async fn start(&self, new: NewTask) -> Result<(TaskRecord, TurnOver), A2AError> {
        let mut progress = self
            .raw()
            .start(traced(create_request(&new)))
            .await
            .map_err(error_from)?
            .into_inner();
        let record = record_from(queued(&mut progress).await?)?;
        let turn = self.turn_over(progress, new.scope, record.task.id.clone());
        Ok((record, turn))
    }

    /// One message: the task-state service waits for the turn and streams its end only.
    async fn start_and_wait(
        &self,
        new: NewTask,
        wait: Duration,
    ) -> Result<Arc<TaskRecord>, A2AError> {
        let mut request = create_request(&new);
        request.wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
        let progress = self
            .raw()
            .start(traced(request))
            .await
            .map_err(error_from)?
            .into_inner();
        let mut progress = Progress(Some(progress));
        let over = progress.message().await;
        progress.finish().await;
        match over {
            Ok(Some(pb::TurnProgress { over: true, record })) => record_from(record).map(Arc::new),
            Ok(_) => Err(A2AError::internal(
                "the task-state service did not report the task after its turn",
            )
            .retryable(true)),
            Err(status) => Err(error_from(status)),
        }
    }
}

pub(super) fn create_request(new: &NewTask) -> pb::CreateTaskRequest {
    pb::CreateTaskRequest {
        scope: scope_pb(&new.scope),
        message_json: to_json(&new.message),
        metadata_json: new.metadata.as_ref().map(to_json).unwrap_or_default(),
        wait_ms: 0,
    }
}

/// Waits for a turn's first progress message (queued); returns the record it carries.
async fn queued(
    progress: &mut Streaming<pb::TurnProgress>,
) -> Result<Option<pb::TaskRecord>, A2AError> {
    match progress.message().await {
        Ok(Some(pb::TurnProgress {
            over: false,
            record,
        })) => Ok(record),
        Ok(_) => {
            Err(A2AError::internal("the task-state service did not queue the turn").retryable(true))
        }
        Err(status) => Err(error_from(status)),
    }
}

impl TaskStateClient {
    /// The rest of a turn's progress stream, as its end. A stream that fails (the
    /// replica serving it went away) says nothing of the turn, which goes on: the task
    /// is then followed until it ends or waits.
    fn turn_over(
        &self,
        progress: Streaming<pb::TurnProgress>,
        scope: Scope,
        task_id: String,
    ) -> TurnOver {
        let client = self.clone();
        async move {
            Ok(match Progress(Some(progress)).end().await {
                Some(record) => Some(record),
                None => read_until_settled(&client, &scope, &task_id).await,
            })
        }
        .boxed()
    }
}

/// A turn's progress stream, always read to its very end (trailers included). A gRPC
/// stream dropped before its end is reset, the server's frames that follow are answered
/// with more resets, and h2 closes a connection once it has sent ~1,000 of those:
/// every call on it fails. So a caller that stops waiting leaves the rest of the stream
/// to a task that reads it out.
struct Progress(Option<Streaming<pb::TurnProgress>>);

impl Progress {
    async fn message(&mut self) -> Result<Option<pb::TurnProgress>, tonic::Status> {
        match self.0.as_mut() {
            Some(stream) => stream.message().await,
            None => Ok(None),
        }
    }

    /// Reads what is left (after the last message, the trailers): the stream then ends
    /// on both sides.
    async fn finish(mut self) {
        if let Some(mut stream) = self.0.take() {
            while let Ok(Some(_)) = stream.message().await {}
        }
    }

    async fn end(mut self) -> Option<Arc<TaskRecord>> {
        let over = match self.message().await {
            Ok(Some(pb::TurnProgress { over: true, record })) => {
                record_from(record).ok().map(Arc::new)
            }
            _ => None,
        };
        self.finish().await;
        over
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        let Some(mut stream) = self.0.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { while let Ok(Some(_)) = stream.message().await {} });
        }
    }
}
