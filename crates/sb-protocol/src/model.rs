//! The internal model, which is also the A2A 1.0 ProtoJSON wire form (`lf.a2a.v1`).
//!
//! Output follows ProtoJSON: lowerCamelCase names, enum names, defaults omitted. Input is
//! lenient as ProtoJSON parsers are: snake_case names, enum integers, int32 strings.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::serde_util::{self, decode_base64, encode_base64, json_kind};

pub type Metadata = Map<String, Value>;

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

/// Who sent a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Unspecified,
    User,
    Agent,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "ROLE_UNSPECIFIED",
            Self::User => "ROLE_USER",
            Self::Agent => "ROLE_AGENT",
        }
    }

    pub fn as_v03_str(self) -> &'static str {
        match self {
            Self::Unspecified => "unspecified",
            Self::User => "user",
            Self::Agent => "agent",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text.trim() {
            "ROLE_USER" | "user" | "1" => Some(Self::User),
            "ROLE_AGENT" | "agent" | "2" => Some(Self::Agent),
            "ROLE_UNSPECIFIED" | "0" => Some(Self::Unspecified),
            _ => None,
        }
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        enum_from_value(Value::deserialize(de)?, Role::parse, "role")
            .map_err(serde::de::Error::custom)
    }
}

fn enum_from_value<T>(value: Value, parse: fn(&str) -> Option<T>, what: &str) -> Result<T, String> {
    let parsed = match &value {
        Value::String(s) => parse(s),
        Value::Number(n) => parse(&n.to_string()),
        other => {
            return Err(format!(
                "{what} must be a string, found {}",
                json_kind(other)
            ));
        }
    };
    parsed.ok_or_else(|| format!("unknown {what} {value}"))
}

/// The content of a part: exactly one of text, raw bytes, a URL or any JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum PartContent {
    Text(String),
    Raw(Vec<u8>),
    Url(String),
    Data(Value),
}

/// A piece of message or artifact content (1.0 `Part`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PartWire", into = "PartWire")]
pub struct Part {
    pub content: PartContent,
    pub metadata: Option<Metadata>,
    pub filename: Option<String>,
    pub media_type: Option<String>,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Part {
        Part {
            content: PartContent::Text(text.into()),
            metadata: None,
            filename: None,
            media_type: None,
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    raw: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "media_type")]
    media_type: Option<String>,
}

/// Keeps an explicit JSON `null` in `data` as a present value.
fn present<'de, D: Deserializer<'de>>(de: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(de).map(Some)
}

impl TryFrom<PartWire> for Part {
    type Error = String;

    fn try_from(wire: PartWire) -> Result<Part, String> {
        let mut contents = Vec::new();
        if let Some(text) = wire.text {
            contents.push(PartContent::Text(text));
        }
        if let Some(raw) = wire.raw {
            contents.push(PartContent::Raw(
                decode_base64(&raw).map_err(|e| format!("part.raw is {e}"))?,
            ));
        }
        if let Some(url) = wire.url {
            contents.push(PartContent::Url(url));
        }
        if let Some(data) = wire.data {
            contents.push(PartContent::Data(data));
        }
        if contents.len() != 1 {
            return Err(format!(
                "a part must have exactly one of text, raw, url or data (found {})",
                contents.len()
            ));
        }
        let content = contents.remove(0);
        Ok(Part {
            content,
            metadata: wire.metadata,
            filename: wire.filename,
            media_type: wire.media_type,
        })
    }
}

impl From<Part> for PartWire {
    fn from(part: Part) -> PartWire {
        let mut wire = PartWire {
            text: None,
            raw: None,
            url: None,
            data: None,
            metadata: part.metadata,
            filename: part.filename,
            media_type: part.media_type,
        };
        match part.content {
            PartContent::Text(t) => wire.text = Some(t),
            PartContent::Raw(bytes) => wire.raw = Some(encode_base64(&bytes)),
            PartContent::Url(u) => wire.url = Some(u),
            PartContent::Data(d) => wire.data = Some(d),
        }
        wire
    }
}

/// One message between a user and an agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default, alias = "message_id")]
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "context_id")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "task_id")]
    pub task_id: Option<String>,
    #[serde(default = "unspecified_role")]
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "reference_task_ids"
    )]
    pub reference_task_ids: Vec<String>,
}

fn unspecified_role() -> Role {
    Role::Unspecified
}

impl Message {
    /// An agent message with one text part.
    pub fn agent_text(text: impl Into<String>) -> Message {
        Message {
            message_id: new_id(),
            context_id: None,
            task_id: None,
            role: Role::Agent,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// All text parts joined with newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.parts.iter().filter_map(Part::as_text).collect();
        texts.join("\n")
    }
}

/// Generates a fresh identifier: a UUIDv7, time-ordered with 74 random bits, so ids
/// made together sort together and the store's B-trees write a few hot pages per commit
/// instead of one random page per task.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
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

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
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

/// Where and how to push a task's events (1.0 flat form).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty", alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

/// Credentials the server sends with each push (`Authorization: <scheme> <credentials>`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    #[serde(default)]
    pub scheme: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn part_needs_exactly_one_content() {
        let two = serde_json::from_value::<Part>(json!({"text": "a", "url": "b"}));
        assert!(two.unwrap_err().to_string().contains("exactly one"));
        let none = serde_json::from_value::<Part>(json!({"metadata": {}}));
        assert!(none.is_err());
        let null_data: Part = serde_json::from_value(json!({"data": null})).unwrap();
        assert_eq!(null_data.content, PartContent::Data(Value::Null));
    }

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

    #[test]
    fn ids_are_unique_time_ordered_v7() {
        let ids: Vec<String> = (0..1000).map(|_| new_id()).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "ids sort in creation order"
        );
        assert_eq!(ids[0].len(), 36);
        assert_eq!(&ids[0][14..15], "7");
    }
}
