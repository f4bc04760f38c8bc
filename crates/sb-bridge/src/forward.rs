//! Sending a message upstream: the request as it goes, its first answer (the reply, or
//! the stream's first event and the rest of the stream), why a refusal was one, and the
//! answers a conversation's first send got before its task existed ([`Opened`]), kept
//! for the turn that follows them in this process.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::StreamExt;
use sb_client::{CallError, EventStream};
use sb_protocol::delegation::next_hop;
use sb_protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use sb_protocol::{Message, SendMessageResponse, StreamResponse};

use crate::link::Link;
use crate::upstream::Connection;

/// The upstream's first answer to a message.
pub struct Answer {
    pub event: StreamResponse,
    /// The rest of the stream, when the message was sent streaming.
    pub stream: Option<EventStream>,
}

impl std::fmt::Debug for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answer")
            .field("event", &self.event)
            .field("streaming", &self.stream.is_some())
            .finish()
    }
}

/// A plain send's answer: all of it, no stream.
impl From<SendMessageResponse> for Answer {
    fn from(reply: SendMessageResponse) -> Answer {
        let event = match reply {
            SendMessageResponse::Task(task) => StreamResponse::Task(task),
            SendMessageResponse::Message(message) => StreamResponse::Message(message),
        };
        Answer {
            event,
            stream: None,
        }
    }
}

impl Answer {
    /// The upstream task and context the answer is about; `None` for a message-only
    /// reply (the upstream made no task).
    pub fn upstream_ids(&self) -> Option<(String, String)> {
        match &self.event {
            StreamResponse::Message(_) => None,
            StreamResponse::Task(t) => Some((t.id.clone(), t.context_id.clone())),
            StreamResponse::StatusUpdate(u) => Some((u.task_id.clone(), u.context_id.clone())),
            StreamResponse::ArtifactUpdate(u) => Some((u.task_id.clone(), u.context_id.clone())),
        }
    }
}

/// Sends `message` upstream as part of the task `link` describes (a new upstream task
/// when it has none yet), streaming when the upstream streams; every call within
/// `timeout`.
pub async fn send(
    connection: &Connection,
    message: &Message,
    link: &Link,
    timeout: Duration,
) -> Result<Answer, CallError> {
    let request = request(message, link);
    let streams = connection.card.found.card.capabilities.streaming == Some(true);
    let transport = &connection.transport;
    let late = || CallError::Transport(format!("no answer within {}s", timeout.as_secs()));
    if !streams {
        let reply = tokio::time::timeout(timeout, transport.send(&request))
            .await
            .map_err(|_| late())??;
        return Ok(reply.into());
    }
    let mut stream = tokio::time::timeout(timeout, transport.send_streaming(&request))
        .await
        .map_err(|_| late())??;
    match tokio::time::timeout(timeout, stream.next()).await {
        Ok(Some(Ok(item))) => Ok(Answer {
            event: item.event,
            stream: Some(stream),
        }),
        Ok(Some(Err(error))) => Err(error),
        Ok(None) => Err(CallError::Transport(
            "the stream ended before any event".into(),
        )),
        Err(_) => Err(late()),
    }
}

/// Sends a conversation's first message upstream as a blocking send, for a caller who
/// waits for the end anyway: the upstream answers once its task has ended or asks for
/// something, at most `patience` later, and the answer is that task (or a message).
/// One plain request where a stream would cost the upstream more (a2a-sdk spends about
/// 1.4 times the CPU of a blocking send on a streamed one), and nothing is lost: the
/// Switchboard task, made from the answer, mirrors the messages in its history, its
/// artifacts and its state.
pub async fn send_blocking(
    connection: &Connection,
    message: &Message,
    link: &Link,
    patience: Duration,
) -> Result<Answer, CallError> {
    let mut request = request(message, link);
    if let Some(configuration) = &mut request.configuration {
        configuration.return_immediately = false;
    }
    let reply = tokio::time::timeout(patience, connection.transport.send(&request))
        .await
        .map_err(|_| {
            CallError::Transport(format!(
                "no answer to the blocking call within {}s (send without blocking, or stream, to follow a task that long)",
                patience.as_secs()
            ))
        })??;
    Ok(reply.into())
}

/// The message as it goes upstream: same id and content, the upstream's task and
/// context ids, this task's references dropped (they mean nothing there), its
/// delegation depth one more. Sent not to wait: the answer is followed, not waited for.
fn request(message: &Message, link: &Link) -> SendMessageRequest {
    let mut upstream = message.clone();
    upstream.task_id = link.upstream_task_id.clone();
    upstream.context_id = link.upstream_context_id.clone();
    upstream.reference_task_ids = Vec::new();
    // One hop more: a chain of agents calling agents through Switchboards is bounded.
    upstream.metadata = Some(next_hop(upstream.metadata.take()));
    SendMessageRequest {
        tenant: None,
        message: upstream,
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

/// Why the upstream did not take a message (it refused it, or its answer never came),
/// and whether trying again can help.
pub fn refusal(error: &CallError) -> String {
    match error {
        CallError::A2A(e) => {
            let retry = match e.kind.default_retryable() {
                true => "a retry may help",
                false => "a retry will not help",
            };
            format!("the upstream agent refused the message: {error} ({retry})")
        }
        CallError::Transport(_) => {
            format!("the upstream agent did not answer the message: {error} (a retry may help)")
        }
    }
}

/// Why the upstream cannot be called at all (its card unreachable or refused).
pub fn unusable(reason: &str) -> String {
    format!("the upstream agent cannot be used: {reason} (a retry may help once it is back)")
}

/// First answers got before their task existed (a conversation's first message is sent
/// upstream to learn whether the answer is a task or a message), by upstream task id,
/// until the turn that follows the task takes them. Where turns run in another process
/// nothing is kept: that turn follows the upstream task afresh.
#[derive(Debug)]
pub struct Opened {
    keeps: bool,
    /// Answers never taken (the task's creation failed after the send) go after this.
    max_age: Duration,
    answers: Mutex<HashMap<String, (Instant, Answer)>>,
}

impl Opened {
    pub fn new(keeps: bool, max_age: Duration) -> Opened {
        Opened {
            keeps,
            max_age,
            answers: Mutex::new(HashMap::new()),
        }
    }

    pub fn keep(&self, upstream_task_id: &str, answer: Answer) {
        if !self.keeps {
            return;
        }
        let Ok(mut answers) = self.answers.lock() else {
            return;
        };
        answers.retain(|_, (at, _)| at.elapsed() < self.max_age);
        answers.insert(upstream_task_id.to_owned(), (Instant::now(), answer));
    }

    pub fn take(&self, upstream_task_id: &str) -> Option<Answer> {
        let mut answers = self.answers.lock().ok()?;
        answers.remove(upstream_task_id).map(|(_, answer)| answer)
    }
}
