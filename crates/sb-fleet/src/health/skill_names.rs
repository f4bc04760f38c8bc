//! [`SkillNames`]: the name fleet health counts a task's skill under. The skill is read
//! from the caller's metadata, so its names are the caller's to choose, and each new one
//! would be a new Prometheus series and a new field in every bucket. Each agent's first
//! [`MAX_SKILLS_PER_AGENT`] names are counted as themselves; any later one is counted
//! under [`OTHER_SKILLS`], so a client sending a fresh name with every task cannot grow
//! the metrics or the store without bound.

use parking_lot::RwLock;
use sb_store::{IdMap, IdSet};

/// Distinct skill names counted as themselves per agent (the empty name, "no skill",
/// is always counted and takes no place). Agents declare a handful of skills; this
/// leaves room for many more before anything is lumped together.
pub const MAX_SKILLS_PER_AGENT: usize = 64;

/// What the skills past an agent's [`MAX_SKILLS_PER_AGENT`] are counted as.
pub const OTHER_SKILLS: &str = "(other skills)";

/// Longest skill name kept, in characters.
const SKILL_CHARS: usize = 100;

/// The names counted so far, by agent. Per process: replicas may fill their places in a
/// different order, and their sums stay right because every outcome is counted once.
#[derive(Debug, Default)]
pub struct SkillNames {
    by_agent: RwLock<IdMap<String, AgentSkills>>,
}

#[derive(Debug, Default)]
struct AgentSkills {
    names: IdSet<String>,
    /// Whether a name has been counted as [`OTHER_SKILLS`] (and the log told).
    overflowed: bool,
}

impl SkillNames {
    /// The name `skill` is counted under for `agent` when it is not `skill` itself:
    /// control characters removed and at most 100 characters kept (a counter field holds
    /// it), or [`OTHER_SKILLS`] once the agent's places are taken. `None`, the common
    /// case, costs no allocation.
    pub fn rename(&self, agent: &str, skill: &str) -> Option<String> {
        let safe = field_safe(skill);
        let name = safe.as_deref().unwrap_or(skill);
        if name.is_empty() {
            return safe;
        }
        if let Some(skills) = self.by_agent.read().get(agent) {
            if skills.names.contains(name) {
                return safe;
            }
            if skills.overflowed {
                return Some(OTHER_SKILLS.to_owned());
            }
        }
        let mut by_agent = self.by_agent.write();
        let skills = by_agent.entry(agent.to_owned()).or_default();
        if skills.names.contains(name) {
            return safe;
        }
        if skills.names.len() < MAX_SKILLS_PER_AGENT {
            skills.names.insert(name.to_owned());
            return safe;
        }
        if !skills.overflowed {
            skills.overflowed = true;
            tracing::warn!(
                agent,
                limit = MAX_SKILLS_PER_AGENT,
                "an agent was asked for more distinct skills than fleet health counts by name; further ones are counted as \"{OTHER_SKILLS}\""
            );
        }
        Some(OTHER_SKILLS.to_owned())
    }
}

/// `text` fit for a counter field when it is not already: no control characters (the
/// field separator is one), at most [`SKILL_CHARS`] characters.
fn field_safe(text: &str) -> Option<String> {
    // Bytes bound characters from above: counted only for a long name.
    let short = text.len() <= SKILL_CHARS || text.chars().count() <= SKILL_CHARS;
    let fits = short && !text.chars().any(char::is_control);
    (!fits).then(|| {
        text.chars()
            .filter(|c| !c.is_control())
            .take(SKILL_CHARS)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_skills_past_the_limit_are_counted_as_other() {
        let names = SkillNames::default();
        for n in 0..MAX_SKILLS_PER_AGENT {
            assert_eq!(names.rename("a", &format!("skill-{n}")), None, "{n}");
        }
        assert_eq!(
            names.rename("a", "one-too-many").as_deref(),
            Some(OTHER_SKILLS)
        );
        assert_eq!(names.rename("a", "another").as_deref(), Some(OTHER_SKILLS));
        let overflowed = names
            .by_agent
            .read()
            .get("a")
            .map(|skills| skills.overflowed);
        assert_eq!(overflowed, Some(true));
        // The names already counted, "no skill", and other agents keep their own.
        assert_eq!(names.rename("a", "skill-0"), None);
        assert_eq!(
            names.rename("a", &format!("skill-{}", MAX_SKILLS_PER_AGENT - 1)),
            None
        );
        assert_eq!(names.rename("a", ""), None);
        assert_eq!(names.rename("b", "one-too-many"), None);
    }

    #[test]
    fn a_name_is_made_fit_for_a_counter_field() {
        let names = SkillNames::default();
        assert_eq!(
            names.rename("a", "sum\u{1f}mar\nize").as_deref(),
            Some("summarize")
        );
        let long = "é".repeat(150);
        assert_eq!(names.rename("a", &long), Some("é".repeat(100)));
        // 100 characters in 200 bytes fit as they are.
        assert_eq!(names.rename("a", &"é".repeat(100)), None);
        // Both count as names once made fit: the agent has two places taken.
        let taken = names
            .by_agent
            .read()
            .get("a")
            .map(|skills| skills.names.len());
        assert_eq!(taken, Some(2));
        assert_eq!(names.rename("a", "\u{7}").as_deref(), Some(""));
    }
}
