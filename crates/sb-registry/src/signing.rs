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
//! round. A verifier parses the received card into [`AgentCard`] before canonicalising,
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

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters,
    EllipticCurveKeyType, Jwk, KeyAlgorithm, KeyOperations, OctetKeyPairParameters,
    OctetKeyPairType, PublicKeyUse, ThumbprintHash,
};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use p256::elliptic_curve::sec1::ToEncodedPoint as _;
use pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _, LineEnding, ObjectIdentifier};
use rand_core::{OsRng, RngCore as _};
use sb_protocol::card::{AgentCard, AgentCardSignature};
use serde_json::{Map, Value, json};
use zeroize::Zeroizing;

/// Deepest nesting of arrays and objects a card may have (the Python SDK's limit too):
/// free-form extension params could otherwise exhaust the stack.
const MAX_DEPTH: usize = 128;

/// The largest integer an IEEE 754 double holds exactly (RFC 8785 §3.2.2.3, I-JSON).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

const OID_EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const OID_P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const OID_ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const OID_ED448: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.113");
const OID_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const OID_RSA_PSS: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.10");

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
    fn jws_name(self) -> &'static str {
        match self {
            Self::Es256 => "ES256",
            Self::EdDsa => "EdDSA",
        }
    }

    fn from_jws_name(name: &str) -> Option<Self> {
        match name {
            "ES256" => Some(Self::Es256),
            "EdDSA" => Some(Self::EdDsa),
            _ => None,
        }
    }

    fn jwt_algorithm(self) -> Algorithm {
        match self {
            Self::Es256 => Algorithm::ES256,
            Self::EdDsa => Algorithm::EdDSA,
        }
    }

    fn key_algorithm(self) -> KeyAlgorithm {
        match self {
            Self::Es256 => KeyAlgorithm::ES256,
            Self::EdDsa => KeyAlgorithm::EdDSA,
        }
    }

    /// The kind of key the algorithm needs, for messages.
    fn key_kind(self) -> &'static str {
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

/// The public half of a signing key, as the base64url JWK members.
#[derive(Clone, PartialEq, Eq)]
enum PublicKey {
    P256 { x: String, y: String },
    Ed25519 { x: String },
}

impl PublicKey {
    fn jwk(&self) -> Jwk {
        let algorithm = match self {
            Self::P256 { x, y } => AlgorithmParameters::EllipticCurve(EllipticCurveKeyParameters {
                key_type: EllipticCurveKeyType::EC,
                curve: EllipticCurve::P256,
                x: x.clone(),
                y: y.clone(),
            }),
            Self::Ed25519 { x } => AlgorithmParameters::OctetKeyPair(OctetKeyPairParameters {
                key_type: OctetKeyPairType::OctetKeyPair,
                curve: EllipticCurve::Ed25519,
                x: x.clone(),
            }),
        };
        Jwk {
            common: CommonParameters::default(),
            algorithm,
        }
    }
}

/// Signs cards with one private key (ES256 or EdDSA).
#[derive(Clone)]
pub struct CardSigner {
    alg: SigningAlgorithm,
    kid: String,
    /// The PKCS#8 DER of the private key.
    key: EncodingKey,
    public: PublicKey,
}

