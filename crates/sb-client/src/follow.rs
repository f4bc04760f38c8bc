//! Following a task someone else runs until it ends or waits: by its stream while the
//! server streams (subscribing again after a break, from the last event id where the
//! server resumes), else by reading it on the caller's schedule ([`PollSchedule`]). A
//! task with no news for the idle timeout is stalled (seed "I6": the caller then
//! cancels it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use sb_protocol::{ErrorKind, StreamResponse, Task, TaskState};
use tokio::sync::Notify;

use crate::poll::PollSchedule;
use crate::transport::{CallError, EventStream, Transport};

/// Subscriptions that may fail in a row before the follower falls back to polling.
const SUBSCRIBE_ATTEMPTS: u32 = 3;

/// How long a finished follower's stream may take to end by itself.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// How a task is followed.
#[derive(Clone, Debug)]
pub struct FollowSettings {
    /// No news for this long: the task is stalled.
    pub idle_timeout: Duration,
    /// The server streams (its card says so): subscribe rather than poll.
    pub streaming: bool,
    /// The server resumes a stream after `Last-Event-ID` (Switchboard's extension).
    pub resumable: bool,
    /// How long one call may take.
    pub call_timeout: Duration,
}

/// Why following stopped.
#[derive(Clone, Debug, thiserror::Error)]
pub enum FollowError {
    #[error("no news of the task for {0:?}")]
    Stalled(Duration),
    /// The server no longer knows the task, or refuses to say.
    #[error("the task cannot be followed: {0}")]
    Lost(CallError),
}

/// One task followed.
pub struct Follower<'a> {
    transport: &'a dyn Transport,
    task_id: String,
    settings: FollowSettings,
    stream: Option<EventStream>,
    /// The current stream has given an event (a stream that ends or breaks before
    /// giving one counts as a failed subscription).
    stream_delivered: bool,
    last_event_id: Option<String>,
    subscribe_failures: u32,
    schedule: PollSchedule,
    /// The next read waits for the schedule (not right after a stream broke).
    wait_before_read: bool,
    last_news: Instant,
    last_seen: Option<Fingerprint>,
    /// Notified when the server pushes news of the task: read it now, not on schedule.
    wake: Option<Arc<Notify>>,
}

/// What tells two reads of a task apart.
#[derive(Clone, Debug, PartialEq)]
struct Fingerprint {
    state: TaskState,
    status_at: Option<String>,
    status_message: Option<String>,
    artifacts: Vec<(String, usize)>,
    history: usize,
}

impl Fingerprint {
    fn of(task: &Task) -> Fingerprint {
        Fingerprint {
            state: task.status.state,
            status_at: task.status.timestamp.map(|t| t.to_rfc3339()),
            status_message: task.status.message.as_ref().map(|m| m.message_id.clone()),
            artifacts: task
                .artifacts
                .iter()
                .map(|a| (a.artifact_id.clone(), a.parts.len()))
                .collect(),
            history: task.history.len(),
        }
    }
}

impl std::fmt::Debug for Follower<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follower")
            .field("task_id", &self.task_id)
            .field("streaming", &self.stream.is_some())
            .field("last_event_id", &self.last_event_id)
            .finish_non_exhaustive()
    }
}

impl<'a> Follower<'a> {
    pub fn new(transport: &'a dyn Transport, task_id: &str, settings: FollowSettings) -> Self {
        Follower {
            transport,
            task_id: task_id.to_owned(),
            settings,
            stream: None,
            stream_delivered: false,
            last_event_id: None,
            subscribe_failures: 0,
            schedule: PollSchedule::default(),
            wait_before_read: false,
            last_news: Instant::now(),
            last_seen: None,
            wake: None,
        }
    }

    /// Reads the task as soon as `wake` is notified (a push notification came), the
    /// schedule staying the fallback for pushes that do not come.
    pub fn with_wake(mut self, wake: Arc<Notify>) -> Self {
        self.wake = Some(wake);
        self
    }

    /// Follows the stream a streaming send opened first.
    pub fn with_stream(mut self, stream: EventStream) -> Self {
        self.stream = Some(stream);
        self.stream_delivered = false;
        self
    }

    /// Resumes after this event id (a previous run's last, where the server resumes).
    pub fn after_event(mut self, last_event_id: Option<String>) -> Self {
        self.last_event_id = last_event_id;
        self
    }

    /// Done following: a stream still open is read to its end in the background (the
    /// server closes it once the task has ended or waits), at most `DRAIN_TIMEOUT` (2 s), so
    /// that its connection goes back to the pool. Dropped mid-body, the connection would
    /// be closed, and the next call would pay a new one (a new connection costs the
    /// Python SDK's server about as much CPU as half a request).
    pub fn finish(self) {
        if let Some(mut stream) = self.stream {
            tokio::spawn(async move {
                let drained = async { while stream.next().await.is_some() {} };
                let _ = tokio::time::timeout(DRAIN_TIMEOUT, drained).await;
            });
        }
    }

