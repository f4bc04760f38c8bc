//! The agent registry: every agent's definition, the Agent Card made from it (never a
//! hand-written card), the live fleet the gateway serves cards from, search, and card
//! signing. A definition is registered from the configuration file, at runtime through
//! the HTTP API, or by a worker announcing the agents it serves; it is stored, and each
//! change is served by every replica without a restart.
//!
//! # Layout
//! - [`definition`]: [`AgentDefinition`], one agent as a `[[agents]]` entry says it;
//!   [`auth_config`]: how its callers authenticate; [`validate`]: the checks of a
//!   definition, each error naming its field.
//! - [`card`]: the card of a definition (with its kind's [`CardDefaults`]), its
//!   interfaces and security schemes; [`entry`]: a card rendered in both forms with
//!   its ETag; [`signing`]: JWS signatures over cards, and their verification.
//! - [`registration`]: what is stored of an agent (source, history, removal);
//!   [`maker`]: registrations made into served, signed cards.
//! - [`fleet`]: [`Fleet`], the agents one process serves, and [`LiveRegistry`], which
//!   swaps it whole on each change ([`CardRegistry`] is what the gateway reads).
//! - [`service`]: [`RegistryService`] (put, remove, read) and [`Admission`] (what a
//!   deployment can run); [`local`]: [`LocalRegistry`], the service over a store.
//! - [`upstream`]: bridged agents (`kind = "a2a"`): how to reach the upstream server,
//!   and what is kept of its card (which their card follows).
//! - [`search`]: queries over the fleet; [`skills`]: the skills a message's text asks
//!   for (the routing agent's match); [`http`]: the HTTP API.

pub mod auth_config;
pub mod card;
pub mod definition;
pub mod entry;
pub mod fleet;
pub mod http;
pub mod local;
pub mod maker;
pub mod registration;
pub mod search;
pub mod service;
pub mod signing;
pub mod skills;
pub mod upstream;
pub mod validate;

pub use card::{CardDefaults, CardSettings};
pub use definition::{AgentDefinition, AgentKind, CardForm, OnWorkerLost};
pub use entry::{CardEntry, RenderedCard};
pub use fleet::{CardRegistry, Fleet, LiveRegistry, ServedAgent};
pub use local::LocalRegistry;
pub use maker::CardMaker;
pub use registration::{Registration, Source};
pub use service::{Admission, Put, RegistryError, RegistryService};
pub use upstream::{UpstreamCard, UpstreamDefinition};
pub use validate::FieldError;
