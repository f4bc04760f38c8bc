//! Bridged agents (`kind = "a2a"`): an existing A2A server, written on any SDK, fronted
//! by Switchboard under its own card. A message to a bridged agent makes a Switchboard
//! task whose work is to drive the upstream task to its end, so the upstream gains
//! durable tasks, stream resume, signed webhooks, auth, metrics and traces.
//!
//! # Layout
//! - [`upstream`]: the upstream server: its card, fetched, checked and verified, kept
//!   for the refresh interval, and a transport on its best interface (`sb-client`).
//! - [`agent`]: [`BridgeAgent`], the [`sb_agent::Agent`] that opens a conversation
//!   upstream (a message reply stays a message) and whose turns forward messages
//!   upstream and follow the upstream task (stream, else polling).
//! - [`forward`]: a message sent upstream and its first answer; the answers kept from
//!   a conversation's opening for its first turn.
//! - [`mirror`]: the upstream task mirrored into the Switchboard task, in order and once.
//! - [`push`]: the receiver of upstreams' push notifications, which wake the turn
//!   following a task of an upstream that does not stream.
//! - [`link`]: what a task keeps of its upstream task (durable, in its metadata) and
//!   the call's trajectory.
//! - [`cards`]: the refresher that keeps each bridged agent's card in the registry
//!   following its upstream's, and reports drift.
//! - [`each_agent`]: one job per bridged agent of a fleet, as agents join, change and
//!   leave (the refresher's, a worker's sessions).

pub mod agent;
pub mod cards;
pub mod each_agent;
pub mod forward;
pub mod link;
pub mod mirror;
pub mod push;
pub mod upstream;

pub use agent::BridgeAgent;
pub use upstream::Upstream;