impl fmt::Debug for CardSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CardSigner")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl CardSigner {
    /// A fresh key of `alg`; returns the signer and the key as PKCS#8 PEM (what the store keeps).
    pub fn generate(alg: SigningAlgorithm) -> Result<(CardSigner, String), SigningError> {
        let pem = match alg {
            SigningAlgorithm::Es256 => generate_p256()?,
            SigningAlgorithm::EdDsa => generate_ed25519()?,
        };
        let signer = CardSigner::from_pem(&pem, None)?;
        Ok((signer, pem.as_str().to_owned()))
    }

    /// A key from PKCS#8 PEM (EC P-256 → ES256, Ed25519 → EdDSA; the algorithm is read from the key).
    /// `kid`: the key id; when None, the RFC 7638 JWK thumbprint (base64url SHA-256) of the public key.
    pub fn from_pem(pem: &str, kid: Option<String>) -> Result<CardSigner, SigningError> {
        let (label, document) = pkcs8::SecretDocument::from_pem(pem.trim()).map_err(|e| {
            SigningError::InvalidKey(format!(
                "not a PEM document ({e}); expected a PKCS#8 \"-----BEGIN PRIVATE KEY-----\" block"
            ))
        })?;
        check_pem_label(label)?;
        let der = document.as_bytes();
        let info = pkcs8::PrivateKeyInfo::try_from(der)
            .map_err(|e| SigningError::InvalidKey(format!("not a PKCS#8 private key ({e})")))?;
        let (alg, public, key) = match info.algorithm.oid {
            OID_EC_PUBLIC_KEY => {
                let curve = info.algorithm.parameters_oid().map_err(|e| {
                    SigningError::InvalidKey(format!("the EC key names no curve ({e})"))
                })?;
                if curve != OID_P256 {
                    return Err(SigningError::UnsupportedKey(format!(
                        "an EC key on curve {} (only P-256, 1.2.840.10045.3.1.7, is supported)",
                        curve_name(curve)
                    )));
                }
                let secret = p256::SecretKey::from_pkcs8_der(der).map_err(|e| {
                    SigningError::InvalidKey(format!("invalid EC P-256 private key ({e})"))
                })?;
                let point = secret.public_key().to_encoded_point(false);
                let (Some(x), Some(y)) = (point.x(), point.y()) else {
                    return Err(SigningError::InvalidKey(
                        "the EC public key is the point at infinity".into(),
                    ));
                };
                let public = PublicKey::P256 {
                    x: URL_SAFE_NO_PAD.encode(x),
                    y: URL_SAFE_NO_PAD.encode(y),
                };
                (
                    SigningAlgorithm::Es256,
                    public,
                    EncodingKey::from_ec_der(der),
                )
            }
            OID_ED25519 => {
                let secret = ed25519_dalek::SigningKey::from_pkcs8_der(der).map_err(|e| {
                    SigningError::InvalidKey(format!("invalid Ed25519 private key ({e})"))
                })?;
                let public = PublicKey::Ed25519 {
                    x: URL_SAFE_NO_PAD.encode(secret.verifying_key().as_bytes()),
                };
                (
                    SigningAlgorithm::EdDsa,
                    public,
                    EncodingKey::from_ed_der(der),
                )
            }
            OID_ED448 => return Err(SigningError::UnsupportedKey("an Ed448 key".into())),
            OID_RSA | OID_RSA_PSS => {
                return Err(SigningError::UnsupportedKey("an RSA key".into()));
            }
            other => {
                return Err(SigningError::UnsupportedKey(format!(
                    "a key of algorithm {other}"
                )));
            }
        };
        let kid = match kid {
            Some(kid) if kid.is_empty() => return Err(SigningError::EmptyKid),
            Some(kid) => kid,
            None => public
                .jwk()
                .thumbprint(ThumbprintHash::SHA256)
                .map_err(|e| SigningError::InvalidKey(format!("no JWK thumbprint ({e})")))?,
        };
        Ok(CardSigner {
            alg,
            kid,
            key,
            public,
        })
    }

    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub fn algorithm(&self) -> SigningAlgorithm {
        self.alg
    }

    /// `card` with `signatures` replaced by one signature of this key; `jku` goes in the protected header when Some.
    pub fn sign(&self, card: &AgentCard, jku: Option<&str>) -> Result<AgentCard, SigningError> {
        let mut header = Map::new();
        header.insert("alg".into(), json!(self.alg.jws_name()));
        header.insert("kid".into(), json!(self.kid));
        header.insert("typ".into(), json!("JOSE"));
        match jku {
            Some("") => return Err(SigningError::EmptyJku),
            Some(jku) => {
                header.insert("jku".into(), json!(jku));
            }
            None => {}
        }
        let protected = URL_SAFE_NO_PAD.encode(jcs(&Value::Object(header))?);
        let card_json =
            serde_json::to_value(card).map_err(|e| SigningError::InvalidCard(e.to_string()))?;
        let payload = canonical_payload(&card_json)?;
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(payload));
        let signature = self.sign_input(input.as_bytes())?;
        let mut signed = card.clone();
        signed.signatures = vec![AgentCardSignature {
            protected,
            signature,
            header: None,
        }];
        Ok(signed)
    }

    /// The base64url JWS signature of `input`.
    fn sign_input(&self, input: &[u8]) -> Result<String, SigningError> {
        jsonwebtoken::crypto::sign(input, &self.key, self.alg.jwt_algorithm())
            .map_err(|e| SigningError::Signing(e.to_string()))
    }

    /// The public key as a JWK (kty EC/crv P-256/x/y, or kty OKP/crv Ed25519/x), with kid, alg and "use":"sig".
    pub fn public_jwk(&self) -> Value {
        let mut jwk = match &self.public {
            PublicKey::P256 { x, y } => json!({"kty": "EC", "crv": "P-256", "x": x, "y": y}),
            PublicKey::Ed25519 { x } => json!({"kty": "OKP", "crv": "Ed25519", "x": x}),
        };
        if let Value::Object(members) = &mut jwk {
            members.insert("kid".into(), json!(self.kid));
            members.insert("alg".into(), json!(self.alg.jws_name()));
            members.insert("use".into(), json!("sig"));
        }
        jwk
    }
}

