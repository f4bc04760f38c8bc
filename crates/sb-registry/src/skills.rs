//! Which of the fleet's skills a message's text asks for, when it names none: a skill
//! matches when a word of the text is a word of its id, its name or one of its tags
//! (case-insensitive; words of six letters or more also match by their first six, so
//! "summarise" finds `summarize`). Only one skill matching is a routable answer; more
//! are for the caller to choose from.

use std::collections::{BTreeMap, BTreeSet};

use crate::definition::AgentKind;
use crate::fleet::Fleet;

/// A skill whose words the text has, and the agents that declare it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillMatch {
    pub skill: String,
    /// The text's words that matched it.
    pub words: Vec<String>,
    pub agents: Vec<String>,
}

/// Words shorter than this say too little to route by ("a", "to", "of").
const SHORTEST: usize = 3;
/// Words this long or longer match by this many first letters.
const STEM: usize = 6;

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= SHORTEST)
        .map(str::to_lowercase)
}

fn stem(word: &str) -> &str {
    match word.char_indices().nth(STEM) {
        Some((at, _)) => &word[..at],
        None => word,
    }
}

fn same_word(a: &str, b: &str) -> bool {
    a == b || (a.chars().count() >= STEM && b.chars().count() >= STEM && stem(a) == stem(b))
}

/// The skills of the fleet's agents (routing agents aside) that `text` matches, in id
/// order.
pub fn skills_matching(fleet: &Fleet, text: &str) -> Vec<SkillMatch> {
    let said: BTreeSet<String> = words(text).collect();
    let mut found: BTreeMap<String, SkillMatch> = BTreeMap::new();
    for (name, agent) in &fleet.agents {
        if agent.registration.definition.kind == AgentKind::Router {
            continue;
        }
        for skill in &agent.entry.card.skills {
            let own: BTreeSet<String> = words(&skill.id)
                .chain(words(&skill.name))
                .chain(skill.tags.iter().flat_map(|t| words(t)))
                .collect();
            let hits: Vec<String> = said
                .iter()
                .filter(|w| own.iter().any(|o| same_word(w, o)))
                .cloned()
                .collect();
            if hits.is_empty() {
                continue;
            }
            let entry = found.entry(skill.id.clone()).or_insert_with(|| SkillMatch {
                skill: skill.id.clone(),
                words: Vec::new(),
                agents: Vec::new(),
            });
            for hit in hits {
                if !entry.words.contains(&hit) {
                    entry.words.push(hit);
                }
            }
            entry.agents.push(name.clone());
        }
    }
    found.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_match_whole_or_by_their_first_six_letters() {
        assert!(same_word("summarise", "summarize"));
        assert!(same_word("translate", "translate"));
        assert!(!same_word("sum", "summarize"), "too short to stem");
        assert!(!same_word("transcript", "translate"));
        let said: Vec<String> = words("Please SUMMARISE this: a to-do").collect();
        assert_eq!(said, ["please", "summarise", "this"]);
    }
}
