//! What a routed task keeps of its routing, in its own metadata (under [`ROUTING_KEY`]),
//! so that it is durable with the task and visible to its caller: the skill and how it
//! was found, whose task it is, and every attempt — the agent, its card's version and
//! hash, the task made there, and how it ended (the trajectory of seed I6). The attempt
//! under way is also the task's [`sb_bridge::link::Link`], which the mirror follows.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use sb_protocol::{Metadata, Task, entry};
use serde::{Deserialize, Serialize};

/// The metadata key of the routing record.
pub const ROUTING_KEY: &str = "switchboard.routing";

/// A routed task's routing.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Routing {
    pub skill: String,
    /// How the skill was found: `metadata` (the message named it) or `text` (the one
    /// skill its text matched).
    pub matched_by: String,
    /// Whose task it is: the tasks made on the chosen agents are this principal's too.
    pub principal: String,
    /// Every attempt, oldest first; the last is the one under way or the last made.
    #[serde(default)]
    pub attempts: Vec<Attempt>,
}

/// One agent the task was sent to.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub agent: String,
    pub card_version: String,
    pub card_hash: String,
    /// The task made there (none when the agent refused to make one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub started_at: DateTime<Utc>,
    /// `completed`, `failed`, `rejected`, `canceled`, `message` (answered without a
    /// task) or `refused` (no task made); none while under way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// It asked the caller something: its conversation is the caller's now, and it is
    /// not rerouted (another agent would start over without the answers).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub waited: bool,
}

impl Routing {
    /// The routing stored on `task`, if it has one.
    pub fn of(task: &Task) -> Option<Routing> {
        Routing::in_metadata(task.metadata.as_ref()?)
    }

    pub fn in_metadata(metadata: &Metadata) -> Option<Routing> {
        entry::read(metadata, ROUTING_KEY)
    }

    /// The metadata entry that stores this routing.
    pub fn entry(&self) -> Metadata {
        entry::entry(ROUTING_KEY, self)
    }

    /// The agents tried so far.
    pub fn tried(&self) -> BTreeSet<String> {
        self.attempts.iter().map(|a| a.agent.clone()).collect()
    }

    /// Attempts made after the first.
    pub fn reroutes(&self) -> u32 {
        u32::try_from(self.attempts.len().saturating_sub(1)).unwrap_or(u32::MAX)
    }

    /// The attempt under way (the last one, while it has no outcome).
    pub fn current(&mut self) -> Option<&mut Attempt> {
        self.attempts.last_mut().filter(|a| a.outcome.is_none())
    }

    /// Notes how the attempt under way ended.
    pub fn close(&mut self, outcome: &str, reason: Option<String>) {
        if let Some(attempt) = self.current() {
            attempt.outcome = Some(outcome.to_owned());
            attempt.reason = reason;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_routing_survives_its_metadata_entry() {
        let mut routing = Routing {
            skill: "summarize".into(),
            matched_by: "metadata".into(),
            principal: "alice".into(),
            attempts: vec![Attempt {
                agent: "a".into(),
                task_id: Some("t1".into()),
                started_at: Utc::now(),
                ..Attempt::default()
            }],
        };
        routing.close("failed", Some("it broke".into()));
        assert!(routing.current().is_none(), "closed");
        routing.attempts.push(Attempt {
            agent: "b".into(),
            started_at: Utc::now(),
            ..Attempt::default()
        });
        assert_eq!(routing.reroutes(), 1);
        assert_eq!(routing.tried(), BTreeSet::from(["a".into(), "b".into()]));
        let again = Routing::in_metadata(&routing.entry()).unwrap();
        assert_eq!(again, routing);
    }
}
