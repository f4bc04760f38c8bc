//! SendMessage and SendStreamingMessage: create a task for a first message or resume
//! the one a follow-up names, start its agent's turn through the runner, and answer:
//! the task as created (non-blocking), the task once it settles (blocking), or its events
//! until the turn is over (streaming).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use sb_agent::{Caller, FirstMessage, Opening, TurnOver};
use sb_protocol::delegation::depth_of;
use sb_protocol::requests::{SendMessageRequest, history_limit};
use sb_protocol::{
    A2AError, ErrorKind, Message, SendMessageResponse, StreamResponse, TaskPushNotificationConfig,
    TaskState, Version, new_id,
};
use sb_store::TaskRecord;
use sb_tasks::{NewTask, Scope, TaskUpdate};

use super::FrameStream;
use super::streams::{frames_after, single_frame, snapshot_then_live, until_end, until_turn_over};
use crate::AppState;

/// Longest a blocking SendMessage waits before answering with the task as it is.
const BLOCKING_WAIT: Duration = Duration::from_secs(600);

/// What a send started: a task turn (with a signal for the end of the turn), or a direct
/// message reply with no task.
enum Started {
    Turn(Box<TaskRecord>, TurnOver),
    /// A new task whose first turn was waited for (`wait`): the task as it left it.
    Settled(Arc<TaskRecord>),
    Reply(Box<Message>),
}

/// Creates a task for a first message, or resumes the task a follow-up names; starts the
/// agent's turn either way. With `wait`, a new task's turn is waited for in the same call
/// (at most that long).
async fn start_turn(
    state: &AppState,
    scope: &Scope,
    req: &SendMessageRequest,
    version: Version,
    wait: Option<Duration>,
) -> Result<Started, A2AError> {
    req.validate()?;
    if !state.runner.serves(&scope.agent) {
        return Err(A2AError::new(
            ErrorKind::MethodNotFound,
            format!(
                "agent \"{}\" was removed from the registry and takes no new messages; its tasks stay readable",
                scope.agent
            ),
        ));
    }
    // An inline push config is checked before anything changes: refused after the task
    // was made or resumed, it would leave a task no turn ever runs.
    if let Some(config) = req
        .configuration
        .as_ref()
        .and_then(|c| c.task_push_notification_config.as_ref())
    {
        state.push.check(config).await?;
    }
    let message = req.message.clone();
    if let Some(task_id) = message.task_id.clone().filter(|t| !t.is_empty()) {
        let existing = state.tasks.get(scope, &task_id).await?;
        if let Some(ctx) = message.context_id.as_deref().filter(|c| !c.is_empty())
            && ctx != existing.task.context_id
        {
            return Err(A2AError::invalid_field(
                "message.contextId",
                format!(
                    "task {task_id} belongs to context {}, not {ctx}",
                    existing.task.context_id
                ),
            )
            .with_task(&task_id));
        }
        let current = existing.state();
        if current.is_terminal() {
            return Err(A2AError::unsupported(format!(
                "task {task_id} is {} and accepts no more messages; send a new message without taskId to start a new task",
                current.as_v03_str()
            ))
            .with_task(&task_id));
        }
        let resumed = state
            .tasks
            .update(
                &task_id,
                TaskUpdate::Resume {
                    message: message.clone(),
                },
            )
            .await?;
        register_inline_push(state, scope, req, &task_id, version).await?;
        let turn = state.runner.dispatch(&resumed, message).await?;
        return Ok(Started::Turn(Box::new(resumed), turn));
    }
    for reference in &message.reference_task_ids {
        state.tasks.get(scope, reference).await?;
    }
    let depth = depth_of(message.metadata.as_ref())?;
    if depth > state.max_delegation_depth {
        let reason = format!(
            "the message comes {depth} hops of agents calling agents deep, past this server's cap of {}; a chain that long is likely a loop",
            state.max_delegation_depth
        );
        return reject(state, scope, req, message, reason).await;
    }
    let mut message = message;
    // The conversation's context is known before the agent opens it (a bridge names
    // its upstream's context after it), and is the task's or the reply's.
    if message.context_id.as_deref().is_none_or(str::is_empty) {
        message.context_id = Some(new_id());
    }
    let caller = match wait {
        Some(patience) => Caller::Waits { patience },
        None => Caller::Follows,
    };
    let first = FirstMessage {
        message: &message,
        owner: &scope.owner,
        caller,
    };
    let (metadata, opened) = match state.runner.open(&scope.agent, first).await? {
        Opening::Reply(mut reply) => {
            reply.context_id = message.context_id.clone();
            return Ok(Started::Reply(Box::new(reply)));
        }
        Opening::Task(None) => (req.metadata.clone(), None),
        Opening::Task(Some(added)) => {
            let mut metadata = req.metadata.clone().unwrap_or_default();
            metadata.extend(added.clone());
            (Some(metadata), Some(added))
        }
    };
    let new = NewTask {
        scope: scope.clone(),
        message,
        metadata,
    };
    let started = start_new(state, scope, req, version, wait, new).await;
    if let (true, Some(opened)) = (started.is_err(), opened) {
        // What the agent started for a task that was not made (a limit, the store) is
        // its to undo: a bridge cancels the upstream task it opened.
        state.runner.abandon(&scope.agent, &opened).await;
    }
    started
}

