//! [`TaskStateClient`] as a [`TurnRunner`]: the task-state service queues each turn and
//! streams its progress back; the stream is always read to its very end.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use sb_agent::{FirstMessage, Opening, TurnOver, TurnRunner, read_until_settled};
use sb_protocol::{A2AError, Message, Metadata};
use sb_store::TaskRecord;
use sb_tasks::{NewTask, Scope, TaskService};
use tonic::Streaming;

use super::{TaskStateClient, create_request};
use crate::pb;
use crate::tasks::{record_from, record_pb};
use crate::wire::{error_from, to_json, traced};

#[async_trait]
impl TurnRunner for TaskStateClient {
    fn tasks(&self) -> &dyn TaskService {
        self
    }

    fn serves(&self, agent: &str) -> bool {
        self.local_agents.serves(agent)
    }

    async fn open(&self, agent: &str, first: FirstMessage<'_>) -> Result<Opening, A2AError> {
        match self.local_agents.code(agent) {
            Some(code) => code.open(first).await,
            None => Ok(Opening::Task(None)),
        }
    }

    async fn abandon(&self, agent: &str, metadata: &Metadata) {
        if let Some(code) = self.local_agents.code(agent) {
            code.abandon(metadata).await;
        }
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
