//! The task-state service over gRPC: [`TaskStateServer`] wraps the in-process services;
//! [`TaskStateClient`] implements [`sb_tasks::TaskService`],
//! [`sb_webhooks::PushConfigService`] and [`sb_agent::TurnRunner`] for processes that
//! reach task state across the network. This module holds the conversions both share.

mod client;
mod server;

pub use client::TaskStateClient;
pub use server::TaskStateServer;

use crate::wire::{from_json, malformed, to_json};
use sb_protocol::{A2AError, TaskState, Version};
use sb_store::{StoredEvent, TaskRecord};
use sb_tasks::Scope;

use crate::pb;

pub(super) fn scope_pb(scope: &Scope) -> Option<pb::Scope> {
    Some(pb::Scope {
        agent: scope.agent.clone(),
        owner: scope.owner.clone(),
    })
}

pub(super) fn scope_from(scope: Option<pb::Scope>) -> Scope {
    let scope = scope.unwrap_or_default();
    Scope {
        agent: scope.agent,
        owner: scope.owner,
    }
}

/// A record's stored form, its task's JSON reused when the store made it already.
pub(crate) fn record_pb(record: &TaskRecord) -> pb::TaskRecord {
    pb::TaskRecord {
        // As `to_json`: serializing our own model types cannot fail.
        json: record.to_stored_json().unwrap_or_default(),
    }
}

/// A record as it came, its task's JSON kept for a reply made from it.
pub(crate) fn record_from(record: Option<pb::TaskRecord>) -> Result<TaskRecord, A2AError> {
    let record =
        record.ok_or_else(|| A2AError::internal("task record missing on the internal API"))?;
    TaskRecord::from_stored_json(&record.json).map_err(|e| malformed("task record", &e))
}

pub(crate) fn event_pb(event: &StoredEvent) -> pb::TaskEvent {
    pb::TaskEvent {
        task_id: event.task_id.to_string(),
        seq: event.seq,
        // Made once for the store and every stream that sends it on.
        json: event.json.render(&event.event).as_bytes().to_vec(),
    }
}

pub(crate) fn event_from(event: pb::TaskEvent) -> Result<StoredEvent, A2AError> {
    let decoded = from_json(&event.json, "task event")?;
    // The JSON it came as is the JSON a gateway sends on: no second serialisation.
    let json = String::from_utf8(event.json)
        .map(sb_store::EventJson::known)
        .unwrap_or_default();
    Ok(StoredEvent {
        task_id: event.task_id.into(),
        seq: event.seq,
        event: decoded,
        traceparent: None,
        json,
    })
}

pub(super) fn version_from(raw: &str) -> Version {
    if raw == "0.3" {
        Version::V0_3
    } else {
        Version::V1_0
    }
}

pub(super) fn states_pb(states: &[TaskState]) -> Vec<String> {
    states.iter().map(|s| s.as_str().to_owned()).collect()
}

pub(super) fn states_from(states: &[String]) -> Result<Vec<TaskState>, A2AError> {
    states
        .iter()
        .map(|s| from_json(to_json(s).as_slice(), "task state"))
        .collect()
}

#[cfg(test)]
mod tests;
