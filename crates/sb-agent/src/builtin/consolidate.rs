//! `consolidate`: the memory-consolidation story. One transcript per non-empty line; a
//! progress update after each (a pause stands in for the LLM call); facts are extracted,
//! and two contradicting facts make the agent ask the user which one holds. Each answer
//! (a later user message on the same task) resolves one contradiction.

use std::collections::BTreeSet;
use std::time::Duration;

use async_trait::async_trait;

use crate::api::{Agent, AgentDescriptor, AgentError, Reporter, TaskContext};

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
/// A denied meat word is a diet only next to one of these: "never eats meat" is a habit,
/// "never ordered a steak" is one occasion that says nothing about the next.
const EATING_VERBS: [&str; 5] = ["eat", "eats", "eaten", "eating", "ate"];
const NEGATORS: [&str; 3] = ["not", "never", "no"];
/// Conjunctions a negation does not reach past: in "vegetarian and never eat meat" the
/// "never" is about eating meat, not about being vegetarian. "or" is not one of them:
/// after a negation it adds to what is denied ("never eats meat or fish"). Nor is "yet",
/// which usually sits inside a negation ("has not yet ordered").
const CLAUSE_BREAKS: [&str; 7] = [
    "and", "but", "although", "though", "while", "whereas", "because",
];
const CLAUSE_PUNCTUATION: [char; 6] = [',', ';', ':', '.', '!', '?'];
const FILLER: [&str; 9] = ["the", "a", "an", "user", "is", "does", "do", "did", "to"];

/// A content word of a fact, and whether a negation before it in its clause denies it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Term {
    word: String,
    denied: bool,
}

impl Term {
    fn is_one_of(&self, list: &[&str]) -> bool {
        list.contains(&self.word.as_str())
    }
}

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

/// The fact's clauses, each as its content words.
fn clauses(fact: &str) -> Vec<Vec<Term>> {
    let mut clauses = Vec::new();
    for part in fact.split(CLAUSE_PUNCTUATION) {
        let words = words(part);
        for clause in words.split(|w| CLAUSE_BREAKS.contains(&w.as_str())) {
            clauses.push(clause_terms(clause));
        }
    }
    clauses
}

/// A negation denies what follows it in its clause ("is not vegetarian", "never eat
/// meat") and leaves what came before it alone ("eats no meat" still eats).
fn clause_terms(clause: &[String]) -> Vec<Term> {
    let mut denied = false;
    let mut terms = Vec::new();
    for word in clause {
        if NEGATORS.contains(&word.as_str()) {
            denied = true;
        } else if !FILLER.contains(&word.as_str()) {
            terms.push(Term {
                word: word.clone(),
                denied,
            });
        }
    }
    terms
}

fn content_words(text: &str) -> BTreeSet<String> {
    clauses(text)
        .into_iter()
        .flatten()
        .map(|term| term.word)
        .collect()
}

/// Whether two facts cannot both hold: a statement and its negation, or a meat-free
/// diet next to eating meat.
pub(crate) fn contradicts(a: &str, b: &str) -> bool {
    let (a, b) = (clauses(a), clauses(b));
    denies_the_other(&a, &b)
        || (keeps_meat_free(&a) && eats_meat(&b))
        || (keeps_meat_free(&b) && eats_meat(&a))
}

/// The same words with different ones denied: "the user likes cats" against "the user
/// does not like cats", or "likes cats, not dogs" against "likes dogs, not cats".
fn denies_the_other(a: &[Vec<Term>], b: &[Vec<Term>]) -> bool {
    let term_set = |fact: &[Vec<Term>]| fact.iter().flatten().cloned().collect::<BTreeSet<_>>();
    let word_set = |terms: &BTreeSet<Term>| {
        terms
            .iter()
            .map(|term| term.word.clone())
            .collect::<BTreeSet<_>>()
    };
    let (terms_a, terms_b) = (term_set(a), term_set(b));
    terms_a != terms_b && word_set(&terms_a) == word_set(&terms_b)
}

/// A meat-free diet, claimed ("is vegetarian") or described ("never eats meat").
fn keeps_meat_free(fact: &[Vec<Term>]) -> bool {
    fact.iter()
        .any(|clause| claims_a_meat_free_diet(clause) || refuses_meat(clause))
}

fn claims_a_meat_free_diet(clause: &[Term]) -> bool {
    clause
        .iter()
        .any(|term| !term.denied && term.is_one_of(&DIET_WORDS))
}

fn refuses_meat(clause: &[Term]) -> bool {
    clause.iter().any(|term| term.is_one_of(&EATING_VERBS))
        && clause
            .iter()
            .any(|term| term.denied && term.is_one_of(&MEAT_WORDS))
}

