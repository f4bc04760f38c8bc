//! A2A protocol types for Switchboard: the wire forms of A2A 1.0 and 0.3, converted
//! losslessly to one internal model, plus JSON-RPC envelopes and A2A errors. No I/O.
//!
//! # Layout
//! - [`model`]: the internal model, which is also the 1.0 ProtoJSON wire form.
//! - [`v03`]: the 0.3 dialects (JSON-RPC kind-JSON and HTTP+JSON proto-JSON) to and from the model.
//! - [`requests`]: operation parameters and their validation.
//! - [`rfc3339`]: timestamps as text, written without allocating.
//! - [`card`]: the Agent Card, 1.0 and the merged 1.0 + 0.3 document.
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope and the method names of both versions.
//! - [`error`]: A2A errors with their JSON-RPC, HTTP and gRPC renderings.
//! - [`version`]: `A2A-Version` negotiation.

pub mod card;
pub mod delegation;
pub mod entry;
pub mod error;
pub mod jsonrpc;
pub mod model;
pub mod requests;
pub mod rfc3339;
pub mod serde_util;
pub mod v03;
pub mod version;

pub use error::{A2AError, ErrorKind};
pub use model::*;
pub use version::Version;