/// Creates the task a first message opened and starts its first turn.
async fn start_new(
    state: &AppState,
    scope: &Scope,
    req: &SendMessageRequest,
    version: Version,
    wait: Option<Duration>,
    new: NewTask,
) -> Result<Started, A2AError> {
    let inline_push = req
        .configuration
        .as_ref()
        .is_some_and(|c| c.task_push_notification_config.is_some());
    if !inline_push {
        if let Some(wait) = wait {
            let settled = state.runner.start_and_wait(new, wait).await?;
            return Ok(Started::Settled(settled));
        }
        let (record, turn) = state.runner.start(new).await?;
        return Ok(Started::Turn(Box::new(record), turn));
    }
    // The push config must exist before the agent reports anything.
    let record = state.tasks.create(new).await?;
    register_inline_push(state, scope, req, &record.task.id, version).await?;
    let turn = state
        .runner
        .dispatch(&record, record.task.history[0].clone())
        .await?;
    Ok(Started::Turn(Box::new(record), turn))
}

/// A new task, rejected at once with `reason` (nothing runs it).
async fn reject(
    state: &AppState,
    scope: &Scope,
    req: &SendMessageRequest,
    message: Message,
    reason: String,
) -> Result<Started, A2AError> {
    let new = NewTask {
        scope: scope.clone(),
        message,
        metadata: req.metadata.clone(),
    };
    let created = state.tasks.create(new).await?;
    let rejected = TaskUpdate::Status {
        state: TaskState::Rejected,
        message: Some(Message::agent_text(reason)),
        metadata: None,
    };
    let record = state.tasks.update(&created.task.id, rejected).await?;
    Ok(Started::Settled(Arc::new(record)))
}

async fn register_inline_push(
    state: &AppState,
    scope: &Scope,
    req: &SendMessageRequest,
    task_id: &str,
    version: Version,
) -> Result<(), A2AError> {
    let Some(config) = req
        .configuration
        .as_ref()
        .and_then(|c| c.task_push_notification_config.clone())
    else {
        return Ok(());
    };
    let config = TaskPushNotificationConfig {
        task_id: task_id.to_owned(),
        ..config
    };
    state.push.create(scope, config, version).await.map(|_| ())
}

/// A SendMessage's result. A task is kept as the runner handed it over, often shared
/// with the store's cache: a JSON-RPC 1.0 reply is made from the task's JSON as the store
/// wrote it, when that is exactly the task answered ([`Sent::task_json`]), with no copy
/// of the task and no serialisation.
#[derive(Debug)]
pub enum Sent {
    Task {
        record: Arc<TaskRecord>,
        /// The history length asked for.
        limit: Option<usize>,
    },
    Message(Message),
}

impl Sent {
    /// The task's 1.0 JSON, when the store's is exactly the task answered (nothing cut
    /// from its history).
    pub fn task_json(&self) -> Option<&Arc<str>> {
        match self {
            Sent::Task { record, limit } => {
                let whole = limit.is_none_or(|limit| limit >= record.task.history.len());
                record.task_json().filter(|_| whole)
            }
            Sent::Message(_) => None,
        }
    }

