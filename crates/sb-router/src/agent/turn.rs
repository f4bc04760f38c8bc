//! One turn of the routing agent: the routed task sent on (or the caller's answer to
//! the attempt under way), then the attempt's task mirrored into this one until it
//! settles. An attempt that fails or is rejected is not mirrored but sent on to
//! another agent, while the bound allows and the attempt never asked the caller
//! anything; the last one's end is this task's.

use std::time::Duration;

use futures::StreamExt;
use sb_agent::{AgentError, Reporter, TaskContext};
use sb_bridge::link::Link;
use sb_bridge::mirror::{Mirror, Mirrored};
use sb_gateway::ops;
use sb_protocol::delegation::depth_of;
use sb_protocol::requests::SendMessageRequest;
use sb_protocol::{Message, PartContent, Role, StreamResponse, TaskState, Version, new_id};
use sb_tasks::Scope;
use serde_json::Value;

use super::RouterAgent;
use super::attempt::{self, Started};
use crate::access::RouterAccess;
use crate::routing::Routing;

/// A pause before following an attempt's task again after its stream ended early.
const FOLLOW_AGAIN: Duration = Duration::from_millis(100);

/// How following an attempt ended.
enum Ended {
    /// It ended or asks something, and so does this task (mirrored).
    Settled,
    /// It failed or was rejected: `event` says so, not mirrored yet.
    Failed {
        state: TaskState,
        reason: String,
        retryable: bool,
        event: Box<StreamResponse>,
    },
    /// It cannot be followed (or this task cannot be updated).
    Lost(String),
}

impl RouterAgent {
    pub(super) async fn turn(
        &self,
        ctx: TaskContext,
        reporter: Reporter,
    ) -> Result<(), AgentError> {
        let access = tokio::select! {
            access = self.handle.ready() => access,
            () = ctx.cancel.cancelled() => return Ok(()),
        };
        let Some(mut routing) = Routing::of(&ctx.task) else {
            reporter
                .reject("this task was not opened by the routing agent; send a new message".into())
                .await?;
            return Ok(());
        };
        tracing::Span::current().record("skill", routing.skill.as_str());
        let first = ctx.task.history.iter().find(|m| m.role == Role::User);
        let depth = first
            .map(|m| depth_of(m.metadata.as_ref()).unwrap_or(0))
            .unwrap_or(0);
        if depth >= access.state.max_delegation_depth && routing.attempts.is_empty() {
            reporter
                .reject(format!(
                    "routing this task would take it {} hops of agents calling agents deep, past this server's cap of {}; a chain that long is likely a loop",
                    depth + 1,
                    access.state.max_delegation_depth
                ))
                .await?;
            return Ok(());
        }
        let link = Link::of(&ctx.task).unwrap_or_default();
        let mut mirror = Mirror::new(&ctx.task, link, reporter.clone());
        let cancel = ctx.cancel.clone();
        tokio::select! {
            result = self.route(&access, &ctx, &reporter, &mut routing, &mut mirror) => result,
            () = cancel.cancelled() => {
                cancel_attempt(&access, &routing, &mirror.link).await;
                Ok(())
            }
        }
    }

