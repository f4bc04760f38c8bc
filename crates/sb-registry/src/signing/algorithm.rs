//! The JWS algorithms a card can be signed with, and their names in JOSE and jsonwebtoken.

use std::fmt;

use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::KeyAlgorithm;

/// A JWS algorithm a card can be signed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SigningAlgorithm {
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// Ed25519.
    EdDsa,
}

impl SigningAlgorithm {
    /// The JWS `alg` name.
    pub(super) fn jws_name(self) -> &'static str {
        match self {
            Self::Es256 => "ES256",
            Self::EdDsa => "EdDSA",
        }
    }

    pub(super) fn from_jws_name(name: &str) -> Option<Self> {
        match name {
            "ES256" => Some(Self::Es256),
            "EdDSA" => Some(Self::EdDsa),
            _ => None,
        }
    }

    pub(super) fn jwt_algorithm(self) -> Algorithm {
        match self {
            Self::Es256 => Algorithm::ES256,
            Self::EdDsa => Algorithm::EdDSA,
        }
    }

    pub(super) fn key_algorithm(self) -> KeyAlgorithm {
        match self {
            Self::Es256 => KeyAlgorithm::ES256,
            Self::EdDsa => KeyAlgorithm::EdDSA,
        }
    }

    /// The kind of key the algorithm needs, for messages.
    pub(super) fn key_kind(self) -> &'static str {
        match self {
            Self::Es256 => "EC P-256",
            Self::EdDsa => "Ed25519",
        }
    }
}

impl fmt::Display for SigningAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.jws_name())
    }
}