/// A JWKS document `{"keys": [...]}` of the given signers' public keys.
pub fn jwks(signers: &[&CardSigner]) -> Value {
    let keys: Vec<Value> = signers.iter().map(|s| s.public_jwk()).collect();
    json!({ "keys": keys })
}

fn generate_p256() -> Result<Zeroizing<String>, SigningError> {
    // A random 256-bit string is a valid scalar unless it is zero or at least the group
    // order (odds about 2^-32); draw again then.
    for _ in 0..8 {
        let mut bytes = Zeroizing::new([0u8; 32]);
        OsRng
            .try_fill_bytes(bytes.as_mut())
            .map_err(|e| SigningError::KeyGeneration(format!("the OS random source: {e}")))?;
        if let Ok(secret) = p256::SecretKey::from_slice(bytes.as_ref()) {
            return secret
                .to_pkcs8_pem(LineEnding::LF)
                .map_err(|e| SigningError::KeyGeneration(format!("PKCS#8 encoding: {e}")));
        }
    }
    Err(SigningError::KeyGeneration(
        "the OS random source gave no valid P-256 scalar in 8 draws".into(),
    ))
}

fn generate_ed25519() -> Result<Zeroizing<String>, SigningError> {
    let mut seed = Zeroizing::new([0u8; 32]);
    OsRng
        .try_fill_bytes(seed.as_mut())
        .map_err(|e| SigningError::KeyGeneration(format!("the OS random source: {e}")))?;
    // PKCS#8 v1 (RFC 8410, no public key): what `openssl genpkey -algorithm ed25519` writes
    // and every reader takes.
    ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: *seed,
        public_key: None,
    }
    .to_pkcs8_pem(LineEnding::LF)
    .map_err(|e| SigningError::KeyGeneration(format!("PKCS#8 encoding: {e}")))
}

/// Accepts a PKCS#8 block and says what to do with the usual other kinds.
fn check_pem_label(label: &str) -> Result<(), SigningError> {
    let problem = match label {
        "PRIVATE KEY" => return Ok(()),
        "EC PRIVATE KEY" => {
            "a SEC1 \"EC PRIVATE KEY\", not PKCS#8; convert it with \
             `openssl pkcs8 -topk8 -nocrypt -in key.pem -out key.p8.pem`"
        }
        "ENCRYPTED PRIVATE KEY" => {
            "an encrypted PKCS#8 key; decrypt it first with \
             `openssl pkcs8 -in key.pem -out key.plain.pem`"
        }
        "RSA PRIVATE KEY" => {
            return Err(SigningError::UnsupportedKey("an RSA key".into()));
        }
        "PUBLIC KEY" | "CERTIFICATE" => {
            "a public key or certificate; the signer needs the private key"
        }
        other => {
            return Err(SigningError::InvalidKey(format!(
                "a \"{other}\" PEM block; expected \"PRIVATE KEY\" (PKCS#8)"
            )));
        }
    };
    Err(SigningError::InvalidKey(problem.into()))
}

