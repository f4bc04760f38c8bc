//! A task, its status at a point in time, and its lifecycle state with every spelling
//! of it the versions use.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{Artifact, Message, Metadata, enum_from_value};
use crate::serde_util;

/// The lifecycle state of a task (spec §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaskState {
    Unspecified,
    Submitted,
    Working,
    Completed,
    Failed,
    Canceled,
    InputRequired,
    Rejected,
    AuthRequired,
}

impl TaskState {
    pub const ALL: [TaskState; 9] = [
        Self::Unspecified,
        Self::Submitted,
        Self::Working,
        Self::Completed,
        Self::Failed,
        Self::Canceled,
        Self::InputRequired,
        Self::Rejected,
        Self::AuthRequired,
    ];

    /// The 1.0 enum name, e.g. `TASK_STATE_WORKING`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "TASK_STATE_UNSPECIFIED",
            Self::Submitted => "TASK_STATE_SUBMITTED",
            Self::Working => "TASK_STATE_WORKING",
            Self::Completed => "TASK_STATE_COMPLETED",
            Self::Failed => "TASK_STATE_FAILED",
            Self::Canceled => "TASK_STATE_CANCELED",
            Self::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            Self::Rejected => "TASK_STATE_REJECTED",
            Self::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }

    /// The 0.3 JSON-RPC (kind-JSON) name, e.g. `input-required`.
    pub fn as_v03_str(self) -> &'static str {
        match self {
            Self::Unspecified => "unknown",
            Self::Submitted => "submitted",
            Self::Working => "working",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
            Self::InputRequired => "input-required",
            Self::Rejected => "rejected",
            Self::AuthRequired => "auth-required",
        }
    }

    /// The proto enum number.
    pub fn number(self) -> i64 {
        match self {
            Self::Unspecified => 0,
            Self::Submitted => 1,
            Self::Working => 2,
            Self::Completed => 3,
            Self::Failed => 4,
            Self::Canceled => 5,
            Self::InputRequired => 6,
            Self::Rejected => 7,
            Self::AuthRequired => 8,
        }
    }

    /// Parses any spelling a peer may send: 1.0 names, 0.3 names, the 0.3 REST
    /// `TASK_STATE_CANCELLED`, or the enum number.
    pub fn parse(text: &str) -> Option<TaskState> {
        let text = text.trim();
        if let Ok(n) = text.parse::<i64>() {
            return Self::from_number(n);
        }
        if text == "TASK_STATE_CANCELLED" || text == "cancelled" {
            return Some(Self::Canceled);
        }
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == text || s.as_v03_str() == text)
    }

    pub fn from_number(n: i64) -> Option<TaskState> {
        Self::ALL.into_iter().find(|s| s.number() == n)
    }

    /// Terminal states never change again (spec §3.1.1).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Canceled | Self::Rejected
        )
    }

    /// Interrupted states wait for the client (input or out-of-band auth).
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }
}

impl Serialize for TaskState {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        enum_from_value(Value::deserialize(de)?, TaskState::parse, "task state")
            .map_err(serde::de::Error::custom)
    }
}

/// The status of a task at a point in time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "serde_util::opt_timestamp"
    )]
    pub timestamp: Option<DateTime<Utc>>,
}

/// A unit of work, with its status, outputs and conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    #[serde(default, alias = "context_id")]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Task {
    /// A copy with at most the `limit` most recent history messages (spec §3.2.4);
    /// `None` keeps everything, `Some(0)` drops the history.
    pub fn with_history_limit(mut self, limit: Option<usize>) -> Task {
        if let Some(limit) = limit {
            let keep_from = self.history.len().saturating_sub(limit);
            self.history.drain(..keep_from);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Task, TaskState};
    use crate::model::{Message, Role};

    #[test]
    fn task_round_trips_protojson() {
        let wire = json!({
            "id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-02T03:04:05.750Z"},
            "artifacts": [{"artifactId": "a1", "name": "out",
                           "parts": [{"text": "chunk1"}, {"raw": "AAE=", "mediaType": "application/octet-stream"},
                                     {"url": "https://x/y", "filename": "y"}, {"data": [1, 2]}]}],
            "history": [{"messageId": "u1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}]
        });
        let task: Task = serde_json::from_value(wire.clone()).unwrap();
        assert_eq!(serde_json::to_value(&task).unwrap(), wire);
    }

    #[test]
    fn input_is_lenient_like_protojson() {
        let task: Task = serde_json::from_value(json!({
            "id": "t1", "context_id": "c1", "status": {"state": 6},
            "history": [{"message_id": "m", "role": 1, "parts": [{"text": "x"}]}]
        }))
        .unwrap();
        assert_eq!(task.status.state, TaskState::InputRequired);
        assert_eq!(task.context_id, "c1");
        assert_eq!(task.history[0].role, Role::User);
    }

    #[test]
    fn history_limit_keeps_most_recent() {
        let mut task: Task =
            serde_json::from_value(json!({"id": "t", "status": {"state": 2}})).unwrap();
        for i in 0..3 {
            let mut m = Message::agent_text(format!("m{i}"));
            m.message_id = format!("m{i}");
            task.history.push(m);
        }
        let limited = task.clone().with_history_limit(Some(2));
        assert_eq!(limited.history[0].message_id, "m1");
        assert!(task.clone().with_history_limit(Some(0)).history.is_empty());
        assert_eq!(task.with_history_limit(None).history.len(), 3);
    }
}
