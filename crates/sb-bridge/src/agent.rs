//! [`BridgeAgent`]: an [`Agent`] whose work is to drive an upstream A2A task to its end.
//! A conversation's first message is sent upstream before any task exists
//! ([`Agent::open`]): a message-only reply is the answer, and no task is made; else the
//! task is created linked to the upstream one. Each turn forwards the user message
//! upstream (unless it went already: the [`Link`] on the task says), then follows the
//! upstream task — by its stream when the upstream streams, else by reading it when its
//! push notifications say it changed (where this process takes them), else by polling —
//! and mirrors it into the Switchboard task until it ends or waits for input (`agent::follow`).
//! A cancel is forwarded upstream; an upstream silent past the stall timeout, or a task
//! past its budget, is canceled upstream and failed here.

mod follow;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sb_agent::{
    Agent, AgentDescriptor, AgentError, Caller, FirstMessage, Opening, Reporter, TaskContext,
    async_trait,
};
use sb_protocol::delegation::skill_of;
use sb_protocol::{A2AError, Message, Metadata, StreamResponse};
use tracing::Instrument;

use crate::forward::{self, Opened};
use crate::link::{Link, upstream_context};
use crate::mirror::Mirror;
use crate::push::PushReceiver;
use crate::upstream::{Connection, Upstream};

/// A bridged agent (`kind = "a2a"`).
#[derive(Debug, Clone)]
pub struct BridgeAgent {
    upstream: Arc<Upstream>,
    opened: Arc<Opened>,
    /// Where this process takes push notifications (the all-in-one); `None` where
    /// turns run on workers, which serve no HTTP.
    push: Option<Arc<PushReceiver>>,
}

impl BridgeAgent {
    /// `runs_turns`: this process runs the agent's turns too (not only opens its
    /// conversations, as a split deployment's gateway does), so the answers a first
    /// send got are kept for the turn.
    pub fn new(
        upstream: Arc<Upstream>,
        runs_turns: bool,
        push: Option<Arc<PushReceiver>>,
    ) -> BridgeAgent {
        let max_age = upstream.call_timeout();
        BridgeAgent {
            upstream,
            opened: Arc::new(Opened::new(runs_turns, max_age)),
            push,
        }
    }