/// Meat the fact does not deny: "ordered a steak", "had a burger", "ate chicken".
fn eats_meat(fact: &[Vec<Term>]) -> bool {
    fact.iter()
        .flatten()
        .any(|term| !term.denied && term.is_one_of(&MEAT_WORDS))
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
    let answer_words = content_words(answer);
    if answer_words.contains("both") {
        return;
    }
    let score = |fact: &str| content_words(fact).intersection(&answer_words).count();
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
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use sb_protocol::{Message, Role, TaskState};
    use sb_store::{LocalBus, MemoryStore};
    use sb_tasks::{LocalTaskService, NewTask, Scope, TaskService, TaskUpdate};

    use super::*;
    use crate::AgentHost;

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

    const SEED_DIET: &str = "The user said they are vegetarian and never eat meat.";
    const SEED_STEAK: &str = "The user ordered a steak three weeks ago and loved it.";

    #[test]
    fn the_seeds_own_transcripts_contradict() {
        assert!(contradicts(SEED_DIET, SEED_STEAK));
        assert!(contradicts(SEED_STEAK, SEED_DIET));
    }

    #[test]
    fn a_meat_free_diet_in_other_words_contradicts_eating_meat() {
        let pairs = [
            (
                "The user is a vegetarian.",
                "Last week the user had a burger.",
            ),
            (
                "The user doesn't eat meat",
                "the user ate chicken yesterday",
            ),
            ("The user never eats meat or fish", "The user loves fish"),
            (
                "The user is vegan, and eats no meat",
                "the user ordered steaks",
            ),
            (
                "The user has not eaten meat in years",
                "The user had bacon for breakfast",
            ),
            (
                "Although the user is not hungry, they are vegetarian",
                "The user ordered a burger",
            ),
            (
                "The user is vegetarian but ordered a salad",
                "The user ate a sausage and a salad",
            ),
        ];
        for (diet, meat) in pairs {
            assert!(contradicts(diet, meat), "{diet:?} against {meat:?}");
            assert!(contradicts(meat, diet), "{meat:?} against {diet:?}");
        }
    }

    #[test]
    fn a_negation_leaves_what_it_does_not_negate_alone() {
        let pairs = [
            ("The user is not vegetarian", "The user ordered a steak"),
            (
                "The user is vegetarian and never eats meat",
                "The user ordered a salad",
            ),
            ("The user is vegetarian", "The user never ordered a steak"),
            ("The user never ordered a steak", "The user had a burger"),
            ("The user is no longer vegan", "The user ate chicken"),
            ("The user doesn't eat meat", "The user never ate chicken"),
        ];
        for (a, b) in pairs {
            assert!(!contradicts(a, b), "{a:?} against {b:?}");
            assert!(!contradicts(b, a), "{b:?} against {a:?}");
        }
    }

    #[test]
    fn a_statement_contradicts_its_negation_clause_by_clause() {
        assert!(contradicts(
            "the user likes cats",
            "the user does not like cats"
        ));
        assert!(contradicts(
            "the user likes cats, not dogs",
            "the user likes dogs, not cats"
        ));
        assert!(contradicts(
            "the user is vegetarian",
            "the user isn't vegetarian"
        ));
        assert!(!contradicts(
            "the user likes cats and does not like dogs",
            "the user does not like dogs and likes cats"
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

    fn scope() -> Scope {
        Scope {
            agent: "consolidate".into(),
            owner: String::new(),
        }
    }

    fn from_the_user(text: &str) -> Message {
        Message {
            role: Role::User,
            ..Message::agent_text(text)
        }
    }

    /// The agent, without its pause, hosted as "consolidate" over an in-memory store.
    fn hosted() -> (AgentHost, Arc<LocalTaskService>) {
        let bus = Arc::new(LocalBus::new());
        let tasks = Arc::new(LocalTaskService::new(
            Arc::new(MemoryStore::new()),
            bus.clone(),
        ));
        let agent: Arc<dyn Agent> = Arc::new(ConsolidateAgent {
            pause: Duration::ZERO,
        });
        let agents = BTreeMap::from([("consolidate".to_owned(), agent)]);
        (AgentHost::new(agents, tasks.clone(), bus), tasks)
    }

    #[tokio::test]
    async fn the_seeds_transcripts_make_the_agent_ask_and_an_answer_completes_it() {
        let (host, tasks) = hosted();
        let transcripts = format!("{SEED_DIET}\n{SEED_STEAK}\n");
        let new = NewTask {
            scope: scope(),
            message: from_the_user(&transcripts),
            metadata: None,
        };
        let launched = host
            .create_with_first_reports(new, sb_store::TaskRecord::clone)
            .await
            .unwrap();
        let (created, turn) = (launched.submitted, launched.turn);
        turn.await.unwrap().unwrap();
        let id = &created.task.id;

        let asked = tasks.get(&scope(), id).await.unwrap();
        assert_eq!(asked.state(), TaskState::InputRequired);
        let question = asked.task.status.message.as_ref().unwrap().text();
        assert!(
            question.contains("never eat meat") && question.contains("ordered a steak"),
            "{question}"
        );

        let answer = from_the_user("vegetarian, they never eat meat");
        let resume = TaskUpdate::Resume {
            message: answer.clone(),
        };
        let resumed = tasks.update(id, resume).await.unwrap();
        host.spawn_turn(&resumed, answer).await.unwrap().unwrap();
        let done = tasks.get(&scope(), id).await.unwrap();
        assert_eq!(done.state(), TaskState::Completed);
        let facts = done.task.artifacts[0].parts[0].as_text().unwrap();
        assert_eq!(
            facts,
            "- The user said they are vegetarian and never eat meat"
        );
    }
}
