//! The one error type of signing and verification, with messages a person can act on.

use super::SigningAlgorithm;

/// Why a key could not be used, a card could not be signed, or a signature did not verify.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    #[error("cannot read the signing key: {0}")]
    InvalidKey(String),
    #[error(
        "unsupported signing key: {0}; card signatures use ES256 (an EC P-256 key) or EdDSA \
         (an Ed25519 key), as PKCS#8 PEM (\"-----BEGIN PRIVATE KEY-----\")"
    )]
    UnsupportedKey(String),
    #[error("could not generate a key: {0}")]
    KeyGeneration(String),
    #[error("the key id (kid) is empty; pass None to use the key's RFC 7638 thumbprint")]
    EmptyKid,
    #[error("the JWKS URL (jku) is empty; pass None to leave it out of the header")]
    EmptyJku,
    #[error("the card is not a valid A2A 1.0 AgentCard: {0}")]
    InvalidCard(String),
    #[error("the card has no RFC 8785 canonical form: {0}")]
    Canonicalization(String),
    #[error("signing failed: {0}")]
    Signing(String),
    #[error("not a JWKS document: {0}")]
    InvalidJwks(String),
    #[error(
        "the key set has no usable key (ES256 on EC P-256 or EdDSA on Ed25519, for \
         signatures){}",
        skipped_list(.skipped)
    )]
    NoUsableKeys { skipped: Vec<String> },
    #[error("the card has no signatures")]
    NoSignatures,
    #[error("signatures[{index}]: malformed protected header: {reason}")]
    MalformedHeader { index: usize, reason: String },
    #[error("signatures[{index}]: algorithm {alg:?} is not supported (ES256 and EdDSA are)")]
    UnsupportedAlgorithm { index: usize, alg: String },
    #[error("signatures[{index}]: no key with kid {kid:?} in the key set (it has {known})")]
    UnknownKid {
        index: usize,
        kid: String,
        known: String,
    },
    #[error("signatures[{index}]: the header says {alg}, but key {kid:?} is a {key_alg} key")]
    AlgorithmMismatch {
        index: usize,
        kid: String,
        alg: SigningAlgorithm,
        key_alg: SigningAlgorithm,
    },
    #[error("signatures[{index}] (kid {kid:?}): malformed signature value: {reason}")]
    MalformedSignature {
        index: usize,
        kid: String,
        reason: String,
    },
    #[error(
        "signatures[{index}] (kid {kid:?}) does not match the card: the card was changed \
         after it was signed, or another key with the same kid signed it"
    )]
    BadSignature { index: usize, kid: String },
    #[error("none of the card's {} signatures verifies: {}", .0.len(), error_list(.0))]
    NoValidSignature(Vec<SigningError>),
}

fn skipped_list(skipped: &[String]) -> String {
    match skipped.is_empty() {
        true => String::new(),
        false => format!("; skipped: {}", skipped.join("; ")),
    }
}

fn error_list(errors: &[SigningError]) -> String {
    let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
    all.join("; ")
}
