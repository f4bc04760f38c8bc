//! Verification: a key set read from a JWKS document, and the check of a card's
//! signatures against it.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, KeyOperations, PublicKeyUse, ThumbprintHash,
};
use sb_protocol::card::AgentCardSignature;
use serde_json::Value;

use super::payload::{parse_card, payload_of};
use super::{SigningAlgorithm, SigningError};

/// One verification key of a [`CardVerifier`].
#[derive(Clone)]
struct VerifierKey {
    kid: String,
    alg: SigningAlgorithm,
    key: DecodingKey,
}

/// Verifies cards against a key set (what the next step uses for upstream agents' cards).
#[derive(Clone)]
pub struct CardVerifier {
    keys: Vec<VerifierKey>,
}

impl fmt::Debug for CardVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<String> = self
            .keys
            .iter()
            .map(|k| format!("{} ({})", k.kid, k.alg))
            .collect();
        f.debug_struct("CardVerifier").field("keys", &keys).finish()
    }
}

impl CardVerifier {
    /// From a JWKS document; keys of other types/algorithms are skipped; none usable → error.
    ///
    /// A key without a `kid` is known by its RFC 7638 thumbprint (what [`CardSigner`](super::CardSigner) uses
    /// when given no kid). Keys for encryption (`"use":"enc"`, `key_ops` without
    /// `verify`), with an `alg` other than their curve's, or whose public key is not a
    /// valid point are skipped too.
    pub fn from_jwks(jwks: &Value) -> Result<CardVerifier, SigningError> {
        let keys = jwks.get("keys").and_then(Value::as_array).ok_or_else(|| {
            SigningError::InvalidJwks("expected a JSON object with a \"keys\" array".into())
        })?;
        let mut usable = Vec::new();
        let mut skipped = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            match verifier_key(key) {
                Ok(key) => usable.push(key),
                Err(reason) => {
                    let kid = match key.get("kid").and_then(Value::as_str) {
                        Some(kid) => format!(" (kid {kid:?})"),
                        None => String::new(),
                    };
                    skipped.push(format!("keys[{i}]{kid}: {reason}"));
                }
            }
        }
        match usable.is_empty() {
            true => Err(SigningError::NoUsableKeys { skipped }),
            false => Ok(CardVerifier { keys: usable }),
        }
    }

    /// Verifies a card as received (its JSON, any extra fields such as the merged 0.3 fields
    /// must be ignored by parsing it into `AgentCard` first and re-serialising the 1.0 form).
    /// Ok(kid) of the first signature that verifies; Err saying why none did (no signatures,
    /// unknown kid, bad signature, unsupported alg, malformed header...).
    pub fn verify(&self, card_json: &Value) -> Result<String, SigningError> {
        let card = parse_card(card_json)?;
        if card.signatures.is_empty() {
            return Err(SigningError::NoSignatures);
        }
        let payload = URL_SAFE_NO_PAD.encode(payload_of(&card)?);
        let mut failures = Vec::new();
        for (index, signature) in card.signatures.iter().enumerate() {
            match self.verify_one(index, signature, &payload) {
                Ok(kid) => return Ok(kid),
                Err(e) => failures.push(e),
            }
        }
        if failures.len() == 1
            && let Some(only) = failures.pop()
        {
            return Err(only);
        }
        Err(SigningError::NoValidSignature(failures))
    }

    fn verify_one(
        &self,
        index: usize,
        signature: &AgentCardSignature,
        payload: &str,
    ) -> Result<String, SigningError> {
        let malformed = |reason: String| SigningError::MalformedHeader { index, reason };
        let bytes = URL_SAFE_NO_PAD
            .decode(&signature.protected)
            .map_err(|e| malformed(format!("not base64url without padding ({e})")))?;
        let header: Value =
            serde_json::from_slice(&bytes).map_err(|e| malformed(format!("not JSON ({e})")))?;
        let Value::Object(header) = header else {
            return Err(malformed("not a JSON object".into()));
        };
        if header.contains_key("crit") {
            return Err(malformed(
                "it lists critical extensions (\"crit\"), which this verifier does not implement"
                    .into(),
            ));
        }
        if header
            .get("b64")
            .is_some_and(|b64| b64 != &Value::Bool(true))
        {
            return Err(malformed(
                "\"b64\" other than true (RFC 7797 unencoded payloads) is not supported".into(),
            ));
        }
        let alg = match header.get("alg") {
            Some(Value::String(alg)) => alg,
            Some(_) => return Err(malformed("\"alg\" is not a string".into())),
            None => return Err(malformed("no \"alg\"".into())),
        };
        let kid = match header.get("kid") {
            Some(Value::String(kid)) if !kid.is_empty() => kid,
            Some(_) => return Err(malformed("\"kid\" is not a non-empty string".into())),
            None => return Err(malformed("no \"kid\" naming the key".into())),
        };
        let alg = SigningAlgorithm::from_jws_name(alg).ok_or_else(|| {
            SigningError::UnsupportedAlgorithm {
                index,
                alg: alg.clone(),
            }
        })?;
        let named: Vec<&VerifierKey> = self.keys.iter().filter(|k| &k.kid == kid).collect();
        let Some(first) = named.first() else {
            return Err(SigningError::UnknownKid {
                index,
                kid: kid.clone(),
                known: self.known_kids(),
            });
        };
        // Only keys of the header's algorithm: a key is never used with another algorithm.
        let candidates: Vec<&VerifierKey> =
            named.iter().copied().filter(|k| k.alg == alg).collect();
        if candidates.is_empty() {
            return Err(SigningError::AlgorithmMismatch {
                index,
                kid: kid.clone(),
                alg,
                key_alg: first.alg,
            });
        }
        let input = format!("{}.{payload}", signature.protected);
        let mut malformed_signature = None;
        for key in candidates {
            match jsonwebtoken::crypto::verify(
                &signature.signature,
                input.as_bytes(),
                &key.key,
                alg.jwt_algorithm(),
            ) {
                Ok(true) => return Ok(kid.clone()),
                Ok(false) => {}
                Err(e) => malformed_signature = Some(e.to_string()),
            }
        }
        Err(match malformed_signature {
            Some(reason) => SigningError::MalformedSignature {
                index,
                kid: kid.clone(),
                reason,
            },
            None => SigningError::BadSignature {
                index,
                kid: kid.clone(),
            },
        })
    }

    fn known_kids(&self) -> String {
        let kids: Vec<String> = self.keys.iter().map(|k| format!("{:?}", k.kid)).collect();
        kids.join(", ")
    }
}