    /// Sends the task (or the caller's answer) on, and follows attempts until one
    /// settles this task.
    async fn route(
        &self,
        access: &RouterAccess,
        ctx: &TaskContext,
        reporter: &Reporter,
        routing: &mut Routing,
        mirror: &mut Mirror,
    ) -> Result<(), AgentError> {
        // The attempt that failed before this one: why (for the next one's news), and
        // its end (this task's, when no other agent may take it).
        let mut failed: Option<(String, Box<StreamResponse>)> = None;
        loop {
            if mirror.link.upstream_task_id.is_none() {
                match attempt::start(access, &self.name, &ctx.task, routing).await {
                    Started::Task(mut link) => {
                        link.forwarded.push(ctx.message.message_id.clone());
                        mirror.link = link;
                        let text = match failed.take() {
                            Some((before, _)) => format!(
                                "{before}; sent on to {} (task {})",
                                mirror.link.agent,
                                mirror.link.upstream_task_id.as_deref().unwrap_or_default()
                            ),
                            None => format!(
                                "Routed to {} (task {}) for skill {}",
                                mirror.link.agent,
                                mirror.link.upstream_task_id.as_deref().unwrap_or_default(),
                                routing.skill
                            ),
                        };
                        reporter.annotate(routing.entry());
                        reporter.annotate(mirror.link.entry());
                        reporter
                            .status(TaskState::Working, Some(Message::agent_text(text)))
                            .await?;
                        mirror.moved_to(TaskState::Working);
                    }
                    Started::Replied(reply) => {
                        reporter.annotate(routing.entry());
                        mirror.complete_with(reply).await?;
                        return Ok(());
                    }
                    Started::Unrouted(reason) => {
                        reporter.annotate(routing.entry());
                        match failed {
                            // The last attempt's end is this task's.
                            Some((_, end)) => {
                                tracing::info!(%reason, "no other agent may take a failed routed task");
                                mirror.apply(*end).await?;
                            }
                            None => {
                                reporter.reject(reason).await?;
                            }
                        }
                        return Ok(());
                    }
                }
            } else if !mirror.link.forwarded(&ctx.message.message_id) {
                if let Err(reason) = forward(access, routing, &mirror.link, &ctx.message).await {
                    reporter.annotate(routing.entry());
                    reporter.fail(reason).await?;
                    return Ok(());
                }
                mirror.link.forwarded.push(ctx.message.message_id.clone());
                reporter.annotate(mirror.link.entry());
            }
            match follow(access, routing, reporter, mirror).await {
                Ended::Settled => return Ok(()),
                Ended::Lost(reason) => {
                    cancel_attempt(access, routing, &mirror.link).await;
                    routing.close("lost", Some(reason.clone()));
                    reporter.annotate(routing.entry());
                    reporter.fail(reason).await?;
                    return Ok(());
                }
                Ended::Failed {
                    state,
                    reason,
                    retryable,
                    event,
                } => {
                    let waited = routing.current().is_some_and(|a| a.waited);
                    let agent = mirror.link.agent.clone();
                    routing.close(state.as_v03_str(), Some(reason.clone()));
                    let bounded = routing.reroutes() < access.max_reroutes;
                    if retryable && !waited && bounded {
                        let before = format!("{agent} {}: {reason}", state.as_v03_str());
                        failed = Some((before, event));
                        mirror.link = Link::default();
                        continue;
                    }
                    reporter.annotate(routing.entry());
                    if let Err(e) = mirror.apply(*event).await {
                        return Err(e.into());
                    }
                    return Ok(());
                }
            }
        }
    }
}

/// The principal's view of the attempt under way.
fn scope_of(routing: &Routing, link: &Link) -> Scope {
    Scope {
        agent: link.agent.clone(),
        owner: routing.principal.clone(),
    }
}

/// Sends the caller's message (an answer to a question) to the attempt under way.
async fn forward(
    access: &RouterAccess,
    routing: &Routing,
    link: &Link,
    message: &Message,
) -> Result<(), String> {
    let message = Message {
        message_id: new_id(),
        context_id: link.upstream_context_id.clone(),
        task_id: link.upstream_task_id.clone(),
        role: Role::User,
        parts: message.parts.clone(),
        metadata: message.metadata.clone(),
        extensions: message.extensions.clone(),
        reference_task_ids: Vec::new(),
    };
    let request = SendMessageRequest::non_blocking(message);
    let scope = scope_of(routing, link);
    ops::send(&access.state, &scope, request, Version::V1_0)
        .await
        .map(drop)
        .map_err(|e| format!("{} did not take the message: {}", link.agent, e.message))
}

