//! The agent trait and the handles it is given.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::{Either, ready};
use sb_protocol::card::AgentSkill;
use sb_protocol::{A2AError, Artifact, Message, Metadata, Part, Role, Task, TaskState};
use sb_store::TaskRecord;
use sb_tasks::{TaskService, TaskUpdate};
use tokio::sync::oneshot;

use crate::outbox::Outbox;
use tokio_util::sync::CancellationToken;

/// What the card says about an agent.
#[derive(Clone, Debug)]
pub struct AgentDescriptor {
    pub description: String,
    pub skills: Vec<AgentSkill>,
    pub input_modes: Vec<String>,
    pub output_modes: Vec<String>,
}

/// An agent. `execute` runs once per user turn; it reports through `reporter` and should
/// return soon after `ctx.cancel` fires.
#[async_trait]
pub trait Agent: Send + Sync + std::fmt::Debug + 'static {
    fn describe(&self) -> AgentDescriptor;

    /// Answers a first message directly with a message, without creating a task (spec
    /// §3.1.1 allows either). Called before any task exists; `None` means "make a task".
    fn direct_reply(&self, _message: &Message) -> Option<Message> {
        None
    }

    /// What a first message opens, decided before any task exists: by default a task,
    /// or the [`Agent::direct_reply`]. An agent that only learns the answer's kind by
    /// doing work (the bridge asks its upstream) does that work here, the way the
    /// caller takes the answer.
    async fn open(&self, first: FirstMessage<'_>) -> Result<Opening, A2AError> {
        Ok(match self.direct_reply(first.message) {
            Some(reply) => Opening::Reply(reply),
            None => Opening::Task(None),
        })
    }

    /// The task [`Agent::open`] added `metadata` for was not made after all (a limit,
    /// the store): undo what the open started for it. By default nothing.
    async fn abandon(&self, _metadata: &Metadata) {}

    async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError>;
}

/// A conversation's first message, as [`Agent::open`] sees it.
#[derive(Clone, Copy, Debug)]
pub struct FirstMessage<'a> {
    /// The message; its `contextId` is set (the caller's, or the one its task will get).
    pub message: &'a Message,
    /// Whose conversation it is: the principal, empty without authentication.
    pub owner: &'a str,
    pub caller: Caller,
}

/// How the caller of a conversation's first message takes the answer, for an agent
/// that passes the message on ([`Agent::open`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A blocking send: the caller waits, at most `patience`, for the task to end or
    /// ask for something, and learns of it only then.
    Waits { patience: std::time::Duration },
    /// A non-blocking send or a stream: the caller follows the task as it goes.
    Follows,
}

/// What a conversation's first message opens ([`Agent::open`]).
#[derive(Debug)]
pub enum Opening {
    /// A task, its turn run next; with metadata the agent adds to the task's (merged over
    /// the caller's), such as a link to work it already started for this message.
    Task(Option<Metadata>),
    /// This message is the answer; no task is made.
    Reply(Message),
}

/// The task as an agent's report left it, once durable. Shared, not copied: the store's
/// cache may hold the same record, and most agents never look at it (reading it is a
/// deref; [`StoredTask::into_task`] takes a copy only when others share it).
#[derive(Clone, Debug)]
pub struct StoredTask(Arc<TaskRecord>);

impl StoredTask {
    pub(crate) fn new(record: Arc<TaskRecord>) -> StoredTask {
        StoredTask(record)
    }

    /// The task itself, copied only when shared.
    pub fn into_task(self) -> Task {
        Arc::unwrap_or_clone(self.0).task
    }
}

impl std::ops::Deref for StoredTask {
    type Target = Task;

    fn deref(&self) -> &Task {
        &self.0.task
    }
}

/// Why a run ended without a final state of its own making.
#[derive(Debug)]
pub struct AgentError(pub String);

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<A2AError> for AgentError {
    fn from(err: A2AError) -> AgentError {
        AgentError(err.message)
    }
}

/// What an agent sees of its task for one turn.
///
/// The task and the message are boxed: an agent's future holds its context (with
/// `async_trait`, twice), for as long as the turn runs, and a held turn should cost
/// pointers there, not ~0.6 KB.
#[derive(Clone, Debug)]
pub struct TaskContext {
    /// The task as it is now: history holds every user message and earlier agent message.
    pub task: Box<Task>,
    /// The user message that started this turn.
    pub message: Box<Message>,
    /// Fires when the task is canceled (or otherwise finished by someone else).
    pub cancel: CancellationToken,
}

impl TaskContext {
    /// The user messages of the task, oldest first.
    pub fn user_messages(&self) -> impl Iterator<Item = &Message> {
        self.task.history.iter().filter(|m| m.role == Role::User)
    }
}

