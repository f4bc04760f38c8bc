//! What a task puts out ([`Artifact`]) and what carries tasks, messages and their
//! updates to the client: the status and artifact update events, one event of a stream
//! ([`StreamResponse`]) and the result of SendMessage ([`SendMessageResponse`]).

use serde::{Deserialize, Serialize};

use super::{Message, Metadata, Part, Task, TaskState, TaskStatus, is_false};
use crate::serde_util;

/// An output of a task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(default, alias = "artifact_id")]
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A change of a task's status, as streamed and pushed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// A new or extended artifact, as streamed and pushed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(alias = "context_id")]
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(
        default,
        skip_serializing_if = "is_false",
        deserialize_with = "serde_util::lenient_bool"
    )]
    pub append: bool,
    #[serde(
        default,
        skip_serializing_if = "is_false",
        alias = "last_chunk",
        deserialize_with = "serde_util::lenient_bool"
    )]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// One event of a stream (1.0 `StreamResponse`): exactly one member is set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// The task state this event leaves the task in, when it says.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            Self::Task(t) => Some(t.status.state),
            Self::StatusUpdate(s) => Some(s.status.state),
            Self::Message(_) | Self::ArtifactUpdate(_) => None,
        }
    }

    /// Whether a stream ends after this event (terminal or interrupted state, or a
    /// message-only reply).
    pub fn ends_stream(&self) -> bool {
        match self {
            Self::Message(_) => true,
            other => other
                .state()
                .is_some_and(|s| s.is_terminal() || s.is_interrupted()),
        }
    }
}

/// The result of SendMessage: a task or a direct message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent};

    #[test]
    fn stream_response_is_member_named() {
        let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            metadata: None,
        });
        assert_eq!(
            serde_json::to_value(&ev).unwrap(),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}})
        );
        assert!(!ev.ends_stream());
    }
}
