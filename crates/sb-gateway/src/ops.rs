//! The A2A operations, independent of binding and version: every binding decodes its
//! request into these calls and encodes what they return.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use sb_agent::TurnOver;
use sb_protocol::requests::*;
use sb_protocol::*;
use sb_store::TaskRecord;
use sb_tasks::{NewTask, Scope, TaskUpdate};

use crate::AppState;

/// One frame of an outgoing stream: the event and the sequence number it carries as the
/// SSE `id` (0 for a message reply, which is no task event and gets no id).
#[derive(Clone, Debug)]
pub struct Frame {
    pub seq: u64,
    /// Shared with the bus and every other stream of the task.
    pub event: std::sync::Arc<StreamResponse>,
    /// The event's 1.0 JSON, shared with every other stream sending the same event.
    pub json: sb_store::EventJson,
}

pub type FrameStream = BoxStream<'static, Result<Frame, A2AError>>;

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
    if let Some(mut reply) = state.runner.direct_reply(&scope.agent, &message) {
        let context_id = message.context_id.clone().filter(|c| !c.is_empty());
        reply.context_id = Some(context_id.unwrap_or_else(new_id));
        return Ok(Started::Reply(Box::new(reply)));
    }
    for reference in &message.reference_task_ids {
        state.tasks.get(scope, reference).await?;
    }
    let new = NewTask {
        scope: scope.clone(),
        message,
        metadata: req.metadata.clone(),
    };
    let inline_push = req
        .configuration
        .as_ref()
        .is_some_and(|c| c.task_push_notification_config.is_some());
    if !inline_push {
        if let Some(wait) = wait {
            let settled = state
                .runner
                .start_and_wait(&*state.tasks, new, wait)
                .await?;
            return Ok(Started::Settled(settled));
        }
        let (record, turn) = state.runner.start(&*state.tasks, new).await?;
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
/// the task is terminal or interrupted (spec §3.2.2), at most [`BLOCKING_WAIT`], then
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
    let deadline = (version == Version::V1_0).then(|| tokio::time::Instant::now() + BLOCKING_WAIT);
    let (record, turn) = match start_turn(state, scope, &req, version, wait).await? {
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
    // The turn's end comes as soon as the task has ended, too (a runner's promise): no
    // need to follow the task's events as well.
    let record = sb_agent::settle(&*state.tasks, scope, &record.task.id, turn, wait).await?;
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
    match start_turn(state, scope, &req, version, None).await? {
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

fn single_frame(seq: u64, event: StreamResponse) -> FrameStream {
    let frame = Frame {
        seq,
        event: event.into(),
        json: Default::default(),
    };
    futures::stream::once(async move { Ok(frame) }).boxed()
}

/// The task's events after `after` as stream frames (log replay, then live).
fn frames_after(state: &AppState, task_id: &str, after: u64) -> FrameStream {
    state
        .fanout
        .subscribe(task_id, after)
        .map(|r| {
            r.map(|e| Frame {
                seq: e.seq,
                event: e.event,
                json: e.json,
            })
        })
        .boxed()
}

/// The current task, then live events until the task ends (or waits for input again).
/// A task that is waiting already does not end the stream with its snapshot: whoever
/// subscribes to it wants to see what happens after the answer (TCK STREAM-SUB-002).
fn snapshot_then_live(state: &AppState, record: TaskRecord, limit: Option<usize>) -> FrameStream {
    let live = frames_after(state, &record.task.id, record.seq);
    let first = Frame {
        seq: record.seq,
        event: StreamResponse::Task(record.task.with_history_limit(limit)).into(),
        json: Default::default(),
    };
    let head = futures::stream::once(async move { Ok(first) });
    head.chain(until_end(live)).boxed()
}

/// Ends a SendStreamingMessage stream once the agent's turn is over and every event it
/// committed has been sent, even if the agent left the task working (a kept-open task
/// continues on the next message; SubscribeToTask follows it further). A turn whose end
/// could not be stored ends the stream with that error, after what was stored.
fn until_turn_over(
    state: AppState,
    scope: Scope,
    task_id: String,
    frames: FrameStream,
    turn: TurnOver,
) -> FrameStream {
    struct Progress {
        frames: FrameStream,
        turn: Option<TurnOver>,
        last_seq: u64,
        stop_at: Option<u64>,
        unsaved: Option<A2AError>,
    }
    let start = Progress {
        frames,
        turn: Some(turn),
        last_seq: 0,
        stop_at: None,
        unsaved: None,
    };
    futures::stream::unfold(start, move |mut p| {
        let (state, scope, task_id) = (state.clone(), scope.clone(), task_id.clone());
        async move {
            loop {
                if p.stop_at.is_some_and(|stop| p.last_seq >= stop) {
                    return p.unsaved.take().map(|err| (Err(err), p));
                }
                let item = match p.turn.as_mut() {
                    Some(turn) => tokio::select! {
                        item = p.frames.next() => item,
                        settled = turn => {
                            p.turn = None;
                            // Everything the turn committed is at or below the task's seq now.
                            let at_hand = match settled {
                                Ok(record) => record.map(|r| r.seq),
                                Err(unsaved) => {
                                    p.unsaved = Some(unsaved);
                                    None
                                }
                            };
                            let seq = match at_hand {
                                Some(seq) => seq,
                                None => state.tasks.get(&scope, &task_id).await.map(|r| r.seq).unwrap_or(0),
                            };
                            p.stop_at = Some(seq);
                            continue;
                        }
                    },
                    None => p.frames.next().await,
                }?;
                if let Ok(frame) = &item {
                    p.last_seq = p.last_seq.max(frame.seq);
                }
                return Some((item, p));
            }
        }
    })
    .boxed()
}

/// Ends the stream after the frame that closes it (terminal or interrupted state), or
/// after an error item. The frames behind it are dropped with that item, so the task's
/// bus subscription ends with the stream's last frame, not with the response.
pub fn until_end(frames: FrameStream) -> FrameStream {
    UntilEnd {
        frames: Some(frames),
    }
    .boxed()
}

struct UntilEnd {
    frames: Option<FrameStream>,
}

impl futures::Stream for UntilEnd {
    type Item = Result<Frame, A2AError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(frames) = self.frames.as_mut() else {
            return Poll::Ready(None);
        };
        let item = std::task::ready!(frames.poll_next_unpin(cx));
        let ends = match &item {
            Some(Ok(frame)) => frame.event.ends_stream(),
            Some(Err(_)) | None => true,
        };
        if ends {
            self.frames = None;
        }
        Poll::Ready(item)
    }
}

/// The URI of Switchboard's stream-resume extension (docs/extensions.md).
pub const RESUME_EXTENSION: &str = "urn:switchboard:a2a:extension:stream-resume:v1";

/// A subscription, and whether it honoured the client's resume cursor.
pub struct Subscription {
    pub frames: FrameStream,
    pub resumed: bool,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("resumed", &self.resumed)
            .finish_non_exhaustive()
    }
}

/// SubscribeToTask: without a cursor, the current task then live events (a finished
/// task is an error, spec §3.1.6). With a `Last-Event-ID` cursor N (the resume
/// extension): exactly the events after N, then live ones; a cursor the log cannot
/// serve gets one reset frame, the current task marked `reset`, then live events.
pub async fn subscribe(
    state: &AppState,
    scope: &Scope,
    task_id: &str,
    cursor: Option<u64>,
) -> Result<Subscription, A2AError> {
    require_id(task_id, "id")?;
    let record = state.tasks.get(scope, task_id).await?;
    let terminal = record.state().is_terminal();
    let Some(after) = cursor else {
        if terminal {
            return Err(A2AError::unsupported(format!(
                "task {task_id} is already {}; use GetTask to read its result",
                record.state().as_v03_str()
            ))
            .with_task(task_id));
        }
        let frames = snapshot_then_live(state, record, None);
        return Ok(Subscription {
            frames,
            resumed: false,
        });
    };
    let live = |from: u64| frames_after(state, task_id, from);
    if after > record.seq {
        // A cursor from the future (e.g. a restored backup): the client adopts ours.
        let mut task = record.task.clone();
        let marker = serde_json::json!({"seq": record.seq, "reset": true});
        task.metadata
            .get_or_insert_with(Default::default)
            .insert(RESUME_EXTENSION.into(), marker);
        let reset = Frame {
            seq: record.seq,
            event: StreamResponse::Task(task).into(),
            json: Default::default(),
        };
        let head = futures::stream::once(async move { Ok(reset) });
        let frames = if terminal {
            head.boxed()
        } else {
            head.chain(until_end(live(record.seq))).boxed()
        };
        return Ok(Subscription {
            frames,
            resumed: true,
        });
    }
    if after == record.seq && terminal {
        // The client has everything already.
        return Ok(Subscription {
            frames: futures::stream::empty().boxed(),
            resumed: true,
        });
    }
    Ok(Subscription {
        frames: until_end(live(after)),
        resumed: true,
    })
}

/// Adds `metadata[RESUME_EXTENSION] = {"seq": n}` to a task event, for clients that
/// activated the extension (and gRPC later, which has no SSE id).
pub fn tag_with_seq(mut frame: Frame) -> Frame {
    let seq = frame.seq;
    // Copied for this stream alone: the shared event stays untagged.
    let metadata = match std::sync::Arc::make_mut(&mut frame.event) {
        StreamResponse::Task(task) => &mut task.metadata,
        StreamResponse::StatusUpdate(ev) => &mut ev.metadata,
        StreamResponse::ArtifactUpdate(ev) => &mut ev.metadata,
        StreamResponse::Message(_) => return frame,
    };
    let entry = metadata
        .get_or_insert_with(Default::default)
        .entry(RESUME_EXTENSION.to_owned());
    match entry {
        serde_json::map::Entry::Occupied(_) => {}
        serde_json::map::Entry::Vacant(slot) => {
            slot.insert(serde_json::json!({"seq": seq}));
            // The shared JSON is of the untagged event.
            frame.json = sb_store::EventJson::default();
        }
    }
    frame
}

pub async fn get_task(
    state: &AppState,
    scope: &Scope,
    req: &GetTaskRequest,
) -> Result<Task, A2AError> {
    require_id(&req.id, "id")?;
    validate_history_length(req.history_length)?;
    let record = state.tasks.get(scope, &req.id).await?;
    Ok(record
        .task
        .with_history_limit(history_limit(req.history_length)))
}

pub async fn list_tasks(
    state: &AppState,
    scope: &Scope,
    req: &ListTasksRequest,
) -> Result<ListTasksResponse, A2AError> {
    let listing = state.tasks.list(scope, req).await?;
    let limit = history_limit(req.history_length);
    let tasks = listing
        .records
        .into_iter()
        .map(|r| {
            let mut task = r.task.with_history_limit(limit);
            if !req.include_artifacts {
                task.artifacts.clear();
            }
            task
        })
        .collect();
    Ok(ListTasksResponse {
        tasks,
        next_page_token: listing.next_page_token,
        page_size: listing.page_size as i32,
        total_size: listing.total as i32,
    })
}

/// CancelTask. Canceling a canceled task returns it in 1.0 (idempotent, digest §11.7);
/// 0.3 peers (the 0.3 SDKs and TCK) expect TaskNotCancelable.
pub async fn cancel_task(
    state: &AppState,
    scope: &Scope,
    task_id: &str,
    version: Version,
) -> Result<Task, A2AError> {
    require_id(task_id, "id")?;
    if version == Version::V0_3 {
        let current = state.tasks.get(scope, task_id).await?;
        if current.state() == TaskState::Canceled {
            return Err(A2AError::new(
                ErrorKind::TaskNotCancelable,
                format!("task {task_id} is already canceled"),
            )
            .with_task(task_id));
        }
    }
    Ok(state.tasks.cancel(scope, task_id).await?.task)
}

pub async fn create_push_config(
    state: &AppState,
    scope: &Scope,
    config: TaskPushNotificationConfig,
    version: Version,
) -> Result<TaskPushNotificationConfig, A2AError> {
    require_id(&config.task_id, "taskId")?;
    state.push.create(scope, config, version).await
}

pub async fn get_push_config(
    state: &AppState,
    scope: &Scope,
    task_id: &str,
    config_id: Option<&str>,
) -> Result<TaskPushNotificationConfig, A2AError> {
    require_id(task_id, "taskId")?;
    match config_id.filter(|c| !c.is_empty()) {
        Some(id) => state.push.get(scope, task_id, id).await,
        // 0.3 allows asking without a config id: the config named after the task, else
        // the first one (digest §2.3).
        None => {
            let configs = state.push.list(scope, task_id).await?;
            let chosen = configs
                .iter()
                .find(|c| c.id.as_deref() == Some(task_id))
                .or(configs.first());
            chosen.cloned().ok_or_else(|| {
                A2AError::new(
                    ErrorKind::TaskNotFound,
                    format!("task {task_id} has no push config"),
                )
                .with_task(task_id)
            })
        }
    }
}

pub async fn list_push_configs(
    state: &AppState,
    scope: &Scope,
    task_id: &str,
) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
    require_id(task_id, "taskId")?;
    state.push.list(scope, task_id).await
}

