//! [`TaskStateClient`]: the task-state service across the network, over a channel to
//! every replica, and the two ways its calls are sent. What it implements:
//! - `client/task_service.rs`: [`sb_tasks::TaskService`], request by request;
//! - `client/push_configs.rs`: [`sb_webhooks::PushConfigService`];
//! - `client/turn_runner.rs`: [`sb_agent::TurnRunner`], a turn followed on its progress
//!   stream;
//! - `client/per_turn.rs`: the client of one turn of a remote worker, its updates fenced
//!   by the turn's lease.

use std::sync::Arc;

use sb_tasks::NewTask;
use tonic::transport::Channel;

use super::scope_pb;
use crate::pb;
use crate::pb::task_state_client::TaskStateClient as Raw;
use crate::wire::to_json;

/// The client side, over a channel to every task-state replica.
#[derive(Debug, Clone)]
pub struct TaskStateClient {
    raw: Raw<Channel>,
    /// The agents served, and the code that decides direct replies at the edge (a pure
    /// function of the message) for those whose code this process has (the built-ins).
    local_agents: Arc<sb_agent::Roster>,
    /// A worker's turn (assignment id, agent): its updates are fenced by the turn's lease.
    turn: Option<(String, String)>,
}

impl TaskStateClient {
    /// `agents`: every agent served, with its code when this process has it (replaced
    /// when the registry changes).
    pub fn new(channel: Channel, agents: Arc<sb_agent::Roster>) -> TaskStateClient {
        TaskStateClient {
            raw: Raw::new(channel)
                .max_decoding_message_size(64 * 1024 * 1024)
                .max_encoding_message_size(64 * 1024 * 1024),
            local_agents: agents,
            turn: None,
        }
    }

    pub(super) fn raw(&self) -> Raw<Channel> {
        self.raw.clone()
    }
}

/// Sends an idempotent call, once more if it did not reach a replica.
macro_rules! idempotent {
    ($self:ident, $method:ident, $message:expr) => {{
        let message = $message;
        match $self.raw().$method(request(message.clone())).await {
            Err(status) if is_transient(&status) => $self.raw().$method(request(message)).await,
            other => other,
        }
        .map(Response::into_inner)
        .map_err(error_from)
    }};
}

/// Sends a call that must not be repeated blindly (it writes).
macro_rules! once {
    ($self:ident, $method:ident, $message:expr) => {{
        $self
            .raw()
            .$method(request($message))
            .await
            .map(Response::into_inner)
            .map_err(error_from)
    }};
}

// Declared after the macros, whose textual scope is what lets these modules use them.
mod per_turn;
mod push_configs;
mod task_service;
mod turn_runner;

pub(super) fn create_request(new: &NewTask) -> pb::CreateTaskRequest {
    pb::CreateTaskRequest {
        scope: scope_pb(&new.scope),
        message_json: to_json(&new.message),
        metadata_json: new.metadata.as_ref().map(to_json).unwrap_or_default(),
        wait_ms: 0,
    }
}
