//! [`BridgeAgent`]: an [`Agent`] whose work is to drive an upstream A2A task to its end.
//! Each turn forwards the user message upstream (unless an earlier run of the turn
//! already did: the [`Link`] on the task says), then follows the upstream task — by
//! its stream when the upstream streams, else by polling — and mirrors it into the
//! Switchboard task until it ends or waits for input. A cancel is forwarded upstream;
//! an upstream silent past the stall timeout, or a task past its budget, is canceled
//! upstream and failed here.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use sb_agent::{Agent, AgentDescriptor, AgentError, Reporter, TaskContext, async_trait};
use sb_client::follow::{FollowError, FollowSettings, Follower};
use sb_client::{CallError, EventStream};
use sb_protocol::card::RESUME_EXTENSION;
use sb_protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use sb_protocol::{Message, SendMessageResponse, StreamResponse, TaskState};
use tracing::Instrument;

use crate::link::{Link, skill_of};
use crate::mirror::{Mirror, Mirrored};
use crate::upstream::{Connection, Upstream};

/// A bridged agent (`kind = "a2a"`).
#[derive(Debug, Clone)]
pub struct BridgeAgent {
    upstream: Arc<Upstream>,
}

impl BridgeAgent {
    pub fn new(upstream: Arc<Upstream>) -> BridgeAgent {
        BridgeAgent { upstream }
    }
}

/// How forwarding and following ended.
enum Ended {
    /// The upstream task ended or waits; so does this one (already mirrored).
    Settled,
    /// Refused before the upstream took the message: reject, with the reason.
    Refused(String),
    /// The upstream task broke, stalled or ran out of budget: cancel it and fail.
    Failed(String),
}

#[async_trait]
impl Agent for BridgeAgent {
    fn describe(&self) -> AgentDescriptor {
        // The registry shows the upstream card's own description and skills once
        // fetched; this is what a card says before that.
        AgentDescriptor {
            description: format!(
                "The A2A agent at {}, through Switchboard",
                self.upstream.url
            ),
            skills: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
        }
    }

    async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
        let span = tracing::info_span!(
            "bridge_call",
            agent = %self.upstream.name,
            upstream.url = %self.upstream.url,
            upstream.agent = tracing::field::Empty,
            upstream.card_version = tracing::field::Empty,
            upstream.card_hash = tracing::field::Empty,
            upstream.task_id = tracing::field::Empty,
            skill = tracing::field::Empty,
            outcome = tracing::field::Empty,
            latency_ms = tracing::field::Empty,
        );
        self.turn(ctx, reporter).instrument(span).await
    }
}

impl BridgeAgent {
    async fn turn(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
        let connection = match self.upstream.connect().await {
            Ok(connection) => connection,
            Err(reason) => {
                let reason = format!(
                    "the upstream agent cannot be used: {reason} (a retry may help once it is back)"
                );
                reporter.reject(reason).await?;
                return Ok(());
            }
        };
        let card = &connection.card;
        let link = Link::of(&ctx.task).unwrap_or_else(|| Link {
            agent: card.found.card.name.clone(),
            card_version: card.found.card.version.clone(),
            card_hash: card.hash.clone(),
            skill: skill_of(ctx.message.metadata.as_ref()),
            started_at: Utc::now(),
            ..Link::default()
        });
        let span = tracing::Span::current();
        span.record("upstream.agent", link.agent.as_str());
        span.record("upstream.card_version", link.card_version.as_str());
        span.record("upstream.card_hash", link.card_hash.as_str());
        if let Some(skill) = &link.skill {
            span.record("skill", skill.as_str());
        }
        if let Some(task_id) = &link.upstream_task_id {
            span.record("upstream.task_id", task_id.as_str());
        }
        let budget = self.upstream.settings.budget();
        let budget_left = (link.started_at + budget)
            .signed_duration_since(Utc::now())
            .to_std()
            .unwrap_or(Duration::ZERO);
        let mut mirror = Mirror::new(&ctx.task, link, reporter.clone());
        let ended = tokio::select! {
            ended = self.forward_and_follow(&ctx.message, &connection, &mut mirror) => ended,
            () = ctx.cancel.cancelled() => {
                // Canceled here (or ended by someone else): the upstream follows.
                self.cancel_upstream(&connection, &mirror.link).await;
                return Ok(());
            }
            () = tokio::time::sleep(budget_left) => Ended::Failed(format!(
                "the task went past its budget of {}s upstream and was canceled there",
                budget.as_secs()
            )),
        };
        match ended {
            Ended::Settled => {}
            Ended::Refused(reason) => {
                self.upstream.forget_card().await;
                let _ = mirror.record_outcome("rejected").await;
                reporter.reject(reason).await?;
            }
            Ended::Failed(reason) => {
                self.cancel_upstream(&connection, &mirror.link).await;
                let _ = mirror.record_outcome("failed").await;
                reporter.fail(reason).await?;
            }
        }
        Ok(())
    }