    /// The id of the last event taken from a stream.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    fn idle_left(&self) -> Result<Duration, FollowError> {
        self.settings
            .idle_timeout
            .checked_sub(self.last_news.elapsed())
            .filter(|left| !left.is_zero())
            .ok_or(FollowError::Stalled(self.settings.idle_timeout))
    }

    /// The next news of the task: an event of its stream, or the task as read when it
    /// changed. Call it until an event ends the task or leaves it waiting.
    pub async fn next(&mut self) -> Result<StreamResponse, FollowError> {
        loop {
            let left = self.idle_left()?;
            if let Some(stream) = &mut self.stream {
                match tokio::time::timeout(left, stream.next()).await {
                    Err(_) => return Err(FollowError::Stalled(self.settings.idle_timeout)),
                    Ok(Some(Ok(item))) => {
                        self.last_news = Instant::now();
                        self.subscribe_failures = 0;
                        self.stream_delivered = true;
                        if item.id.is_some() {
                            self.last_event_id = item.id;
                        }
                        return Ok(item.event);
                    }
                    // Some servers (@a2a-js/sdk) refuse a subscription inside the
                    // stream they opened for it: that is a refusal, as an answer would be.
                    Ok(Some(Err(CallError::A2A(refused)))) => {
                        self.stream = None;
                        self.wait_before_read = false;
                        self.subscription_refused(refused)?;
                    }
                    Ok(Some(Err(e))) => {
                        tracing::debug!(task_id = %self.task_id, error = %e, "the upstream stream broke");
                        self.stream_ended();
                    }
                    Ok(None) => self.stream_ended(),
                }
                continue;
            }
            if self.settings.streaming && self.subscribe_failures < SUBSCRIBE_ATTEMPTS {
                let resume_from = match self.settings.resumable {
                    true => self.last_event_id.as_deref(),
                    false => None,
                };
                let subscribed = tokio::time::timeout(
                    self.settings.call_timeout,
                    self.transport.subscribe(&self.task_id, resume_from),
                )
                .await;
                match subscribed {
                    Ok(Ok(stream)) => {
                        self.stream = Some(stream);
                        self.stream_delivered = false;
                        continue;
                    }
                    Ok(Err(CallError::A2A(refused))) => self.subscription_refused(refused)?,
                    Ok(Err(_)) | Err(_) => self.subscribe_failures += 1,
                }
            }
            if let Some(task) = self.read().await? {
                return Ok(StreamResponse::Task(task));
            }
        }
    }

    /// A task that ended can no longer be subscribed to: it is read from now on. One
    /// the server does not know is lost.
    fn subscription_refused(&mut self, refused: sb_protocol::A2AError) -> Result<(), FollowError> {
        if refused.kind == ErrorKind::TaskNotFound {
            return Err(FollowError::Lost(CallError::A2A(refused)));
        }
        self.subscribe_failures = SUBSCRIBE_ATTEMPTS;
        Ok(())
    }

    /// The stream closed or broke: the task is read at once, and subscribed to again
    /// unless that stream gave nothing (then it counts as a failed subscription).
    fn stream_ended(&mut self) {
        if !self.stream_delivered {
            self.subscribe_failures += 1;
        }
        self.stream = None;
        self.wait_before_read = false;
    }

    /// Reads the task once its schedule allows: `Some` when it changed.
    async fn read(&mut self) -> Result<Option<Task>, FollowError> {
        if self.wait_before_read {
            let state = self
                .last_seen
                .as_ref()
                .map_or(TaskState::Working, |f| f.state);
            let wait = self.schedule.after(state).min(self.idle_left()?);
            match &self.wake {
                Some(wake) => tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = wake.notified() => {}
                },
                None => tokio::time::sleep(wait).await,
            }
        }
        self.wait_before_read = true;
        let read = tokio::time::timeout(
            self.settings.call_timeout,
            self.transport.get_task(&self.task_id, None),
        )
        .await;
        let task = match read {
            Ok(Ok(task)) => task,
            Ok(Err(CallError::A2A(refused))) => {
                return Err(FollowError::Lost(CallError::A2A(refused)));
            }
            // Unreachable for now: the idle timeout decides when that is too long.
            Ok(Err(CallError::Transport(_))) | Err(_) => return Ok(None),
        };
        let seen = Fingerprint::of(&task);
        if self.last_seen.as_ref() == Some(&seen) {
            return Ok(None);
        }
        self.last_seen = Some(seen);
        self.last_news = Instant::now();
        Ok(Some(task))
    }
}