/// Reports an agent's progress on one task. Every call is one transition of the task
/// state machine; after the task ends (including by cancellation) calls fail.
///
/// Progress (working, artifacts, streamed text) is pipelined: the call returns once the
/// update is queued, and what queues up while one commit is under way goes into the
/// next one (see `crate::outbox`). A call that ends the turn (complete, fail, reject,
/// input or auth required) returns once it and everything before it is durable, with
/// the task as stored. A progress update the task service refuses (the task was
/// canceled meanwhile, say) is reported by the next call.
#[derive(Clone, Debug)]
pub struct Reporter {
    outbox: Arc<Outbox>,
    kept_open: Arc<AtomicBool>,
    /// Set once the agent reported a final or waiting state (the end of its turn).
    ended: Arc<AtomicBool>,
    /// Text streamed so far per artifact id (with its name), for the authoritative full
    /// artifact sent before completion.
    streamed: Arc<parking_lot::Mutex<std::collections::BTreeMap<String, (String, String)>>>,
}

impl Reporter {
    pub fn new(tasks: Arc<dyn TaskService>, task_id: String) -> Reporter {
        Reporter::with_outbox(Arc::new(Outbox::new(tasks, task_id)))
    }

    /// A reporter for a task not stored yet: its first commit creates the task from
    /// `draft` (see [`crate::AgentHost::create_with_first_reports`]); `created` hears how that went.
    pub(crate) fn creating(
        tasks: Arc<dyn TaskService>,
        draft: TaskRecord,
        created: oneshot::Sender<Result<crate::outbox::Created, A2AError>>,
    ) -> Reporter {
        Reporter::with_outbox(Outbox::creating(tasks, draft, created))
    }

    fn with_outbox(outbox: Arc<Outbox>) -> Reporter {
        Reporter {
            outbox,
            kept_open: Arc::new(AtomicBool::new(false)),
            ended: Arc::new(AtomicBool::new(false)),
            streamed: Arc::default(),
        }
    }

    /// Whether the task's creation failed, so there is no task to settle.
    pub(crate) fn never_created(&self) -> bool {
        self.outbox.never_created()
    }

    /// Streams text into an artifact as a delta: only the new text travels (an artifact
    /// update with `append`), never the accumulated text again. On [`Reporter::complete`]
    /// the whole text is sent once more as the authoritative artifact, so a client that
    /// missed deltas still ends with the right result.
    pub async fn stream_text(
        &self,
        artifact_id: &str,
        name: &str,
        delta: &str,
    ) -> Result<(), A2AError> {
        let first = {
            let mut streamed = self.streamed.lock();
            let entry = streamed.entry(artifact_id.to_owned());
            let first = matches!(entry, std::collections::btree_map::Entry::Vacant(_));
            entry
                .or_insert_with(|| (name.to_owned(), String::new()))
                .1
                .push_str(delta);
            first
        };
        self.artifact(text_artifact(artifact_id, name, delta), !first, false)
            .await
    }

    /// Ends this turn but leaves the task working: a later turn (the next user message),
    /// a cancel or a deadline finishes it. Without this, a turn that returns while the
    /// task still runs fails the task, so nothing stays silently stuck.
    pub fn keep_open(&self) {
        self.kept_open.store(true, Ordering::SeqCst);
    }

    pub fn is_kept_open(&self) -> bool {
        self.kept_open.load(Ordering::SeqCst)
    }

    pub fn task_id(&self) -> &str {
        self.outbox.task_id()
    }

    /// Waits until every update reported so far is durable; returns a refusal not yet
    /// reported. The host calls it when a turn returns.
    pub async fn flush(&self) -> Result<(), A2AError> {
        self.outbox.flush().await
    }

    /// A state that ends the turn: waits until it is durable.
    async fn end_turn(
        &self,
        state: TaskState,
        text: Option<String>,
    ) -> Result<StoredTask, A2AError> {
        self.end_turn_with(state, text.map(Message::agent_text))
            .await
    }

    async fn end_turn_with(
        &self,
        state: TaskState,
        message: Option<Message>,
    ) -> Result<StoredTask, A2AError> {
        let update = TaskUpdate::Status {
            state,
            message,
            metadata: None,
        };
        let task = self.outbox.send_and_wait(update).await?;
        self.ended.store(true, Ordering::SeqCst);
        Ok(task)
    }

    /// Whether the agent chose where its task stands after this turn: it ended the turn
    /// with a final or waiting state, or kept the task open on purpose. Failing such a
    /// task would race the client's next message (a resumed task is working again, but
    /// not this turn's).
    pub fn chose_task_state(&self) -> bool {
        self.ended.load(Ordering::SeqCst) || self.is_kept_open()
    }

