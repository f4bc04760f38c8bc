//! `consolidate`: the memory-consolidation story. One transcript per non-empty line; a
//! progress update after each (a pause stands in for the LLM call); facts are extracted,
//! and two contradicting facts make the agent ask the user which one holds. Each answer
//! (a later user message on the same task) resolves one contradiction.

use std::collections::BTreeSet;
use std::time::Duration;

use async_trait::async_trait;

use crate::api::*;

#[derive(Debug, Clone)]
pub struct ConsolidateAgent {
    /// Time spent per transcript, standing in for the model call.
    pub pause: Duration,
}

impl Default for ConsolidateAgent {
    fn default() -> Self {
        ConsolidateAgent {
            pause: Duration::from_millis(200),
        }
    }
}

const DIET_WORDS: [&str; 2] = ["vegetarian", "vegan"];
const MEAT_WORDS: [&str; 11] = [
    "steak", "beef", "chicken", "pork", "bacon", "ham", "burger", "meat", "lamb", "sausage", "fish",
];
const NEGATORS: [&str; 3] = ["not", "never", "no"];
const FILLER: [&str; 10] = [
    "the", "a", "an", "user", "is", "does", "do", "did", "to", "and",
];

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .replace("n't", " not")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            w.strip_suffix('s')
                .filter(|s| s.len() > 3)
                .unwrap_or(w)
                .to_owned()
        })
        .collect()
}

fn is_negated(words: &[String]) -> bool {
    words.iter().any(|w| NEGATORS.contains(&w.as_str()))
}

fn content_words(words: &[String]) -> BTreeSet<String> {
    words
        .iter()
        .filter(|w| !NEGATORS.contains(&w.as_str()) && !FILLER.contains(&w.as_str()))
        .cloned()
        .collect()
}

/// Whether two facts cannot both hold: a statement and its negation, or a meat-free
/// diet next to eating meat.
pub(crate) fn contradicts(a: &str, b: &str) -> bool {
    let (wa, wb) = (words(a), words(b));
    let negation = is_negated(&wa) != is_negated(&wb) && content_words(&wa) == content_words(&wb);
    let diet = |x: &[String], y: &[String]| {
        !is_negated(x)
            && x.iter().any(|w| DIET_WORDS.contains(&w.as_str()))
            && y.iter().any(|w| MEAT_WORDS.contains(&w.as_str()))
    };
    negation || diet(&wa, &wb) || diet(&wb, &wa)
}

fn extract_facts(transcripts: &str) -> Vec<String> {
    let mut facts: Vec<String> = Vec::new();
    for line in transcripts.lines() {
        let fact = line
            .trim()
            .trim_end_matches(['.', '!', ';'])
            .trim()
            .to_owned();
        if !fact.is_empty() && !facts.iter().any(|f| f.eq_ignore_ascii_case(&fact)) {
            facts.push(fact);
        }
    }
    facts
}

/// Keeps the fact the answer points at (by shared words), or both if it says so.
fn resolve(facts: &mut Vec<String>, i: usize, j: usize, answer: &str) {
    let answer_words = content_words(&words(answer));
    if answer_words.contains("both") {
        return;
    }
    let score = |fact: &str| {
        content_words(&words(fact))
            .intersection(&answer_words)
            .count()
    };
    let (si, sj) = (score(&facts[i]), score(&facts[j]));
    let drop = match si.cmp(&sj) {
        std::cmp::Ordering::Greater => Some(j),
        std::cmp::Ordering::Less => Some(i),
        std::cmp::Ordering::Equal => None,
    };
    match drop {
        Some(index) => {
            facts.remove(index);
        }
        None => facts.push(format!("clarified by the user: {}", answer.trim())),
    }
}

/// Walks the contradictions in order, resolving each with the next answer. Returns the
/// first contradiction left without an answer, if any.
fn consolidate(facts: &mut Vec<String>, answers: &[String]) -> Option<(String, String)> {
    let mut answers = answers.iter();
    'scan: loop {
        for i in 0..facts.len() {
            for j in i + 1..facts.len() {
                if contradicts(&facts[i], &facts[j]) {
                    let Some(answer) = answers.next() else {
                        return Some((facts[i].clone(), facts[j].clone()));
                    };
                    resolve(facts, i, j, answer);
                    continue 'scan;
                }
            }
        }
        return None;
    }
}

#[async_trait]
impl Agent for ConsolidateAgent {
    fn describe(&self) -> AgentDescriptor {
        AgentDescriptor {
            description:
                "Consolidates conversation transcripts (one per line) into a list of facts, \
                          asking the user when two facts contradict each other."
                    .into(),
            skills: vec![super::skill(
                "consolidate",
                "Memory consolidation",
                "Extracts facts from transcripts and resolves contradictions with the user",
                &["memory", "facts", "input-required"],
                &["the user is vegetarian\nthe user ordered a steak"],
            )],
            input_modes: super::text_modes(),
            output_modes: super::text_modes(),
        }
    }

    async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
        let mut user_messages = ctx.user_messages().map(|m| m.text());
        let transcripts = user_messages.next().unwrap_or_else(|| ctx.message.text());
        let answers: Vec<String> = user_messages.collect();
        let lines = transcripts.lines().filter(|l| !l.trim().is_empty()).count();
        if lines == 0 {
            reporter
                .reject("send at least one transcript, one per line".into())
                .await?;
            return Ok(());
        }
        if answers.is_empty() {
            for k in 1..=lines {
                tokio::select! {
                    () = tokio::time::sleep(self.pause) => {}
                    () = ctx.cancel.cancelled() => return Ok(()),
                }
                reporter
                    .working(Some(format!("transcript {k}/{lines}")))
                    .await?;
            }
        } else {
            reporter
                .working(Some("applying your answer".into()))
                .await?;
        }
        let mut facts = extract_facts(&transcripts);
        if let Some((a, b)) = consolidate(&mut facts, &answers) {
            let question = format!(
                "These facts contradict each other: \"{a}\" and \"{b}\". Which one is true? \
                 Reply with the fact to keep, or \"both\"."
            );
            reporter.input_required(question).await?;
            return Ok(());
        }
        // One delta per fact, as an LLM would produce them.
        for (i, fact) in facts.iter().enumerate() {
            let line = if i == 0 {
                format!("- {fact}")
            } else {
                format!("\n- {fact}")
            };
            reporter.stream_text("facts", "facts", &line).await?;
        }
        reporter
            .complete(Some(format!(
                "consolidated {} facts from {lines} transcripts",
                facts.len()
            )))
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_contradictions() {
        assert!(contradicts(
            "the user is vegetarian",
            "the user ordered a steak"
        ));
        assert!(contradicts(
            "The user ordered a steak.",
            "the user is vegan"
        ));
        assert!(contradicts(
            "the user likes coffee",
            "the user doesn't like coffee"
        ));
        assert!(!contradicts("the user likes coffee", "the user likes tea"));
        assert!(!contradicts(
            "the user is not vegetarian",
            "the user ordered a steak"
        ));
    }

    #[test]
    fn answers_resolve_in_order() {
        let mut facts = extract_facts(
            "the user is vegetarian\nthe user lives in Paris\nthe user ordered a steak\n",
        );
        let open = consolidate(&mut facts.clone(), &[]);
        assert_eq!(
            open,
            Some((
                "the user is vegetarian".into(),
                "the user ordered a steak".into()
            ))
        );
        assert_eq!(consolidate(&mut facts, &["yes, vegetarian".into()]), None);
        assert_eq!(
            facts,
            vec!["the user is vegetarian", "the user lives in Paris"]
        );
    }
}
