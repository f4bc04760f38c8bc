//! Agent Card signing and verification (A2A 1.0 §8.4; digest §8.2).
//!
//! A card signature is a JWS in the flattened JSON serialization with a detached payload:
//! each `signatures[]` entry holds `protected` (base64url of the header
//! `{"alg","jku"?,"kid","typ":"JOSE"}`) and `signature`, over the signing input
//! `protected + "." + base64url(payload)` (no padding). The payload is
//! [`canonical_payload`]: the card's strict 1.0 JSON without `signatures`, with every empty
//! string, empty array, empty object and null removed recursively, in RFC 8785 (JCS) form.
//! The removal is what the official SDKs' verifiers do (Python `a2a.utils.signing`
//! `_clean_empty`, JS `cleanEmpty`), so a card signed here verifies there and the other way
//! round. A verifier parses the received card into [`AgentCard`](sb_protocol::card::AgentCard) before canonicalising,
//! as both SDKs do, so fields outside the 1.0 model (the 0.3 fields of a merged card) are
//! ignored, and therefore not covered by the signature.
//!
//! # Libraries
//! - JWS primitives (`crypto::sign`/`crypto::verify`), JWK parsing and RFC 7638
//!   thumbprints: `jsonwebtoken` 11 with its RustCrypto backend, as sb-gateway uses it.
//!   Key generation and PKCS#8 reading: `p256` 0.13, `ed25519-dalek` 2 and `pkcs8` 0.10,
//!   the versions jsonwebtoken already pulls in, with `rand_core` 0.6's `OsRng`.
//! - RFC 8785: `serde_json_canonicalizer` 0.4, chosen over `serde_jcs` because it was
//!   written to fix the RFC deviations reported against `serde_jcs` and is tested against
//!   the RFC's examples and cyberphone's reference test data. It sorts object keys by
//!   UTF-16 code units and writes every number as an IEEE 754 double with ECMAScript's
//!   Number-to-String algorithm (`ryu-js`), as RFC 8785 §3.2.2.3 requires. Integers beyond
//!   ±(2^53 − 1) have no exact double: they are rejected here (as the Python SDK's
//!   canonicaliser rejects them) instead of being rounded silently.
//!
//! # Layout
//! [`SigningAlgorithm`] and [`SigningError`] are shared by the signer (`signer.rs`: keys
//! from PEM or generated, [`CardSigner::sign`], [`jwks`]) and the verifier (`verifier.rs`:
//! [`CardVerifier`] over a JWKS); `payload.rs` holds what both sign and check, the
//! canonical payload.

mod algorithm;
mod error;
mod payload;
mod signer;
mod verifier;

pub use algorithm::SigningAlgorithm;
pub use error::SigningError;
pub use payload::canonical_payload;
pub use signer::{CardSigner, jwks};
pub use verifier::CardVerifier;

#[cfg(test)]
mod tests;