    /// A link for a new task, from the card in use.
    fn new_link(&self, connection: Option<&Connection>, message: &Message) -> Link {
        let card = connection.map(|c| &c.card);
        Link {
            agent: card.map(|c| c.found.card.name.clone()).unwrap_or_default(),
            card_version: card
                .map(|c| c.found.card.version.clone())
                .unwrap_or_default(),
            card_hash: card.map(|c| c.hash.clone()).unwrap_or_default(),
            skill: skill_of(message.metadata.as_ref()),
            started_at: Utc::now(),
            ..Link::default()
        }
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

    /// Sends the first message upstream: a message-only reply stays a message; else the
    /// task is made linked to the upstream task (or to the refusal, which the turn
    /// turns into a rejection). A caller who waits for the end has the message sent as
    /// a blocking call, within its patience and the task's budget; one who follows the
    /// task has it streamed, so that the task is there to follow at once.
    async fn open(&self, first: FirstMessage<'_>) -> Result<Opening, A2AError> {
        let message = first.message;
        let connection = match self.upstream.connect().await {
            Ok(connection) => connection,
            Err(reason) => {
                let mut link = self.new_link(None, message);
                link.refused = Some(forward::unusable(&reason));
                return Ok(Opening::Task(Some(link.entry())));
            }
        };
        let mut link = self.new_link(Some(&connection), message);
        if let Some(context_id) = &message.context_id {
            link.upstream_context_id = Some(upstream_context(first.owner, context_id));
        }
        let sent = match first.caller {
            Caller::Waits { patience } => {
                let patience = patience.min(self.upstream.settings.budget());
                forward::send_blocking(&connection, message, &link, patience).await
            }
            Caller::Follows => {
                let timeout = self.upstream.call_timeout();
                forward::send(&connection, message, &link, timeout).await
            }
        };
        let answer = match sent {
            Ok(answer) => answer,
            Err(error) => {
                link.refused = Some(forward::refusal(&error));
                return Ok(Opening::Task(Some(link.entry())));
            }
        };
        let Some((task_id, context_id)) = answer.upstream_ids() else {
            let StreamResponse::Message(reply) = answer.event else {
                return Ok(Opening::Task(None));
            };
            tracing::info!(agent = %self.upstream.name, "the upstream answered with a message; no task made");
            return Ok(Opening::Reply(reply));
        };
        link.upstream_task_id = Some(task_id.clone());
        link.upstream_context_id = Some(context_id);
        link.forwarded.push(message.message_id.clone());
        self.opened.keep(&task_id, answer);
        Ok(Opening::Task(Some(link.entry())))
    }

    /// The task was not made after the upstream took its first message: the upstream
    /// task is canceled, in the background (the caller already has its answer).
    async fn abandon(&self, metadata: &Metadata) {
        let Some(link) = Link::in_metadata(metadata) else {
            return;
        };
        let Some(task_id) = &link.upstream_task_id else {
            return;
        };
        let _ = self.opened.take(task_id);
        let agent = self.clone();
        tokio::spawn(async move {
            match agent.upstream.connect().await {
                Ok(connection) => {
                    agent.cancel_upstream(&connection, &link).await;
                }
                Err(error) => {
                    tracing::info!(task_id = ?link.upstream_task_id, %error, "could not cancel an upstream task whose task here was not made")
                }
            }
        });
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
        let link = Link::of(&ctx.task);
        if let Some(reason) = link.as_ref().and_then(|l| l.refused.clone()) {
            self.upstream.forget_card().await;
            let mut mirror = Mirror::new(&ctx.task, link.unwrap_or_default(), reporter.clone());
            mirror.record_outcome("rejected");
            reporter.reject(reason).await?;
            return Ok(());
        }
        let connection = match self.upstream.connect().await {
            Ok(connection) => connection,
            Err(reason) => {
                let reason = forward::unusable(&reason);
                match link.as_ref().is_some_and(|l| l.upstream_task_id.is_some()) {
                    true => reporter.fail(reason).await?,
                    false => reporter.reject(reason).await?,
                };
                return Ok(());
            }
        };
        let link = link.unwrap_or_else(|| self.new_link(Some(&connection), &ctx.message));
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
                "the task went past its budget of {}s upstream",
                budget.as_secs()
            )),
        };
        match ended {
            Ended::Settled => {}
            Ended::Refused(reason) => {
                self.upstream.forget_card().await;
                mirror.record_outcome("rejected");
                reporter.reject(reason).await?;
            }
            Ended::Failed(reason) => {
                let reason = match self.cancel_upstream(&connection, &mirror.link).await {
                    Some(canceled) => format!("{reason}; {canceled}"),
                    None => reason,
                };
                mirror.record_outcome("failed");
                reporter.fail(reason).await?;
            }
        }
        Ok(())
    }

    /// Cancels the upstream task, if there is one; what became of that, for a reason
    /// given to the caller.
    async fn cancel_upstream(&self, connection: &Connection, link: &Link) -> Option<&'static str> {
        let task_id = link.upstream_task_id.as_ref()?;
        let timeout = self.upstream.call_timeout();
        match tokio::time::timeout(timeout, connection.transport.cancel_task(task_id)).await {
            Ok(Ok(_)) => {
                tracing::info!(task_id, "canceled the upstream task");
                Some("it was canceled there")
            }
            Ok(Err(e)) => {
                tracing::info!(task_id, error = %e, "could not cancel the upstream task");
                Some("canceling it there failed too")
            }
            Err(_) => {
                tracing::info!(task_id, "the upstream did not answer the cancel in time");
                Some("the upstream did not answer the cancel either")
            }
        }
    }
}
