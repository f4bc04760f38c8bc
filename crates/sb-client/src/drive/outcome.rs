//! What driving a task comes to: the [`Outcome`] it ends in, the [`Answer`] a resolver
//! gives an input request, and the [`DriveError`] (with its [`Cancellation`]) when the
//! task could not be driven to an outcome.

use std::time::Duration;

use sb_protocol::{A2AError, Message, Role, Task, TaskState};

use crate::discovery::CardError;
use crate::transport::CallError;

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
