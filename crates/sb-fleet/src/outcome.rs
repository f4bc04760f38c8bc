//! What a finished task says about its agent: the [`Outcome`] read from its record —
//! the skill it was asked for, how it ended and why, how long it took, and what it cost
//! when the agent reported the fleet guide's `cost-v1` DataPart.

use sb_protocol::delegation::skill_of as named_skill;
use sb_protocol::{Message, PartContent, Task, TaskState};
use sb_store::TaskRecord;
use serde_json::Value;

/// Longest failure reason kept, in characters: reasons are grouped by their text, and a
/// long one is mostly detail that makes every occurrence different.
const REASON_CHARS: usize = 160;

/// A finished task, as fleet health counts it.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub agent: String,
    /// Empty when the task named no skill.
    pub skill: String,
    /// A terminal state.
    pub state: TaskState,
    /// Why it did not complete: the first line of its final status message.
    pub reason: Option<String>,
    pub duration_ms: u64,
    /// `costUsd` of the task's `cost-v1` part, when it reported one.
    pub cost_usd: Option<f64>,
}

impl Outcome {
    /// The outcome of a finished task; `None` while it is not finished.
    pub fn of(record: &TaskRecord) -> Option<Outcome> {
        let task = &record.task;
        let state = task.status.state;
        if !state.is_terminal() {
            return None;
        }
        let ended = task.status.timestamp.unwrap_or_else(chrono::Utc::now);
        let duration_ms = (ended - record.created_at).num_milliseconds().max(0) as u64;
        let reason = match state {
            TaskState::Completed => None,
            _ => Some(reason_of(task.status.message.as_ref())),
        };
        Some(Outcome {
            agent: record.agent.clone(),
            skill: skill_of(task),
            state,
            reason,
            duration_ms,
            cost_usd: cost_of(task),
        })
    }
}

/// The skill the task was asked for: `skill` or `skillHint` in the task's metadata
/// (the request's), else in its first message's.
pub fn skill_of(task: &Task) -> String {
    named_skill(task.metadata.as_ref())
        .or_else(|| named_skill(task.history.first()?.metadata.as_ref()))
        .unwrap_or_default()
}

fn reason_of(message: Option<&Message>) -> String {
    let text = message.map(Message::text).unwrap_or_default();
    let line = text.lines().map(str::trim).find(|l| !l.is_empty());
    match line {
        Some(line) => line.chars().take(REASON_CHARS).collect(),
        None => "no reason given".to_owned(),
    }
}

/// `costUsd` of the task's `cost-v1` DataPart (`{usage, durationMs, costUsd?}`): the
/// final status message's, else the last artifact's that has one.
pub fn cost_of(task: &Task) -> Option<f64> {
    let status_parts = task.status.message.iter().flat_map(|m| m.parts.iter());
    let artifact_parts = task.artifacts.iter().rev().flat_map(|a| a.parts.iter());
    status_parts
        .chain(artifact_parts)
        .find_map(|part| match &part.content {
            PartContent::Data(data) if is_cost_v1(data) => data.get("costUsd")?.as_f64(),
            _ => None,
        })
        .filter(|usd| usd.is_finite() && *usd >= 0.0)
}

/// A `cost-v1` payload: an object with `usage` and `durationMs`, or with `costUsd`.
fn is_cost_v1(data: &Value) -> bool {
    let Some(object) = data.as_object() else {
        return false;
    };
    object.get("costUsd").is_some_and(Value::is_number)
        || (object.contains_key("usage") && object.get("durationMs").is_some_and(Value::is_number))
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, Utc};
    use sb_protocol::{Artifact, Part, Role, TaskStatus};
    use serde_json::json;

    use super::*;

    fn record(state: TaskState, metadata: Option<Value>, message: Option<Message>) -> TaskRecord {
        let created = Utc::now() - Duration::milliseconds(1500);
        let mut first = Message::agent_text("summarize this");
        first.role = Role::User;
        TaskRecord {
            task: Task {
                id: "t".into(),
                context_id: "c".into(),
                status: TaskStatus {
                    state,
                    message,
                    timestamp: Some(created + Duration::milliseconds(1200)),
                },
                artifacts: Vec::new(),
                history: vec![first],
                metadata: metadata.and_then(|m| m.as_object().cloned()),
            },
            seq: 3,
            agent: "writer".into(),
            owner: String::new(),
            created_at: created,
            task_json: Default::default(),
        }
    }

    #[test]
    fn an_unfinished_task_has_no_outcome() {
        assert_eq!(Outcome::of(&record(TaskState::Working, None, None)), None);
        assert_eq!(
            Outcome::of(&record(TaskState::InputRequired, None, None)),
            None
        );
    }

    #[test]
    fn a_completed_task_counts_its_duration_and_skill() {
        let done = record(
            TaskState::Completed,
            Some(json!({"skillHint": "summarize"})),
            None,
        );
        let outcome = Outcome::of(&done).unwrap();
        assert_eq!(outcome.skill, "summarize");
        assert_eq!(outcome.duration_ms, 1200);
        assert_eq!(outcome.reason, None);
        assert_eq!(outcome.cost_usd, None);
    }

    #[test]
    fn skill_wins_over_the_hint_and_the_first_message_is_the_fallback() {
        let both = record(
            TaskState::Completed,
            Some(json!({"skill": "a", "skillHint": "b"})),
            None,
        );
        assert_eq!(skill_of(&both.task), "a");
        let mut in_message = record(TaskState::Completed, None, None);
        in_message.task.history[0].metadata = json!({"skill": "m"}).as_object().cloned();
        assert_eq!(skill_of(&in_message.task), "m");
        assert_eq!(skill_of(&record(TaskState::Completed, None, None).task), "");
    }

    #[test]
    fn a_failure_keeps_the_first_line_of_its_reason() {
        let message = Message::agent_text("\n  upstream timed out  \nstack trace…");
        let failed = record(TaskState::Failed, None, Some(message));
        assert_eq!(
            Outcome::of(&failed).unwrap().reason.as_deref(),
            Some("upstream timed out")
        );
        let silent = record(TaskState::Rejected, None, None);
        assert_eq!(
            Outcome::of(&silent).unwrap().reason.as_deref(),
            Some("no reason given")
        );
    }

    #[test]
    fn cost_comes_from_a_cost_v1_part_in_the_status_or_an_artifact() {
        let cost = json!({"usage": {"input_tokens": 10}, "durationMs": 900, "costUsd": 0.0125});
        let mut message = Message::agent_text("done");
        message.parts.push(Part::data(cost.clone()));
        let in_status = record(TaskState::Completed, None, Some(message));
        assert_eq!(cost_of(&in_status.task), Some(0.0125));

        let mut in_artifact = record(TaskState::Completed, None, None);
        in_artifact.task.artifacts.push(Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![Part::data(json!({"answer": 42})), Part::data(cost)],
            metadata: None,
            extensions: Vec::new(),
        });
        assert_eq!(cost_of(&in_artifact.task), Some(0.0125));

        let mut other_data = record(TaskState::Completed, None, None);
        other_data.task.status.message = Some(Message {
            parts: vec![
                Part::data(json!({"costUsd": "free"})),
                Part::data(json!({"usage": {}})),
            ],
            ..Message::agent_text("")
        });
        assert_eq!(cost_of(&other_data.task), None, "not cost-v1 parts");
    }
}
