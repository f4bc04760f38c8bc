//! Signing: a private key read from PKCS#8 PEM (or generated), the signature of a card
//! with it, and its public half as a JWK and in a JWKS document.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::EncodingKey;
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters,
    EllipticCurveKeyType, Jwk, OctetKeyPairParameters, OctetKeyPairType, ThumbprintHash,
};
use p256::elliptic_curve::sec1::ToEncodedPoint as _;
use pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _, LineEnding, ObjectIdentifier};
use rand_core::{OsRng, RngCore as _};
use sb_protocol::card::{AgentCard, AgentCardSignature};
use serde_json::{Map, Value, json};
use zeroize::Zeroizing;

use super::payload::{canonical_payload, jcs};
use super::{SigningAlgorithm, SigningError};

const OID_EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const OID_P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const OID_ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");
const OID_ED448: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.113");
const OID_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const OID_RSA_PSS: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.10");

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
    pub(super) fn sign_input(&self, input: &[u8]) -> Result<String, SigningError> {
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