    /// The result as its protocol type (copying a task the cache shares).
    pub fn into_response(self) -> SendMessageResponse {
        match self {
            Sent::Task { record, limit } => SendMessageResponse::Task(
                Arc::unwrap_or_clone(record).task.with_history_limit(limit),
            ),
            Sent::Message(message) => SendMessageResponse::Message(message),
        }
    }
}

/// SendMessage: non-blocking returns the task as created. Blocking, in 1.0, waits until
/// the task is terminal or interrupted (spec §3.2.2), at most `BLOCKING_WAIT`, then
/// answers with the task as it stands. A 0.3 blocking `message/send` answers with the
/// task "after processing the message" (0.3 §7.1): once the agent's turn is over, which
/// is what the 0.3 reference SDKs do and what the 0.3 TCK's tests of open tasks rely on.
pub async fn send(
    state: &AppState,
    scope: &Scope,
    req: SendMessageRequest,
    version: Version,
) -> Result<Sent, A2AError> {
    let limit = history_limit(req.history_length());
    let wait = (!req.returns_immediately()).then_some(BLOCKING_WAIT);
    // 1.0 waits for the task as well as the turn, within the same limit.
    let deadline = wait
        .filter(|_| version == Version::V1_0)
        .map(|wait| tokio::time::Instant::now() + wait);
    // Boxed: starting a turn is most of a send's state, and every binding's request
    // future would otherwise carry it inline for as long as the request lasts.
    let (record, turn) = match Box::pin(start_turn(state, scope, &req, version, wait)).await? {
        Started::Turn(record, turn) => (*record, turn),
        Started::Settled(record) => {
            let record = until_task_settles(state, scope, record, deadline).await?;
            return Ok(Sent::Task { record, limit });
        }
        Started::Reply(message) => return Ok(Sent::Message(*message)),
    };
    let Some(wait) = wait else {
        let record = Arc::new(record);
        return Ok(Sent::Task { record, limit });
    };
    // The turn's end comes as soon as the task has ended, too (a runner's promise); only
    // a turn that leaves its task working needs the task's events followed after it.
    let record =
        sb_agent::task_after_turn(&*state.tasks, scope, &record.task.id, turn, wait).await?;
    let record = until_task_settles(state, scope, record, deadline).await?;
    Ok(Sent::Task { record, limit })
}

/// The task once it is terminal or interrupted, or as it stands at `deadline` (with no
/// deadline, as it is). A turn's end is not its task's: an agent may end its turn and
/// keep the task working (`Reporter::keep_open`), and a 1.0 blocking send answers only
/// when the task settles.
async fn until_task_settles(
    state: &AppState,
    scope: &Scope,
    record: Arc<TaskRecord>,
    deadline: Option<tokio::time::Instant>,
) -> Result<Arc<TaskRecord>, A2AError> {
    let Some(deadline) = deadline else {
        return Ok(record);
    };
    if record.state().is_terminal() || record.state().is_interrupted() {
        return Ok(record);
    }
    let mut events = until_end(frames_after(state, &record.task.id, record.seq));
    let follow = async { while events.next().await.is_some() {} };
    // Run out or not, the answer is the task as stored now.
    let _ = tokio::time::timeout_at(deadline, follow).await;
    drop(events);
    state.tasks.get(scope, &record.task.id).await.map(Arc::new)
}

/// SendStreamingMessage: the task snapshot first, then its events until it ends or waits.
pub async fn send_streaming(
    state: &AppState,
    scope: &Scope,
    req: SendMessageRequest,
    version: Version,
) -> Result<FrameStream, A2AError> {
    // Boxed for the reason `send` gives.
    match Box::pin(start_turn(state, scope, &req, version, None)).await? {
        Started::Turn(record, turn) => {
            let task_id = record.task.id.clone();
            let frames = snapshot_then_live(state, *record, history_limit(req.history_length()));
            Ok(until_turn_over(
                state.clone(),
                scope.clone(),
                task_id,
                frames,
                turn,
            ))
        }
        // Not asked for here (no wait); a settled task's stream would be its snapshot.
        Started::Settled(record) => {
            let limit = history_limit(req.history_length());
            let seq = record.seq;
            let task = Arc::unwrap_or_clone(record).task;
            let event = StreamResponse::Task(task.with_history_limit(limit));
            Ok(single_frame(seq, event))
        }
        Started::Reply(message) => Ok(single_frame(0, StreamResponse::Message(*message))),
    }
}