fn curve_name(oid: ObjectIdentifier) -> String {
    match oid.to_string().as_str() {
        "1.3.132.0.34" => "P-384".into(),
        "1.3.132.0.35" => "P-521".into(),
        "1.3.132.0.10" => "secp256k1".into(),
        other => other.into(),
    }
}

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
    /// A key without a `kid` is known by its RFC 7638 thumbprint (what [`CardSigner`] uses
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

/// The bytes that are signed for `card_json` (exposed for tests and debugging).
///
/// `card_json` is read as an [`AgentCard`] first, so the strict 1.0 form, the merged
/// 1.0 + 0.3 form and any other superset of the same card give the same bytes; its
/// `signatures` never count.
pub fn canonical_payload(card_json: &Value) -> Result<Vec<u8>, SigningError> {
    payload_of(&parse_card(card_json)?)
}

/// The canonical payload of a card: its 1.0 JSON, without `signatures`, cleaned, in JCS.
fn payload_of(card: &AgentCard) -> Result<Vec<u8>, SigningError> {
    let mut json =
        serde_json::to_value(card).map_err(|e| SigningError::InvalidCard(e.to_string()))?;
    if let Value::Object(members) = &mut json {
        members.remove("signatures");
    }
    let cleaned = clean(json, "$", 1)?.unwrap_or_else(|| Value::Object(Map::new()));
    jcs(&cleaned)
}

/// RFC 8785 bytes of `value`.
fn jcs(value: &Value) -> Result<Vec<u8>, SigningError> {
    serde_json_canonicalizer::to_vec(value)
        .map_err(|e| SigningError::Canonicalization(e.to_string()))
}

/// `value` without empty strings, arrays, objects and nulls, at any depth (an array or
/// object left empty by the removal goes too); None when nothing is left. Checks on the way
/// that every integer has an exact double and that the nesting is bounded.
fn clean(value: Value, path: &str, depth: usize) -> Result<Option<Value>, SigningError> {
    let too_deep = || {
        SigningError::Canonicalization(format!("{path} is nested deeper than {MAX_DEPTH} levels"))
    };
    Ok(match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Number(n) => {
            let magnitude = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Some(u),
                (None, Some(i)) => Some(i.unsigned_abs()),
                (None, None) => None,
            };
            if magnitude.is_some_and(|m| m > MAX_SAFE_INTEGER) {
                return Err(SigningError::Canonicalization(format!(
                    "the integer {n} at {path} is beyond ±(2^53 - 1), which a JSON number \
                     cannot carry exactly (RFC 8785 §3.2.2.3); send it as a string"
                )));
            }
            Some(Value::Number(n))
        }
        Value::Array(items) => {
            if depth > MAX_DEPTH {
                return Err(too_deep());
            }
            let mut kept = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                if let Some(item) = clean(item, &format!("{path}[{i}]"), depth + 1)? {
                    kept.push(item);
                }
            }
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(members) => {
            if depth > MAX_DEPTH {
                return Err(too_deep());
            }
            let mut kept = Map::new();
            for (name, member) in members {
                if let Some(member) = clean(member, &format!("{path}.{name}"), depth + 1)? {
                    kept.insert(name, member);
                }
            }
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other),
    })
}

/// The card in `card_json` as the 1.0 model, ignoring fields the model does not have.
fn parse_card(card_json: &Value) -> Result<AgentCard, SigningError> {
    AgentCard::from_served_json(card_json).map_err(|e| SigningError::InvalidCard(e.to_string()))
}

#[cfg(test)]
mod tests;
