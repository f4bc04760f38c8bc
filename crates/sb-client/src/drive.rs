//! The caller's loop that drives one task to its end (seeds "When Agents Need to Talk"
//! and "I6"): the card is fetched through a [`CardCache`] and checked against what the
//! caller needs before anything is sent; a submission that fails is retried a bounded
//! number of times with a growing delay, the card fetched again each time; the task is
//! then followed ([`Follower`]: by stream when the card streams, else polled), canceled
//! when it goes quiet for the idle timeout or outlives its budget; an input request is
//! answered through the caller's resolver; and whatever the task ends in comes back as
//! an [`Outcome`].

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sb_protocol::card::{AgentCard, RESUME_EXTENSION};
use sb_protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use sb_protocol::{A2AError, Message, Role, SendMessageResponse, StreamResponse, Task, TaskState};
use sb_store::backoff::Backoff;

use crate::Credentials;
use crate::discovery::{CardCache, CardError, Discovered};
use crate::follow::{FollowError, FollowSettings, Follower};
use crate::interface::{Preferences, choose};
use crate::transport::{CallError, Transport, connect};
use crate::validate::{Required, meets};

/// The longest pause between two submission attempts, however many retries are allowed.
const RETRY_DELAY_MAX: Duration = Duration::from_secs(30);

/// How a [`Driver`] submits and follows a task.
#[derive(Clone, Debug)]
pub struct DriveSettings {
    /// What the agent's card must offer; checked before the first submission.
    pub required: Required,
    /// The output media types the caller can take: when any are named, the card must
    /// produce one of them, and they are sent as the message's `acceptedOutputModes`.
    pub output_modes: Vec<String>,
    /// Which of the card's interfaces to call.
    pub preferences: Preferences,
    /// Retries of a failed submission (so `retries + 1` attempts in all).
    pub retries: u32,
    /// The wait before the first retry; it doubles before each next one (up to 30 s),
    /// each stretched by a random share of itself (the workspace's one backoff).
    pub retry_delay: Duration,
    /// How long a fetched card is trusted.
    pub card_ttl: Duration,
    /// No news of the task for this long: it is canceled.
    pub idle_timeout: Duration,
    /// A task still running this long after its first submission is canceled.
    pub budget: Duration,
    /// How long one call may take.
    pub call_timeout: Duration,
    /// Follow by stream when the card streams; `false` always polls.
    pub streaming: bool,
}

impl Default for DriveSettings {
    fn default() -> Self {
        DriveSettings {
            required: Required::default(),
            output_modes: Vec::new(),
            preferences: Preferences::default(),
            retries: 3,
            retry_delay: Duration::from_millis(500),
            card_ttl: Duration::from_secs(5 * 60),
            idle_timeout: Duration::from_secs(120),
            budget: Duration::from_secs(30 * 60),
            call_timeout: Duration::from_secs(30),
            streaming: true,
        }
    }
}

/// How a driven task ended (or where it stopped to wait for the caller).
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The task in a terminal state, auth-required, or input-required when the resolver
    /// gave no answer.
    Task(Task),
    /// The agent answered the first message with a message and made no task.
    Message(Message),
}

impl Outcome {
    /// The task's state; `None` for a message-only reply.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            Outcome::Task(task) => Some(task.status.state),
            Outcome::Message(_) => None,
        }
    }
}

/// What the resolver sends back to an input request: text, or a whole message (its
/// task and context ids are set to the task's).
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    Text(String),
    Message(Message),
}

impl From<&str> for Answer {
    fn from(text: &str) -> Self {
        Answer::Text(text.to_owned())
    }
}

impl From<String> for Answer {
    fn from(text: String) -> Self {
        Answer::Text(text)
    }
}

impl From<Message> for Answer {
    fn from(message: Message) -> Self {
        Answer::Message(message)
    }
}

/// A user message with one text part and a fresh id.
pub fn user_text(text: impl Into<String>) -> Message {
    Message {
        role: Role::User,
        ..Message::agent_text(text)
    }
}

/// Whether a task given up on was canceled at the agent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Cancellation {
    #[error("it was canceled")]
    Canceled,
    #[error("canceling it failed ({0}); it may still run at the agent")]
    NotCanceled(String),
}