/// Mirrors the attempt's task until it settles, or fails.
async fn follow(
    access: &RouterAccess,
    routing: &mut Routing,
    reporter: &Reporter,
    mirror: &mut Mirror,
) -> Ended {
    let Some(task_id) = mirror.link.upstream_task_id.clone() else {
        return Ended::Lost("the attempt made no task".into());
    };
    let scope = scope_of(routing, &mirror.link);
    loop {
        let mut frames = match ops::subscribe(&access.state, &scope, &task_id, None).await {
            Ok(subscription) => subscription.frames,
            // Finished already (a subscription is refused): its end is read.
            Err(_) => match access.state.tasks.get(&scope, &task_id).await {
                Ok(record) => {
                    let snapshot = StreamResponse::Task(record.task.clone());
                    return step(routing, reporter, mirror, snapshot)
                        .await
                        .unwrap_or_else(|| {
                            Ended::Lost(format!(
                                "task {task_id} of {} neither ended nor can be followed",
                                scope.agent
                            ))
                        });
                }
                Err(e) => {
                    return Ended::Lost(format!(
                        "task {task_id} of {} cannot be read: {}",
                        scope.agent, e.message
                    ));
                }
            },
        };
        while let Some(frame) = frames.next().await {
            let event = match frame {
                Ok(frame) => (*frame.event).clone(),
                Err(e) => {
                    tracing::debug!(error = %e.message, "an attempt's stream broke; following it again");
                    break;
                }
            };
            if let Some(ended) = step(routing, reporter, mirror, event).await {
                return ended;
            }
        }
        if access.state.shutdown.is_cancelled() {
            return Ended::Lost("Switchboard is shutting down".into());
        }
        tokio::time::sleep(FOLLOW_AGAIN).await;
    }
}

/// Mirrors one event of the attempt, unless it is the attempt's failure.
async fn step(
    routing: &mut Routing,
    reporter: &Reporter,
    mirror: &mut Mirror,
    event: StreamResponse,
) -> Option<Ended> {
    let status = match &event {
        StreamResponse::Task(task) => Some(&task.status),
        StreamResponse::StatusUpdate(update) => Some(&update.status),
        _ => None,
    };
    if let Some(status) = status {
        let state = status.state;
        if matches!(state, TaskState::Failed | TaskState::Rejected) {
            let message = status.message.as_ref();
            let reason = message
                .map(Message::text)
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_else(|| format!("the task was {}", state.as_v03_str()));
            return Some(Ended::Failed {
                state,
                retryable: !says_not_retryable(message),
                reason,
                event: Box::new(event),
            });
        }
        if state.is_interrupted() {
            if let Some(attempt) = routing.current() {
                attempt.waited = true;
            }
            reporter.annotate(routing.entry());
        }
        if state.is_terminal() {
            routing.close(state.as_v03_str(), None);
            reporter.annotate(routing.entry());
        }
    }
    match mirror.apply(event).await {
        Ok(Mirrored::Running) => None,
        Ok(Mirrored::Settled(_)) => Some(Ended::Settled),
        Err(e) => Some(Ended::Lost(e.message)),
    }
}

/// Whether the agent said its failure is not worth another try: `retryable: false` in
/// the failure message's metadata or in a data part (the fleet guide's convention).
fn says_not_retryable(message: Option<&Message>) -> bool {
    let Some(message) = message else {
        return false;
    };
    let refuses = |value: Option<&Value>| value.and_then(Value::as_bool) == Some(false);
    refuses(message.metadata.as_ref().and_then(|m| m.get("retryable")))
        || message.parts.iter().any(|part| match &part.content {
            PartContent::Data(data) => refuses(data.get("retryable")),
            _ => false,
        })
}

/// Cancels the attempt under way (this task was canceled, or stopped following it).
async fn cancel_attempt(access: &RouterAccess, routing: &Routing, link: &Link) {
    let Some(task_id) = &link.upstream_task_id else {
        return;
    };
    let scope = scope_of(routing, link);
    if let Err(e) = ops::cancel_task(&access.state, &scope, task_id, Version::V1_0).await {
        tracing::debug!(task_id, error = %e.message, "the routed attempt was not canceled");
    }
}