pub async fn delete_push_config(
    state: &AppState,
    scope: &Scope,
    task_id: &str,
    config_id: &str,
) -> Result<(), A2AError> {
    require_id(task_id, "taskId")?;
    require_id(config_id, "id")?;
    state.push.delete(scope, task_id, config_id).await
}

/// GetExtendedAgentCard. An agent that authenticates its callers declares an extended
/// card and serves it to them (every caller that got this far is authenticated); an
/// agent without authentication declares none (`capabilities.extendedAgentCard: false`),
/// which makes this the spec's UnsupportedOperation (§6.3), or 0.3's own code.
pub fn extended_card(
    state: &AppState,
    scope: &Scope,
    version: Version,
) -> Result<serde_json::Value, A2AError> {
    let authenticated = state.auth.get(&scope.agent).is_some_and(|a| a.is_enabled());
    let entry = state.registry.card(&scope.agent).filter(|_| authenticated);
    let Some(entry) = entry else {
        return Err(match version {
            Version::V1_0 => A2AError::unsupported("this agent has no extended agent card"),
            Version::V0_3 => A2AError::new(
                ErrorKind::ExtendedAgentCardNotConfigured,
                "this agent has no authenticated extended card",
            ),
        });
    };
    let rendered = match version {
        Version::V1_0 => &entry.v1,
        Version::V0_3 => &entry.merged,
    };
    serde_json::from_str(&rendered.json).map_err(|e| A2AError::internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_frame(seq: u64, state: &str) -> Frame {
        let update = serde_json::json!({"statusUpdate": {
            "taskId": "t", "contextId": "c", "status": {"state": state}
        }});
        Frame {
            seq,
            event: Arc::new(serde_json::from_value(update).unwrap()),
            json: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_stream_ends_with_its_closing_frame_and_lets_go_of_what_feeds_it() {
        // Stands for the task's bus subscription: alive as long as the frames behind it.
        let subscription = Arc::new(());
        let held = subscription.clone();
        let frames = futures::stream::iter([
            status_frame(1, "TASK_STATE_WORKING"),
            status_frame(2, "TASK_STATE_COMPLETED"),
            status_frame(3, "TASK_STATE_WORKING"),
        ])
        .map(move |frame| {
            let _held = &held;
            Ok(frame)
        })
        .boxed();
        let mut stream = until_end(frames);
        let first = stream.next().await.unwrap().unwrap();
        assert_eq!(first.seq, 1);
        assert_eq!(Arc::strong_count(&subscription), 2);
        let last = stream.next().await.unwrap().unwrap();
        assert_eq!(last.seq, 2);
        assert_eq!(
            Arc::strong_count(&subscription),
            1,
            "released with the last frame"
        );
        assert!(stream.next().await.is_none());
    }

    #[test]
    fn tagging_a_stream_leaves_the_shared_event_alone() {
        let frame = status_frame(3, "TASK_STATE_WORKING");
        let shared = frame.event.clone();
        let untagged_json = frame.json.clone();
        let tagged = tag_with_seq(frame);
        let StreamResponse::StatusUpdate(ev) = &*tagged.event else {
            panic!("still a status update");
        };
        let marker = ev.metadata.as_ref().and_then(|m| m.get(RESUME_EXTENSION));
        assert_eq!(marker, Some(&serde_json::json!({"seq": 3})));
        // Every other stream of the task shares `shared`: it must not carry the tag.
        let StreamResponse::StatusUpdate(original) = &*shared else {
            panic!("still a status update");
        };
        assert!(original.metadata.is_none());
        // Nor the JSON made once for all the streams.
        assert!(!untagged_json.render(&shared).contains(RESUME_EXTENSION));
    }
}