/// Why a task could not be driven to an outcome.
#[derive(Clone, Debug, thiserror::Error)]
pub enum DriveError {
    /// Check the URL, or whether the agent is up; nothing was sent.
    #[error("no usable agent card at {url}: {error}")]
    Card { url: String, error: CardError },
    /// Call another agent, or ask for less; nothing was sent.
    #[error("the agent at {url} cannot take this task, so nothing was sent: {missing}")]
    Unsuitable { url: String, missing: String },
    /// Widen the preferences, or call another agent; nothing was sent.
    #[error("the card at {url} names no interface this client can call: {reason}")]
    NoInterface { url: String, reason: String },
    /// The request itself is wrong for the agent: change it, do not retry it.
    #[error("the agent at {url} refused the message, and a retry will not help: {error}")]
    Refused { url: String, error: A2AError },
    /// The agent is down or overloaded: try again later.
    #[error("the agent at {url} did not take the message in {attempts} attempts; last: {last}")]
    Unavailable {
        url: String,
        attempts: u32,
        last: String,
    },
    #[error("task {task_id} sent no news for {}s and was given up: {cancel}", idle.as_secs_f32())]
    Stalled {
        task_id: String,
        idle: Duration,
        cancel: Cancellation,
    },
    #[error("task {task_id} ran over its budget of {}s and was given up: {cancel}", budget.as_secs_f32())]
    OverBudget {
        task_id: String,
        budget: Duration,
        cancel: Cancellation,
    },
    /// The agent no longer knows the task: read it, or submit again.
    #[error("task {task_id} can no longer be followed: {error}")]
    Lost { task_id: String, error: CallError },
}

/// A card checked for this caller, and the transport its chosen interface gives.
#[derive(Clone, Debug)]
struct Connection {
    card: Arc<Discovered>,
    transport: Arc<dyn Transport>,
}

/// Drives tasks at one agent for one caller.
#[derive(Debug)]
pub struct Driver {
    http: reqwest::Client,
    url: String,
    credentials: Credentials,
    settings: DriveSettings,
    cards: Arc<CardCache>,
    /// The transport of the card last checked, so a cached card is not checked again.
    connection: Mutex<Option<Connection>>,
}

impl Driver {
    /// A driver for the agent at `url` (a base or card URL), with its own card cache.
    pub fn new(
        http: reqwest::Client,
        url: impl Into<String>,
        credentials: Credentials,
        settings: DriveSettings,
    ) -> Driver {
        let cards = Arc::new(CardCache::new(http.clone(), settings.card_ttl, None));
        Driver {
            http,
            url: url.into(),
            credentials,
            settings,
            cards,
            connection: Mutex::new(None),
        }
    }

    /// Shares `cards` (e.g. one verifying signatures) instead of a cache of its own.
    pub fn with_cache(mut self, cards: Arc<CardCache>) -> Driver {
        self.cards = cards;
        self
    }

    /// Sends `message` and drives the task it starts to its end. `resolve` is called with
    /// the task and its question whenever the agent asks for input; `None` stops there and
    /// returns the waiting task.
    pub async fn run<F, Fut>(&self, message: Message, mut resolve: F) -> Result<Outcome, DriveError>
    where
        F: FnMut(Task, Message) -> Fut,
        Fut: Future<Output = Option<Answer>>,
    {
        let deadline = Instant::now() + self.settings.budget;
        let (mut connection, reply) = self.submit(message).await?;
        let mut task = match reply {
            SendMessageResponse::Task(task) => task,
            SendMessageResponse::Message(reply) => return Ok(Outcome::Message(reply)),
        };
        // The question last answered: a read that still shows it is older than the answer.
        let mut answered = None;
        loop {
            if !settled(&task, answered.as_ref()) {
                self.follow(&connection, &mut task, answered.as_ref(), deadline)
                    .await?;
            }
            // Streamed events may not carry all of it: the task as the agent has it now.
            let task_now = self.reread(&connection, task).await;
            if task_now.status.state != TaskState::InputRequired {
                return Ok(Outcome::Task(task_now));
            }
            let question = question_of(&task_now);
            let left = deadline.saturating_duration_since(Instant::now());
            let answer = match tokio::time::timeout(left, resolve(task_now.clone(), question)).await
            {
                Ok(Some(answer)) => answer,
                Ok(None) => return Ok(Outcome::Task(task_now)),
                Err(_) => return Err(self.over_budget(&connection, &task_now.id).await),
            };
            answered = Some(question_key(&task_now));
            let (again, reply) = self.submit(follow_up(answer, &task_now)).await?;
            connection = again;
            task = match reply {
                SendMessageResponse::Task(task) => task,
                // Not what a follow-up gets; the task is followed all the same.
                SendMessageResponse::Message(_) => task_now,
            };
        }
    }