    /// Sends the turn's message upstream unless it was sent already, then mirrors the
    /// upstream task until it settles.
    async fn forward_and_follow(
        &self,
        message: &Message,
        connection: &Connection,
        mirror: &mut Mirror,
    ) -> Ended {
        let transport = &*connection.transport;
        let card = &connection.card.found.card;
        let streams = card.capabilities.streaming == Some(true);
        let mut opened = None;
        if !mirror.link.forwarded(&message.message_id) {
            let continuing = mirror.link.upstream_task_id.is_some();
            let refused = |error: CallError| {
                let retry = match &error {
                    CallError::A2A(e) if !e.kind.default_retryable() => "a retry will not help",
                    _ => "a retry may help",
                };
                let reason =
                    format!("the upstream agent did not take the message: {error} ({retry})");
                // A follow-up it refused leaves an upstream task behind: that is a failure.
                match continuing {
                    true => Ended::Failed(reason),
                    false => Ended::Refused(reason),
                }
            };
            let request = self.request(message, &mirror.link);
            let first = match self.send(connection, &request, streams).await {
                Ok(first) => first,
                Err(error) => return refused(error),
            };
            mirror.link.forwarded.push(message.message_id.clone());
            let (event, stream) = first;
            let upstream_ids = match &event {
                StreamResponse::Message(_) => None,
                StreamResponse::Task(t) => Some((t.id.clone(), t.context_id.clone())),
                StreamResponse::StatusUpdate(u) => Some((u.task_id.clone(), u.context_id.clone())),
                StreamResponse::ArtifactUpdate(u) => {
                    Some((u.task_id.clone(), u.context_id.clone()))
                }
            };
            match upstream_ids {
                // A message-only reply: the upstream made no task, and this one ends with it.
                None => return self.step(mirror, event).await.unwrap_or(Ended::Settled),
                Some((task_id, context_id)) => {
                    if let Err(e) = mirror.link_to(&task_id, &context_id).await {
                        return Ended::Failed(format!("could not record the upstream task: {e}"));
                    }
                }
            }
            if let Some(ended) = self.step(mirror, event).await {
                return ended;
            }
            opened = stream;
        }
        let Some(upstream_task) = mirror.link.upstream_task_id.clone() else {
            return Ended::Failed("the upstream never made a task for this one".into());
        };
        let settings = FollowSettings {
            idle_timeout: self.upstream.settings.stall_timeout(),
            streaming: streams,
            resumable: card
                .capabilities
                .extensions
                .iter()
                .any(|e| e.uri == RESUME_EXTENSION),
            call_timeout: self.upstream.call_timeout(),
        };
        let mut follower = Follower::new(transport, &upstream_task, settings);
        if let Some(stream) = opened {
            follower = follower.with_stream(stream);
        }
        loop {
            let event = match follower.next().await {
                Ok(event) => event,
                Err(FollowError::Stalled(after)) => {
                    return Ended::Failed(format!(
                        "the upstream agent sent no news of its task {upstream_task} for {}s; it was canceled there",
                        after.as_secs()
                    ));
                }
                Err(FollowError::Lost(error)) => {
                    return Ended::Failed(format!(
                        "the upstream task {upstream_task} cannot be followed: {error}"
                    ));
                }
            };
            if let Some(ended) = self.step(mirror, event).await {
                return ended;
            }
        }
    }

    /// Sends `request`: the first event (the reply, or the stream's first event) and,
    /// when streaming, the rest of the stream.
    async fn send(
        &self,
        connection: &Connection,
        request: &SendMessageRequest,
        streams: bool,
    ) -> Result<(StreamResponse, Option<EventStream>), CallError> {
        let timeout = self.upstream.call_timeout();
        let late = || CallError::Transport(format!("no answer within {}s", timeout.as_secs()));
        if !streams {
            let reply = tokio::time::timeout(timeout, connection.transport.send(request))
                .await
                .map_err(|_| late())??;
            let event = match reply {
                SendMessageResponse::Task(task) => StreamResponse::Task(task),
                SendMessageResponse::Message(message) => StreamResponse::Message(message),
            };
            return Ok((event, None));
        }
        let mut stream =
            tokio::time::timeout(timeout, connection.transport.send_streaming(request))
                .await
                .map_err(|_| late())??;
        match tokio::time::timeout(timeout, stream.next()).await {
            Ok(Some(Ok(item))) => Ok((item.event, Some(stream))),
            Ok(Some(Err(error))) => Err(error),
            Ok(None) => Err(CallError::Transport(
                "the stream ended before any event".into(),
            )),
            Err(_) => Err(late()),
        }
    }

    /// The message as it goes upstream: same id and content, the upstream's task and
    /// context ids, this task's references dropped (they mean nothing there).
    fn request(&self, message: &Message, link: &Link) -> SendMessageRequest {
        let mut upstream = message.clone();
        upstream.task_id = link.upstream_task_id.clone();
        upstream.context_id = link.upstream_context_id.clone();
        upstream.reference_task_ids = Vec::new();
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

    /// Mirrors one event: `Some` once the task settled (or could not be mirrored).
    async fn step(&self, mirror: &mut Mirror, event: StreamResponse) -> Option<Ended> {
        let mirrored = match event {
            // Alone, not in a task's stream: a message-only reply, which ends the task.
            StreamResponse::Message(reply) if mirror.link.upstream_task_id.is_none() => mirror
                .complete_with(reply)
                .await
                .map(|()| Mirrored::Settled(TaskState::Completed)),
            event => mirror.apply(event).await,
        };
        match mirrored {
            Ok(Mirrored::Running) => None,
            Ok(Mirrored::Settled(_)) => Some(Ended::Settled),
            Err(e) => Some(Ended::Failed(format!(
                "could not mirror the upstream task: {}",
                e.message
            ))),
        }
    }

    async fn cancel_upstream(&self, connection: &Connection, link: &Link) {
        let Some(task_id) = &link.upstream_task_id else {
            return;
        };
        let timeout = self.upstream.call_timeout();
        match tokio::time::timeout(timeout, connection.transport.cancel_task(task_id)).await {
            Ok(Ok(_)) => tracing::info!(task_id, "canceled the upstream task"),
            Ok(Err(e)) => tracing::info!(task_id, error = %e, "could not cancel the upstream task"),
            Err(_) => tracing::info!(task_id, "the upstream did not answer the cancel in time"),
        }
    }
}
