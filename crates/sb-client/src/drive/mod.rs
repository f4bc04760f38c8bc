//! The caller's loop that drives one task to its end (seeds "When Agents Need to Talk"
//! and "I6"): the card is fetched through a [`CardCache`] and checked against what the
//! caller needs before anything is sent; a submission that fails is retried a bounded
//! number of times with a growing delay, the card fetched again each time; the task is
//! then followed ([`Follower`]: by stream when the card streams, else polled), canceled
//! when it goes quiet for the idle timeout or outlives its budget; an input request is
//! answered through the caller's resolver; and whatever the task ends in comes back as
//! an [`Outcome`].

mod bookkeeping;
mod outcome;
mod settings;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sb_protocol::card::RESUME_EXTENSION;
use sb_protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use sb_protocol::{Message, Role, SendMessageResponse, Task, TaskState};
use sb_store::backoff::Backoff;

use crate::Credentials;
use crate::discovery::{CardCache, CardError, Discovered};
use crate::follow::{FollowError, FollowSettings, Follower};
use crate::interface::choose;
use crate::transport::{CallError, Transport, connect};

use bookkeeping::{QuestionKey, apply, follow_up, question_key, question_of, settled};
use settings::offers;

pub use outcome::{Answer, Cancellation, DriveError, Outcome, user_text};
pub use settings::DriveSettings;

/// The longest pause between two submission attempts, however many retries are allowed.
const RETRY_DELAY_MAX: Duration = Duration::from_secs(30);

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
        follower.finish();
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
