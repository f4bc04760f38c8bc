//! [`RouterAgent`]: the routing agent. When a conversation opens, the skill is decided
//! (the one its metadata names, else the one skill its text matches; several or none
//! are answered with a message saying which, and no task is made). Each turn then
//! sends the task on, or the caller's answer to the attempt under way, and mirrors the
//! attempt's task into its own until it ends or asks something ([`crate::routing`]
//! keeps the trail, [`crate::choice`] picks the agent).

use sb_agent::{
    Agent, AgentDescriptor, AgentError, FirstMessage, Opening, Reporter, TaskContext, async_trait,
};
use sb_protocol::delegation::skill_of;
use sb_protocol::{A2AError, Message};
use sb_registry::skills::{SkillMatch, skills_matching};

use crate::access::RouterHandle;
use crate::routing::Routing;

mod attempt;
mod turn;

/// The fleet's routing agent (`kind = "router"`).
#[derive(Clone, Debug)]
pub struct RouterAgent {
    /// The name it is served under.
    name: String,
    handle: RouterHandle,
}

impl RouterAgent {
    pub fn new(name: impl Into<String>, handle: RouterHandle) -> RouterAgent {
        RouterAgent {
            name: name.into(),
            handle,
        }
    }
}

#[async_trait]
impl Agent for RouterAgent {
    fn describe(&self) -> AgentDescriptor {
        // The registry lists the fleet's skills on the card.
        AgentDescriptor {
            description:
                "Routes each message to an agent of the fleet that serves the skill it asks for \
                (metadata.skill or metadata.skillHint; without one, the one skill its text names), \
                chosen by the agents' recent health, and follows that task to its end here; a task \
                that fails is sent on to another agent with the skill, within a bound. Its skills \
                are the fleet's."
                    .into(),
            skills: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
        }
    }

    /// Decides the skill before any task exists: named, or the one the text matches.
    async fn open(&self, first: FirstMessage<'_>) -> Result<Opening, A2AError> {
        let Some(access) = self.handle.get() else {
            return Err(
                A2AError::internal("the routing agent is still starting; try again")
                    .retryable(true),
            );
        };
        let message = first.message;
        let (skill, matched_by) = match skill_of(message.metadata.as_ref()) {
            Some(skill) => (skill, "metadata"),
            None => {
                let fleet = access.state.registry.fleet();
                let matches = skills_matching(&fleet, &message.text());
                match &matches[..] {
                    [only] => (only.skill.clone(), "text"),
                    _ => return Ok(Opening::Reply(no_single_skill(&matches))),
                }
            }
        };
        let routing = Routing {
            skill,
            matched_by: matched_by.into(),
            principal: first.owner.to_owned(),
            attempts: Vec::new(),
        };
        Ok(Opening::Task(Some(routing.entry())))
    }

    async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
        let span = tracing::info_span!(
            "route",
            router = %self.name,
            task_id = %ctx.task.id,
            skill = tracing::field::Empty,
            agent = tracing::field::Empty,
        );
        tracing::Instrument::instrument(self.turn(ctx, reporter), span).await
    }
}

/// The answer to a message that names no skill and whose text matches none, or
/// several.
fn no_single_skill(matches: &[SkillMatch]) -> Message {
    let text = match matches {
        [] => "No skill of the fleet matches this message. Name the skill in metadata.skill \
               (the routing agent's card lists them) and send it again."
            .to_owned(),
        several => {
            let listed: Vec<String> = several
                .iter()
                .map(|m| {
                    format!(
                        "{} (matched by \"{}\"; served by {})",
                        m.skill,
                        m.words.join("\", \""),
                        m.agents.join(", ")
                    )
                })
                .collect();
            format!(
                "This message matches several skills of the fleet: {}. Name the one you mean in \
                 metadata.skill and send it again.",
                listed.join("; ")
            )
        }
    };
    Message::agent_text(text)
}
