//! The internal model, which is also the A2A 1.0 ProtoJSON wire form (`lf.a2a.v1`).
//!
//! Output follows ProtoJSON: lowerCamelCase names, enum names, defaults omitted. Input is
//! lenient as ProtoJSON parsers are: snake_case names, enum integers, int32 strings.
//!
//! - `task`: a task, its status and its lifecycle state ([`Task`], [`TaskStatus`],
//!   [`TaskState`]);
//! - `message`: messages, their parts and who sent them ([`Message`], [`Part`],
//!   [`Role`]), and fresh identifiers ([`new_id`]);
//! - `event`: a task's outputs ([`Artifact`]) and what carries them to the client: the
//!   update events, [`StreamResponse`] and [`SendMessageResponse`];
//! - `push`: where and how to push a task's events ([`TaskPushNotificationConfig`]);
//! - here: [`Metadata`] and the serde helpers the others share.

mod event;
mod message;
mod push;
mod task;

use serde_json::{Map, Value};

use crate::serde_util::json_kind;

pub use event::{
    Artifact, SendMessageResponse, StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent,
};
pub use message::{Message, Part, PartContent, Role, media_type_essence, new_id};
pub use push::{AuthenticationInfo, TaskPushNotificationConfig};
pub use task::{Task, TaskState, TaskStatus};

pub type Metadata = Map<String, Value>;

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

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}