/// One JWK as a verification key, or why it is not usable.
fn verifier_key(key: &Value) -> Result<VerifierKey, String> {
    let jwk: Jwk = serde_json::from_value(key.clone()).map_err(|e| format!("not a JWK ({e})"))?;
    if jwk.common.public_key_use == Some(PublicKeyUse::Encryption) {
        return Err("its \"use\" is \"enc\", not \"sig\"".into());
    }
    if let Some(ops) = &jwk.common.key_operations
        && !ops.contains(&KeyOperations::Verify)
    {
        return Err("its \"key_ops\" do not include \"verify\"".into());
    }
    let alg = match &jwk.algorithm {
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => {
            let x = coordinate("x", &p.x)?;
            let y = coordinate("y", &p.y)?;
            let mut point = Vec::with_capacity(65);
            point.push(0x04);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            p256::PublicKey::from_sec1_bytes(&point)
                .map_err(|_| "its x and y are not a point on P-256".to_owned())?;
            SigningAlgorithm::Es256
        }
        AlgorithmParameters::EllipticCurve(p) => {
            return Err(format!(
                "EC curve {:?} is not supported (P-256 is)",
                p.curve
            ));
        }
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
            let x = coordinate("x", &p.x)?;
            let key = ed25519_dalek::VerifyingKey::from_bytes(&x)
                .map_err(|_| "its x is not an Ed25519 public key".to_owned())?;
            if key.is_weak() {
                return Err("its x is a small-order (weak) Ed25519 public key".into());
            }
            SigningAlgorithm::EdDsa
        }
        AlgorithmParameters::OctetKeyPair(p) => {
            return Err(format!(
                "OKP curve {:?} is not supported (Ed25519 is)",
                p.curve
            ));
        }
        AlgorithmParameters::RSA(_) => return Err("RSA keys are not supported".into()),
        AlgorithmParameters::OctetKey(_) => {
            return Err("symmetric (\"oct\") keys are not supported".into());
        }
        _ => return Err("an unsupported key type".into()),
    };
    if let Some(declared) = jwk.common.key_algorithm
        && declared != alg.key_algorithm()
    {
        return Err(format!(
            "its \"alg\" is {declared}, but a {} key is for {alg}",
            alg.key_kind()
        ));
    }
    let kid = match &jwk.common.key_id {
        Some(kid) if !kid.is_empty() => kid.clone(),
        _ => jwk
            .thumbprint(ThumbprintHash::SHA256)
            .map_err(|e| format!("no kid, and no thumbprint ({e})"))?,
    };
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| format!("unusable key ({e})"))?;
    Ok(VerifierKey { kid, alg, key })
}

/// A 32-byte base64url JWK member (a P-256 coordinate or an Ed25519 public key).
fn coordinate(name: &str, value: &str) -> Result<[u8; 32], String> {
    let bytes = URL_SAFE_NO_PAD
        .decode(value)
        .map_err(|e| format!("its {name:?} is not base64url without padding ({e})"))?;
    <[u8; 32]>::try_from(bytes.as_slice())
        .map_err(|_| format!("its {name:?} is {} bytes, not 32", bytes.len()))
}
