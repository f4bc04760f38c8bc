//! Switchboard's A2A client, on the `sb-protocol` model and the HTTP and gRPC stacks
//! the workspace already uses.
//!
//! - [`discovery`]: fetches a card from a base or card URL (`/.well-known/agent-card.json`,
//!   then the legacy `/.well-known/agent.json`), reads it whatever its generation
//!   ([`legacy`] turns a 0.3 card into the 1.0 model), checks it ([`validate`]) and,
//!   when a verifier is given, its signature; [`discovery::CardCache`] keeps cards for a
//!   TTL of minutes and forgets one after a failed submission.
//! - [`interface`]: which of the card's interfaces to call, by the caller's preference.
//! - [`auth`]: credentials, placed as the card's security schemes say; [`oauth`]: a
//!   bearer token from the authorization server the card names (client credentials,
//!   device code, refresh).
//! - [`transport`]: the calls of A2A as one trait, whatever the binding and version;
//!   [`jsonrpc`], [`rest`] (HTTP+JSON) and [`grpc`] implement it, each for 1.0 and (on
//!   the HTTP bindings) 0.3; [`sse`] reads a streaming answer.
//! - [`follow`]: following a task by stream or by polling ([`poll`]), with an idle timeout.
//! - [`drive`]: the caller's loop for one task: card checked before anything is sent,
//!   submissions retried, the task followed within an idle timeout and a budget, input
//!   requests answered by the caller's resolver, every ending returned as an outcome.
//! - [`wire`]: the raw messages every binding exchanges, for debugging, credentials
//!   redacted.

pub mod auth;
pub mod discovery;
pub mod drive;
pub mod follow;
pub mod grpc;
pub mod interface;
pub mod jsonrpc;
pub mod legacy;
pub mod oauth;
pub mod poll;
pub mod rest;
pub mod sse;
pub mod transport;
pub mod validate;
pub mod wire;

pub use auth::{Credentials, Placement};
pub use discovery::{CardCache, CardError, Discovered, discover};
pub use interface::{Binding, Chosen, Preferences};
pub use transport::{CallError, EventStream, StreamItem, Transport, connect};
