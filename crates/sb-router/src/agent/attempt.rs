//! Starting an attempt: the agent picked, and the routed task's first message sent to
//! it as a new task of the caller's, one hop deeper.

use chrono::Utc;
use sb_bridge::link::{Link, upstream_context};
use sb_fleet::Window;
use sb_fleet::health::recorder::tallies_of;
use sb_gateway::ops::{self, Sent};
use sb_protocol::delegation::next_hop;
use sb_protocol::requests::SendMessageRequest;
use sb_protocol::{Message, Metadata, Role, Task, Version, new_id};
use sb_registry::card::content_hash;
use sb_tasks::Scope;
use serde_json::{Value, json};

use crate::access::RouterAccess;
use crate::choice;
use crate::routing::{Attempt, Routing};

/// The metadata key, on a routed attempt's message, naming the routing agent's task.
pub(super) const ROUTED_FROM: &str = "switchboard.routedFrom";

/// What starting an attempt came to.
pub(super) enum Started {
    /// A task was made on the agent: follow it (the link says which).
    Task(Link),
    /// The agent answered with a message and made no task: the routed task's answer.
    Replied(Message),
    /// No agent may take it (any more): why, in words for the caller.
    Unrouted(String),
}

/// Picks an agent for `task` and sends it the task's first message; an agent that
/// refuses to make the task counts as an attempt, and the next is tried, within the
/// bound on reroutes.
pub(super) async fn start(
    access: &RouterAccess,
    router: &str,
    task: &Task,
    routing: &mut Routing,
) -> Started {
    let Some(first) = task.history.iter().find(|m| m.role == Role::User) else {
        return Started::Unrouted("the task holds no message to route".into());
    };
    loop {
        let counters = match access.fleet.counters(Window::LastHour).await {
            Ok(counters) => counters,
            Err(e) => {
                tracing::warn!(error = %e.message, "fleet health unavailable; routing without it");
                Default::default()
            }
        };
        let fleet = access.state.registry.fleet();
        let candidates = match choice::candidates(
            &fleet,
            router,
            &routing.skill,
            &routing.tried(),
            &tallies_of(&counters),
            &access.policy,
        ) {
            Ok(candidates) => candidates,
            Err(reason) => return Started::Unrouted(reason),
        };
        let seed = (&task.id, routing.attempts.len());
        let Some(agent) = choice::pick(&candidates, &seed).map(|c| c.agent.clone()) else {
            return Started::Unrouted("no agent may take it".into());
        };
        let card = fleet.card(&agent);
        let mut attempt = Attempt {
            agent: agent.clone(),
            card_version: card
                .as_ref()
                .map(|c| c.card.version.clone())
                .unwrap_or_default(),
            card_hash: card
                .as_ref()
                .map(|c| content_hash(&c.card))
                .unwrap_or_default(),
            started_at: Utc::now(),
            ..Attempt::default()
        };
        let scope = Scope {
            agent: agent.clone(),
            owner: routing.principal.clone(),
        };
        let message = Message {
            message_id: new_id(),
            context_id: Some(upstream_context(&routing.principal, &task.context_id)),
            task_id: None,
            role: Role::User,
            parts: first.parts.clone(),
            metadata: Some(attempt_metadata(
                first.metadata.clone(),
                &routing.skill,
                router,
                &task.id,
            )),
            extensions: first.extensions.clone(),
            reference_task_ids: Vec::new(),
        };
        let request = SendMessageRequest::non_blocking(message);
        let sent = ops::send(&access.state, &scope, request, Version::V1_0).await;
        tracing::Span::current().record("agent", agent.as_str());
        match sent {
            Ok(Sent::Task { record, .. }) => {
                attempt.task_id = Some(record.task.id.clone());
                routing.attempts.push(attempt.clone());
                let link = Link {
                    agent,
                    card_version: attempt.card_version,
                    card_hash: attempt.card_hash,
                    skill: Some(routing.skill.clone()),
                    upstream_task_id: Some(record.task.id.clone()),
                    upstream_context_id: Some(record.task.context_id.clone()),
                    started_at: attempt.started_at,
                    ..Link::default()
                };
                return Started::Task(link);
            }
            Ok(Sent::Message(reply)) => {
                attempt.outcome = Some("message".into());
                routing.attempts.push(attempt);
                return Started::Replied(reply);
            }
            Err(refused) => {
                tracing::info!(agent = %attempt.agent, error = %refused.message, "an agent refused a routed task");
                attempt.outcome = Some("refused".into());
                attempt.reason = Some(refused.message.clone());
                routing.attempts.push(attempt);
                if routing.reroutes() >= access.max_reroutes {
                    return Started::Unrouted(format!(
                        "{agent} refused the task ({}), and it was tried {} times, as many as this routing agent tries",
                        refused.message,
                        routing.attempts.len()
                    ));
                }
            }
        }
    }
}

/// The metadata of a routed task's message: the caller's, one hop deeper, naming the
/// skill and the routing agent's task.
fn attempt_metadata(given: Option<Metadata>, skill: &str, router: &str, task_id: &str) -> Metadata {
    let mut metadata = next_hop(given);
    metadata.insert("skill".into(), Value::from(skill));
    metadata.insert(
        ROUTED_FROM.into(),
        json!({"agent": router, "taskId": task_id}),
    );
    metadata
}