    /// Follows the task until it is [`settled`].
    async fn follow(
        &self,
        connection: &Connection,
        task: &mut Task,
        answered: Option<&QuestionKey>,
        deadline: Instant,
    ) -> Result<(), DriveError> {
        let card = &connection.card.card;
        let extensions = &card.capabilities.extensions;
        let settings = FollowSettings {
            idle_timeout: self.settings.idle_timeout,
            streaming: self.settings.streaming && card.capabilities.streaming == Some(true),
            resumable: extensions.iter().any(|e| e.uri == RESUME_EXTENSION),
            call_timeout: self.settings.call_timeout,
        };
        // A new follower per round: its idle clock and poll schedule start afresh after
        // an answer, however long the resolver took.
        let mut follower = Follower::new(&*connection.transport, &task.id, settings);
        let task_id = task.id.clone();
        while !settled(task, answered) {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, follower.next()).await {
                Ok(Ok(event)) => apply(task, event),
                Ok(Err(FollowError::Stalled(idle))) => {
                    let cancel = self.cancel(connection, &task_id).await;
                    return Err(DriveError::Stalled {
                        task_id,
                        idle,
                        cancel,
                    });
                }
                Ok(Err(FollowError::Lost(error))) => {
                    return Err(DriveError::Lost { task_id, error });
                }
                Err(_) => return Err(self.over_budget(connection, &task_id).await),
            }
        }
        Ok(())
    }

    /// Sends `message` (or a follow-up), retrying what a retry may help, the card fetched
    /// again after every failure (the agent may have moved or changed).
    async fn submit(
        &self,
        mut message: Message,
    ) -> Result<(Connection, SendMessageResponse), DriveError> {
        // What a server requires of any message, filled in rather than refused.
        if message.message_id.is_empty() {
            message.message_id = sb_protocol::new_id();
        }
        if message.role == Role::Unspecified {
            message.role = Role::User;
        }
        let request = SendMessageRequest {
            tenant: None,
            message,
            // The task is followed, not waited on in one long call.
            configuration: Some(SendMessageConfiguration {
                accepted_output_modes: self.settings.output_modes.clone(),
                return_immediately: true,
                ..SendMessageConfiguration::default()
            }),
            metadata: None,
        };
        // Every attempt sends the same message, id and all: a server that did take an
        // attempt whose answer was lost can tell the retry for what it is.
        let attempts = self.settings.retries.saturating_add(1);
        let mut delays = Backoff::doubling(self.settings.retry_delay, RETRY_DELAY_MAX);
        let mut attempt = 1;
        loop {
            let failure = match self.connect().await {
                Err(Attempt::Final(error)) => return Err(error),
                Err(Attempt::Again(reason)) => reason,
                Ok(connection) => {
                    let sent = connection.transport.send(&request);
                    match tokio::time::timeout(self.settings.call_timeout, sent).await {
                        Ok(Ok(reply)) => return Ok((connection, reply)),
                        Ok(Err(CallError::A2A(error))) if !error.kind.default_retryable() => {
                            self.cards.forget(&self.url);
                            let url = self.url.clone();
                            return Err(DriveError::Refused { url, error });
                        }
                        Ok(Err(error)) => error.to_string(),
                        Err(_) => format!("no answer within {:?}", self.settings.call_timeout),
                    }
                }
            };
            self.cards.forget(&self.url);
            tracing::debug!(url = %self.url, attempt, %failure, "a submission failed");
            if attempt >= attempts {
                let (url, last) = (self.url.clone(), failure);
                return Err(DriveError::Unavailable {
                    url,
                    attempts,
                    last,
                });
            }
            let delay = delays.next_delay().unwrap_or(RETRY_DELAY_MAX);
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    /// The agent's card (cached) checked for this caller, and a transport to it.
    async fn connect(&self) -> Result<Connection, Attempt> {
        let url = self.url.clone();
        let card = match self.cards.get(&url).await {
            Ok(card) => card,
            Err(error @ CardError::Unreachable { .. }) => {
                return Err(Attempt::Again(error.to_string()));
            }
            Err(error) => return Err(Attempt::Final(DriveError::Card { url, error })),
        };
        if let Ok(last) = self.connection.lock()
            && let Some(last) = last.as_ref()
            && Arc::ptr_eq(&last.card, &card)
        {
            return Ok(last.clone());
        }
        if let Err(missing) = offers(&card.card, &self.settings) {
            return Err(Attempt::Final(DriveError::Unsuitable { url, missing }));
        }
        let no_interface = |reason: String| Attempt::Final(DriveError::NoInterface { url, reason });
        let Some(chosen) = choose(&card.card, &self.settings.preferences) else {
            return Err(no_interface(
                "none of the preferred versions and bindings".into(),
            ));
        };
        let placement = self.credentials.placed_for(Some(&card.card));
        let transport = connect(self.http.clone(), &chosen, placement)
            .map_err(|error| no_interface(error.to_string()))?;
        let connection = Connection { card, transport };
        if let Ok(mut last) = self.connection.lock() {
            *last = Some(connection.clone());
        }
        Ok(connection)
    }

    /// The task as the agent has it now; as known already when it cannot be read.
    async fn reread(&self, connection: &Connection, task: Task) -> Task {
        let read = connection.transport.get_task(&task.id, None);
        match tokio::time::timeout(self.settings.call_timeout, read).await {
            Ok(Ok(read)) => read,
            _ => task,
        }
    }

    async fn cancel(&self, connection: &Connection, task_id: &str) -> Cancellation {
        let canceled = connection.transport.cancel_task(task_id);
        match tokio::time::timeout(self.settings.call_timeout, canceled).await {
            Ok(Ok(_)) => Cancellation::Canceled,
            Ok(Err(error)) => Cancellation::NotCanceled(error.to_string()),
            Err(_) => Cancellation::NotCanceled("no answer in time".into()),
        }
    }

    async fn over_budget(&self, connection: &Connection, task_id: &str) -> DriveError {
        DriveError::OverBudget {
            task_id: task_id.to_owned(),
            budget: self.settings.budget,
            cancel: self.cancel(connection, task_id).await,
        }
    }
}

/// One attempt's failure: worth another attempt, or not.
enum Attempt {
    Again(String),
    Final(DriveError),
}

/// What the card lacks of what the caller needs, if anything.
fn offers(card: &AgentCard, settings: &DriveSettings) -> Result<(), String> {
    let mut missing: Vec<String> = meets(card, &settings.required).err().into_iter().collect();
    let wanted = &settings.output_modes;
    let mut produced = card
        .default_output_modes
        .iter()
        .chain(card.skills.iter().flat_map(|s| &s.output_modes));
    if !wanted.is_empty() && !produced.any(|m| wanted.iter().any(|w| w.eq_ignore_ascii_case(m))) {
        missing.push(format!(
            "the agent produces none of the output modes {wanted:?}"
        ));
    }
    match missing.is_empty() {
        true => Ok(()),
        false => Err(missing.join("; ")),
    }
}

/// Whether following can stop: the task ended, waits for auth (out of band: returned,
/// not waited on), or asks a question other than the one `answered`.
fn settled(task: &Task, answered: Option<&QuestionKey>) -> bool {
    let state = task.status.state;
    let asks = state == TaskState::InputRequired && answered != Some(&question_key(task));
    state.is_terminal() || state == TaskState::AuthRequired || asks
}

/// What tells one input request from the next: its message and when it was made.
type QuestionKey = (Option<String>, Option<String>);

fn question_key(task: &Task) -> QuestionKey {
    let status = &task.status;
    let message = status.message.as_ref().map(|m| m.message_id.clone());
    (message, status.timestamp.map(|t| t.to_rfc3339()))
}

/// The question of a task that waits for input: its status message, or an empty one
/// from an agent that asks without saying what.
fn question_of(task: &Task) -> Message {
    let asked = task.status.message.clone();
    asked.unwrap_or_else(|| Message::agent_text(""))
}

/// The message that answers `task`'s question, on its task and context.
fn follow_up(answer: Answer, task: &Task) -> Message {
    let mut message = match answer {
        Answer::Text(text) => user_text(text),
        Answer::Message(message) => message,
    };
    message.task_id = Some(task.id.clone());
    message.context_id = Some(task.context_id.clone());
    message
}

/// The task as an event leaves it.
fn apply(task: &mut Task, event: StreamResponse) {
    match event {
        StreamResponse::Task(read) => *task = read,
        StreamResponse::StatusUpdate(update) => task.status = update.status,
        StreamResponse::ArtifactUpdate(update) => {
            let artifact = update.artifact;
            let known = task
                .artifacts
                .iter_mut()
                .find(|a| a.artifact_id == artifact.artifact_id);
            match known {
                Some(known) if update.append => known.parts.extend(artifact.parts),
                Some(known) => *known = artifact,
                None => task.artifacts.push(artifact),
            }
        }
        StreamResponse::Message(message) => task.history.push(message),
    }
}
