//! Switchboard's A2A client, on the `sb-protocol` model and the HTTP stack the
//! workspace already uses. This first part finds and checks an agent before anything is
//! sent to it:
//!
//! - [`discovery`]: fetches a card from a base or card URL (`/.well-known/agent-card.json`,
//!   then the legacy `/.well-known/agent.json`), reads it whatever its generation
//!   ([`legacy`] turns a 0.3 card into the 1.0 model), checks it ([`validate`]) and,
//!   when a verifier is given, its signature; [`discovery::CardCache`] keeps cards for a
//!   TTL of minutes and forgets one after a failed submission.
//! - [`interface`]: which of the card's interfaces to call, by the caller's preference.
//! - [`jsonrpc`]: the unary calls of A2A 1.0 over JSON-RPC (send, get, cancel), a
//!   server's error read back as its [`sb_protocol::A2AError`].

pub mod discovery;
pub mod interface;
pub mod jsonrpc;
pub mod legacy;
pub mod validate;

pub use discovery::{CardCache, CardError, Discovered, discover};
pub use interface::{Binding, Chosen, Preferences};
pub use jsonrpc::{CallError, JsonRpcClient};
