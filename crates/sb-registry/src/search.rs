//! Finding agents in the fleet: by skill id, tag, capability or media type (filters),
//! and by free text over names, descriptions and skills (ranked). A routing agent,
//! whose skills are the fleet's, is found by its own name, description and
//! capabilities only.

use std::sync::Arc;

use sb_protocol::card::AgentCard;
use serde::Deserialize;

use crate::definition::AgentKind;
use crate::fleet::{Fleet, ServedAgent};

/// `GET /registry/agents?…`: every filter given must hold; `q` ranks what remains.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Query {
    /// An agent with a skill of this id.
    pub skill: Option<String>,
    /// An agent with this tag on any skill (case-insensitive).
    pub tag: Option<String>,
    /// Free text: each word must appear in the agent's name, description, or a skill's
    /// id, name, description, tags or examples (case-insensitive); hits are ranked.
    pub q: Option<String>,
    /// `streaming`, `push_notifications` (`pushNotifications`) or `extended_agent_card`.
    pub capability: Option<String>,
    /// Accepts this media type (by default or in a skill).
    pub input_mode: Option<String>,
    /// Produces this media type.
    pub output_mode: Option<String>,
}

/// One agent found, with how well it matched `q` (0 without one).
#[derive(Clone, Debug)]
pub struct Hit {
    pub agent: Arc<ServedAgent>,
    pub score: u32,
}

/// Why a query cannot be answered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryError(pub String);

/// Weights of where a word of `q` is found: the name says most of what an agent is.
const NAME: u32 = 8;
const SKILL_NAME: u32 = 5;
const TAG: u32 = 4;
const DESCRIPTION: u32 = 3;
const SKILL_DESCRIPTION: u32 = 2;
const EXAMPLE: u32 = 1;

impl Query {
    /// The agents of `fleet` that match, best first (then by name).
    pub fn run(&self, fleet: &Fleet) -> Result<Vec<Hit>, QueryError> {
        let capability = self.capability.as_deref().map(capability).transpose()?;
        let words: Vec<String> = self
            .q
            .iter()
            .flat_map(|q| q.split(|c: char| !c.is_alphanumeric()))
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut hits: Vec<Hit> = fleet
            .agents
            .values()
            .filter_map(|agent| {
                // A routing agent's skills are the others': it is found by its own
                // name, description and capabilities.
                let own;
                let card = match agent.registration.definition.kind {
                    AgentKind::Router => {
                        own = AgentCard {
                            skills: Vec::new(),
                            ..agent.entry.card.clone()
                        };
                        &own
                    }
                    _ => &agent.entry.card,
                };
                if !self.filters_hold(card, capability) {
                    return None;
                }
                Some(Hit {
                    agent: agent.clone(),
                    score: score(card, &words)?,
                })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .cmp(&a.score)
                .then_with(|| a.agent.entry.card.name.cmp(&b.agent.entry.card.name))
        });
        Ok(hits)
    }

    fn filters_hold(&self, card: &AgentCard, capability: Option<Capability>) -> bool {
        let skill = self
            .skill
            .as_deref()
            .is_none_or(|id| card.skills.iter().any(|s| s.id == id));
        let tag = self.tag.as_deref().is_none_or(|tag| {
            card.skills
                .iter()
                .flat_map(|s| &s.tags)
                .any(|t| t.eq_ignore_ascii_case(tag))
        });
        let capable = capability.is_none_or(|c| match c {
            Capability::Streaming => card.capabilities.streaming == Some(true),
            Capability::Push => card.capabilities.push_notifications == Some(true),
            Capability::ExtendedCard => card.capabilities.extended_agent_card == Some(true),
        });
        let takes = self.input_mode.as_deref().is_none_or(|mode| {
            modes_include(&card.default_input_modes, mode)
                || card
                    .skills
                    .iter()
                    .any(|s| modes_include(&s.input_modes, mode))
        });
        let gives = self.output_mode.as_deref().is_none_or(|mode| {
            modes_include(&card.default_output_modes, mode)
                || card
                    .skills
                    .iter()
                    .any(|s| modes_include(&s.output_modes, mode))
        });
        skill && tag && capable && takes && gives
    }
}

fn modes_include(modes: &[String], mode: &str) -> bool {
    modes.iter().any(|m| m.eq_ignore_ascii_case(mode))
}

#[derive(Clone, Copy, Debug)]
enum Capability {
    Streaming,
    Push,
    ExtendedCard,
}

fn capability(name: &str) -> Result<Capability, QueryError> {
    match name {
        "streaming" => Ok(Capability::Streaming),
        "push_notifications" | "pushNotifications" => Ok(Capability::Push),
        "extended_agent_card" | "extendedAgentCard" => Ok(Capability::ExtendedCard),
        other => Err(QueryError(format!(
            "capability \"{other}\" is not one of streaming, push_notifications, extended_agent_card"
        ))),
    }
}

/// How well `card` matches every word (None when a word is found nowhere): for each
/// word, the weight of the best place it appears.
fn score(card: &AgentCard, words: &[String]) -> Option<u32> {
    let mut fields: Vec<(u32, String)> = vec![
        (NAME, card.name.to_lowercase()),
        (DESCRIPTION, card.description.to_lowercase()),
    ];
    for skill in &card.skills {
        fields.push((SKILL_NAME, skill.name.to_lowercase()));
        fields.push((SKILL_NAME, skill.id.to_lowercase()));
        fields.push((SKILL_DESCRIPTION, skill.description.to_lowercase()));
        fields.extend(skill.tags.iter().map(|t| (TAG, t.to_lowercase())));
        fields.extend(skill.examples.iter().map(|e| (EXAMPLE, e.to_lowercase())));
    }
    words.iter().try_fold(0, |total, word| {
        let best = fields
            .iter()
            .filter(|(_, text)| contains_word(text, word))
            .map(|(weight, _)| *weight)
            .max()?;
        Some(total + best)
    })
}

/// Whether `word` starts a word of `text` (so "remind" finds "reminders", "sum" does
/// not find "consume").
fn contains_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric())
        .any(|w| w.starts_with(word))
}
