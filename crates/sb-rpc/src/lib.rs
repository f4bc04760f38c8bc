//! The internal gRPC API between Switchboard's services (proto/switchboard/internal/v1).
//!
//! Each service has a server that wraps the in-process implementation of its domain
//! trait, and a client that implements the same trait, so a caller cannot tell whether
//! the service runs in its process or across the network.
//!
//! # Layout
//! - [`pb`]: the code generated from the proto (prost + tonic, through protox).
//! - [`wire`]: JSON payloads, A2A errors carried in statuses, call deadlines, retries.
//! - [`tasks`]: the task-state service (tasks, push configs, turn queue).
//! - [`fanout`]: task event subscriptions, server-streaming.
//! - [`registry`]: agent cards.
//! - [`admin`]: the dispatcher's dead letters (behind the gateways' `/admin/…`).
//! - [`fleet`]: the fleet layer's state (behind the gateways' `/fleet/…`).
//! - [`fleet_storage`]: the fleet layer's storage, for a gateway's ceremonies.
//! - [`workers`]: remote agent workers: the server side (leases, assignment) and the
//!   worker side that runs an [`sb_agent::Agent`] unchanged.

pub mod pb {
    #![allow(clippy::all, unreachable_pub, missing_debug_implementations)]
    tonic::include_proto!("switchboard.internal.v1");
}

pub mod admin;
pub mod fanout;
pub mod fleet;
pub mod fleet_storage;
pub mod registry;
pub mod tasks;
pub mod wire;
pub mod workers;