    /// Working, with an optional progress message (kept on the task as its status).
    ///
    /// Like every report that does not end the turn, the update is queued when this is
    /// called (in order with the others) and committed in the background; awaiting it
    /// waits only while too many updates are queued, and returns a refusal of an
    /// earlier update.
    pub fn working(
        &self,
        progress: Option<String>,
    ) -> impl Future<Output = Result<(), A2AError>> + Send + 'static {
        let message = progress.map(Message::agent_text);
        let update = TaskUpdate::Status {
            state: TaskState::Working,
            message,
            metadata: None,
        };
        self.outbox.send(update).map(|sent| sent.map(drop))
    }

    /// Adds an artifact chunk: `append` extends the artifact with the same id. Queued
    /// when called, as [`Reporter::working`].
    pub fn artifact(
        &self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> impl Future<Output = Result<(), A2AError>> + Send + 'static {
        let sent = match sb_tasks::lifecycle::check_artifact(&artifact, self.task_id()) {
            Err(invalid) => Either::Left(ready(Err(invalid))),
            Ok(()) => Either::Right(self.outbox.send(TaskUpdate::Artifact {
                artifact,
                append,
                last_chunk,
            })),
        };
        sent.map(|sent| sent.map(drop))
    }

    /// Moves the task to `state` with `message` as it is (parts, id and metadata kept):
    /// what a bridge mirrors from an upstream agent. A final or waiting state ends the
    /// turn and returns the task once durable; working is queued like
    /// [`Reporter::working`] (and returns `None`).
    pub async fn status(
        &self,
        state: TaskState,
        message: Option<Message>,
    ) -> Result<Option<StoredTask>, A2AError> {
        if state.is_terminal() || state.is_interrupted() {
            return self.end_turn_with(state, message).await.map(Some);
        }
        let update = TaskUpdate::Status {
            state,
            message,
            metadata: None,
        };
        self.outbox.send(update).await.map(|_| None)
    }

    /// Merges entries into the task's metadata with the next change of status this
    /// turn reports (working, a question, an end), as that change's event metadata:
    /// where a runner keeps what it must find again after a restart. Entries given
    /// twice before then keep the later value; a turn that reports no further status
    /// change stores none of them.
    pub fn annotate(&self, metadata: Metadata) {
        self.outbox.annotate(metadata);
    }

    /// Asks the user a question; the task waits in input-required for the answer.
    pub async fn input_required(&self, question: String) -> Result<StoredTask, A2AError> {
        self.end_turn(TaskState::InputRequired, Some(question))
            .await
    }

    /// Says what authorization is needed; the task waits in auth-required.
    pub async fn auth_required(&self, explanation: String) -> Result<StoredTask, A2AError> {
        self.end_turn(TaskState::AuthRequired, Some(explanation))
            .await
    }

    /// Completes the task; streamed artifacts first get their authoritative full text
    /// (`append: false`, `lastChunk: true`).
    pub async fn complete(&self, message: Option<String>) -> Result<StoredTask, A2AError> {
        let streamed = std::mem::take(&mut *self.streamed.lock());
        for (artifact_id, (name, text)) in streamed {
            self.artifact(text_artifact(&artifact_id, &name, text), false, true)
                .await?;
        }
        self.end_turn(TaskState::Completed, message).await
    }

    pub async fn fail(&self, reason: String) -> Result<StoredTask, A2AError> {
        self.end_turn(TaskState::Failed, Some(reason)).await
    }

    pub async fn reject(&self, reason: String) -> Result<StoredTask, A2AError> {
        self.end_turn(TaskState::Rejected, Some(reason)).await
    }
}

/// A one-part text artifact.
pub fn text_artifact(id: &str, name: &str, text: impl Into<String>) -> Artifact {
    Artifact {
        artifact_id: id.to_owned(),
        name: Some(name.to_owned()),
        description: None,
        parts: vec![Part::text(text)],
        metadata: None,
        extensions: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sb_protocol::StreamResponse;
    use sb_store::{LocalBus, MemoryStore, StoredEvent};
    use sb_tasks::{LocalTaskService, NewTask, Scope};

    #[tokio::test]
    async fn streamed_text_is_deltas_then_one_authoritative_artifact() {
        let store = Arc::new(MemoryStore::new());
        let tasks = Arc::new(LocalTaskService::new(store, Arc::new(LocalBus::new())));
        let scope = Scope {
            agent: "a".into(),
            owner: String::new(),
        };
        let message = Message {
            role: Role::User,
            ..Message::agent_text("go")
        };
        let id = tasks
            .create(NewTask {
                scope: scope.clone(),
                message,
                metadata: None,
            })
            .await
            .unwrap()
            .task
            .id;
        let reporter = Reporter::new(tasks.clone(), id.clone());
        for delta in ["Hel", "lo, ", "world"] {
            reporter.stream_text("out", "out", delta).await.unwrap();
        }
        let done = reporter.complete(None).await.unwrap();
        assert_eq!(done.artifacts.len(), 1);
        assert_eq!(done.artifacts[0].parts.len(), 1);
        assert_eq!(done.artifacts[0].parts[0].as_text(), Some("Hello, world"));

        let events: Vec<StoredEvent> = tasks.events_after(&id, 1, 10).await.unwrap();
        let updates: Vec<(String, bool, bool)> = events
            .iter()
            .filter_map(|e| match &*e.event {
                StreamResponse::ArtifactUpdate(u) => Some((
                    u.artifact.parts[0].as_text().unwrap_or_default().to_owned(),
                    u.append,
                    u.last_chunk,
                )),
                _ => None,
            })
            .collect();
        assert_eq!(
            updates,
            [
                ("Hel".to_owned(), false, false),
                ("lo, ".to_owned(), true, false),
                ("world".to_owned(), true, false),
                ("Hello, world".to_owned(), false, true),
            ]
        );
        assert_eq!(
            events.last().unwrap().event.state(),
            Some(TaskState::Completed),
            "the full artifact comes before the final status"
        );
    }
}
