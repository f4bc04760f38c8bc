//! The two A2A 0.3 dialects, converted to and from the internal (1.0) model.
//!
//! * [`Dialect03::KindJson`]: the JSON-RPC form of `types.ts` (`kind` discriminators,
//!   `input-required`, `final`).
//! * [`Dialect03::ProtoJson`]: the HTTP+JSON form, ProtoJSON of the 0.3 proto
//!   (`content` instead of `parts`, `TASK_STATE_CANCELLED`, `fileWithUri`).
//!
//! Output is built from the typed model; input is normalised JSON-to-JSON into the 1.0
//! shape and then parsed by the 1.0 types, so both versions share one validation path.
//! Mapping rules are the SDKs' (digest §3.6): `bytes`↔`raw`, `uri`↔`url`,
//! `name`↔`filename`, `mimeType`↔`mediaType`, non-object data wrapped as `{"value":…}`.
//!
//! - `task`: tasks and what they hold (statuses, messages, parts, artifacts) and stream
//!   events, to and from 0.3;
//! - `request`: SendMessage's parameters and push-notification configs, to and from 0.3;
//! - `response`: the client's side: 0.3 tasks, SendMessage results, stream events and
//!   push configs read into the 1.0 shape, and SendMessage's parameters written in 0.3;
//! - here: which dialect ([`Dialect03`]) and the helpers that build 0.3 objects.

mod request;
mod response;
mod task;

use serde_json::{Map, Value};

pub use request::{
    push_config_inner_to_v03, push_config_to_v03, push_inner_from_v03, send_params_from_v03,
};
pub use response::{
    message_or_task_from_v03, push_config_from_v03, send_params_to_v03, stream_event_from_v03,
    task_from_v03,
};
pub use task::{
    artifact_to_v03, message_from_v03, message_to_v03, part_to_v03, state_to_v03, status_to_v03,
    stream_event_to_v03, task_to_v03,
};

/// Which 0.3 JSON shape to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect03 {
    KindJson,
    ProtoJson,
}

// === output ===

fn put<T: Into<Value>>(obj: &mut Map<String, Value>, key: &str, value: Option<T>) {
    if let Some(v) = value {
        obj.insert(key.to_owned(), v.into());
    }
}

fn put_vec(obj: &mut Map<String, Value>, key: &str, items: Vec<Value>) {
    if !items.is_empty() {
        obj.insert(key.to_owned(), Value::Array(items));
    }
}
