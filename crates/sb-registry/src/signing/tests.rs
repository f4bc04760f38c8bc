//! Tests of card signing: each can fail (a tampered card, another key, a wrong header…),
//! and the byte-level ones are checked against values derived outside this code (by hand,
//! from RFCs, or by the official Python SDK).

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey};
use pkcs8::{EncodePrivateKey as _, LineEnding};
use sb_protocol::card::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface,
    AgentProvider, AgentSkill, SecurityScheme,
};
use serde_json::{Map, Value, json};

use super::payload::{jcs, parse_card};
use super::{CardSigner, CardVerifier, SigningAlgorithm, SigningError, canonical_payload, jwks};

fn interface(url: &str, binding: &str, version: &str, tenant: Option<&str>) -> AgentInterface {
    AgentInterface {
        url: url.into(),
        protocol_binding: binding.into(),
        protocol_version: version.into(),
        tenant: tenant.map(Into::into),
    }
}

fn skill(id: &str, name: &str) -> AgentSkill {
    AgentSkill {
        id: id.into(),
        name: name.into(),
        description: format!("{name}, as a skill"),
        tags: vec!["demo".into()],
        examples: vec!["say hello".into()],
        input_modes: vec![],
        output_modes: vec![],
    }
}

/// A card with every kind of field `build_card` fills in, security included (whose
/// requirements are where the wire form and the model differ).
fn sample_card() -> AgentCard {
    let base = "https://sb.example/agents/echo";
    AgentCard {
        name: "echo".into(),
        description: "Echoes what it is sent — déjà vu.".into(),
        supported_interfaces: vec![
            interface(&format!("{base}/a2a"), "JSONRPC", "1.0", None),
            interface(base, "HTTP+JSON", "1.0", None),
            interface("sb.example:443", "GRPC", "1.0", Some("echo")),
            interface(&format!("{base}/a2a"), "JSONRPC", "0.3", None),
            interface(base, "HTTP+JSON", "0.3", None),
        ],
        provider: Some(AgentProvider {
            url: "https://github.com/switchboard-a2a".into(),
            organization: "Switchboard".into(),
        }),
        version: "1.4.0".into(),
        documentation_url: None,
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            extended_agent_card: Some(false),
            extensions: vec![AgentExtension {
                uri: "https://sb.example/ext/trace".into(),
                description: String::new(),
                required: false,
                params: Some(
                    json!({"level": 2, "ratio": 0.25, "tags": ["a", ""], "none": null})
                        .as_object()
                        .cloned()
                        .unwrap(),
                ),
            }],
        },
        security_schemes: BTreeMap::from([
            (
                "bearer".into(),
                SecurityScheme::HttpAuthSecurityScheme {
                    description: Some("A JWT from the gateway's issuer".into()),
                    scheme: "Bearer".into(),
                    bearer_format: Some("JWT".into()),
                },
            ),
            (
                "key".into(),
                SecurityScheme::ApiKeySecurityScheme {
                    description: None,
                    location: "header".into(),
                    name: "X-Api-Key".into(),
                },
            ),
        ]),
        security_requirements: vec![
            BTreeMap::from([("bearer".into(), vec!["tasks:write".into()])]),
            BTreeMap::from([("key".into(), vec![])]),
        ],
        default_input_modes: vec!["text/plain".into(), "application/json".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: vec![skill("echo", "Echo")],
        icon_url: None,
        signatures: vec![],
    }
}

fn signer(alg: SigningAlgorithm) -> CardSigner {
    CardSigner::generate(alg).unwrap().0
}

fn verifier(signers: &[&CardSigner]) -> CardVerifier {
    CardVerifier::from_jwks(&jwks(signers)).unwrap()
}

fn signed_json(signer: &CardSigner, card: &AgentCard) -> Value {
    serde_json::to_value(
        signer
            .sign(card, Some("https://sb.example/.well-known/jwks.json"))
            .unwrap(),
    )
    .unwrap()
}

fn protected_header(card: &AgentCard, index: usize) -> Value {
    let bytes = URL_SAFE_NO_PAD
        .decode(&card.signatures[index].protected)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// `card_json` with signatures[0]'s protected header replaced by `header` (the signature
/// value is kept, so only header checks can pass or fail it meaningfully).
fn with_header(card_json: &Value, header: &str) -> Value {
    let mut card = card_json.clone();
    card["signatures"][0]["protected"] = json!(URL_SAFE_NO_PAD.encode(header));
    card
}

const BOTH: [SigningAlgorithm; 2] = [SigningAlgorithm::Es256, SigningAlgorithm::EdDsa];

// RFC 8037 appendix A.1/A.3: an Ed25519 key and its RFC 7638 thumbprint.
const RFC8037_D: &str = "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A";
const RFC8037_X: &str = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";
const RFC8037_THUMBPRINT: &str = "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k";

// RFC 7515 appendix A.3: a P-256 key. Its thumbprint was computed outside this code, as
// base64url(SHA-256('{"crv":"P-256","kty":"EC","x":"…","y":"…"}')) with Python's hashlib.
const RFC7515_D: &str = "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI";
const RFC7515_X: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
const RFC7515_Y: &str = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";
const RFC7515_THUMBPRINT: &str = "oKIywvGUpTVTyxMQ3bwIIeQUudfr_CkLMjCE19ECD-U";

fn rfc8037_pem() -> String {
    let seed: [u8; 32] = URL_SAFE_NO_PAD
        .decode(RFC8037_D)
        .unwrap()
        .try_into()
        .unwrap();
    ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: seed,
        public_key: None,
    }
    .to_pkcs8_pem(LineEnding::LF)
    .unwrap()
    .to_string()
}

fn rfc7515_pem() -> String {
    let d = URL_SAFE_NO_PAD.decode(RFC7515_D).unwrap();
    p256::SecretKey::from_slice(&d)
        .unwrap()
        .to_pkcs8_pem(LineEnding::LF)
        .unwrap()
        .to_string()
}

#[test]
fn sign_then_verify_round_trips_for_both_algorithms() {
    for alg in BOTH {
        let signer = signer(alg);
        assert_eq!(signer.algorithm(), alg);
        let mut card = sample_card();
        // Whatever signatures the card had are replaced.
        card.signatures = vec![AgentCardSignature {
            protected: "stale".into(),
            signature: "stale".into(),
            header: None,
        }];
        let signed = signer.sign(&card, None).unwrap();
        assert_eq!(signed.signatures.len(), 1, "{alg}");
        assert_eq!(
            AgentCard {
                signatures: vec![],
                ..signed.clone()
            },
            AgentCard {
                signatures: vec![],
                ..card
            },
            "{alg}: signing changes nothing but the signatures"
        );
        let json = serde_json::to_value(&signed).unwrap();
        assert_eq!(
            verifier(&[&signer]).verify(&json).unwrap(),
            signer.kid(),
            "{alg}"
        );
    }
}

#[test]
fn a_changed_description_fails() {
    for alg in BOTH {
        let signer = signer(alg);
        let mut signed = signer.sign(&sample_card(), None).unwrap();
        signed.description.push('!');
        let err = verifier(&[&signer])
            .verify(&serde_json::to_value(&signed).unwrap())
            .unwrap_err();
        assert!(
            matches!(&err, SigningError::BadSignature { index: 0, kid } if kid == signer.kid()),
            "{alg}: {err}"
        );
        assert!(
            err.to_string().contains("changed after it was signed"),
            "{err}"
        );
    }
}

#[test]
fn an_added_skill_fails() {
    for alg in BOTH {
        let signer = signer(alg);
        let mut json = signed_json(&signer, &sample_card());
        json["skills"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::to_value(skill("exfiltrate", "Exfiltrate")).unwrap());
        let err = verifier(&[&signer]).verify(&json).unwrap_err();
        assert!(
            matches!(err, SigningError::BadSignature { .. }),
            "{alg}: {err}"
        );
    }
}

#[test]
fn a_changed_scope_or_interface_fails() {
    let signer = signer(SigningAlgorithm::EdDsa);
    let json = signed_json(&signer, &sample_card());
    let verifier = verifier(&[&signer]);
    let mut scope = json.clone();
    scope["securityRequirements"][0]["schemes"]["bearer"]["list"][0] = json!("tasks:admin");
    let mut url = json.clone();
    url["supportedInterfaces"][0]["url"] = json!("https://evil.example/a2a");
    for tampered in [scope, url] {
        let err = verifier.verify(&tampered).unwrap_err();
        assert!(matches!(err, SigningError::BadSignature { .. }), "{err}");
    }
    assert!(verifier.verify(&json).is_ok());
}

#[test]
fn a_signature_by_another_key_fails() {
    for alg in BOTH {
        let trusted =
            CardSigner::from_pem(&CardSigner::generate(alg).unwrap().1, Some("k1".into())).unwrap();
        let impostor =
            CardSigner::from_pem(&CardSigner::generate(alg).unwrap().1, Some("k1".into())).unwrap();
        let json = signed_json(&impostor, &sample_card());
        let err = verifier(&[&trusted]).verify(&json).unwrap_err();
        assert!(
            matches!(&err, SigningError::BadSignature { kid, .. } if kid == "k1"),
            "{alg}: {err}"
        );
        // The impostor's own key set does verify it: the failure is the key, not the card.
        assert_eq!(verifier(&[&impostor]).verify(&json).unwrap(), "k1");
    }
}

#[test]
fn an_unknown_kid_fails() {
    let trusted = signer(SigningAlgorithm::Es256);
    let other = signer(SigningAlgorithm::Es256);
    let json = signed_json(&other, &sample_card());
    let err = verifier(&[&trusted]).verify(&json).unwrap_err();
    let SigningError::UnknownKid { index, kid, known } = &err else {
        panic!("expected UnknownKid, got {err}");
    };
    assert_eq!((*index, kid.as_str()), (0, other.kid()));
    assert!(known.contains(trusted.kid()), "{known}");
    assert!(err.to_string().contains(other.kid()), "{err}");
}

#[test]
fn the_protected_header_is_exactly_alg_kid_typ_and_jku() {
    for alg in BOTH {
        let signer = signer(alg);
        let jku = "https://sb.example/.well-known/jwks.json";
        let signed = signer.sign(&sample_card(), Some(jku)).unwrap();
        assert_eq!(
            protected_header(&signed, 0),
            json!({"alg": alg.to_string(), "kid": signer.kid(), "typ": "JOSE", "jku": jku})
        );
        assert_eq!(signed.signatures[0].header, None);
        let unsigned_jku = signer.sign(&sample_card(), None).unwrap();
        assert_eq!(
            protected_header(&unsigned_jku, 0),
            json!({"alg": alg.to_string(), "kid": signer.kid(), "typ": "JOSE"})
        );
    }
    assert_eq!(SigningAlgorithm::Es256.to_string(), "ES256");
    assert_eq!(SigningAlgorithm::EdDsa.to_string(), "EdDSA");
    let err = signer(SigningAlgorithm::EdDsa)
        .sign(&sample_card(), Some(""))
        .unwrap_err();
    assert!(matches!(err, SigningError::EmptyJku), "{err}");
}

#[test]
fn the_merged_form_of_a_signed_card_still_verifies() {
    for alg in BOTH {
        let signer = signer(alg);
        let signed = signer
            .sign(&sample_card(), Some("https://sb.example/jwks"))
            .unwrap();
        let merged = signed.to_merged_json();
        // The merged form really has the 0.3 fields, including the ones added inside
        // securitySchemes entries and the 0.3 `security` list.
        assert_eq!(merged["protocolVersion"], "0.3.0");
        assert_eq!(merged["securitySchemes"]["bearer"]["type"], "http");
        assert_eq!(merged["security"][0], json!({"bearer": ["tasks:write"]}));
        assert_eq!(
            verifier(&[&signer]).verify(&merged).unwrap(),
            signer.kid(),
            "{alg}"
        );

        // The 1.0 fields of a merged card are covered…
        let mut tampered = merged.clone();
        tampered["name"] = json!("evil");
        let err = verifier(&[&signer]).verify(&tampered).unwrap_err();
        assert!(
            matches!(err, SigningError::BadSignature { .. }),
            "{alg}: {err}"
        );
        // …the 0.3 ones are not (as with the SDKs' verifiers, which parse the 1.0 model).
        let mut extra = merged.clone();
        extra["url"] = json!("https://elsewhere.example/a2a");
        assert!(verifier(&[&signer]).verify(&extra).is_ok(), "{alg}");
    }
}

#[test]
fn the_canonical_payload_of_a_known_card_is_the_hand_derived_bytes() {
    let card = AgentCard {
        name: "echo".into(),
        description: String::new(),
        supported_interfaces: vec![interface("https://h/a2a", "JSONRPC", "1.0", Some(""))],
        provider: None,
        version: "1".into(),
        documentation_url: None,
        capabilities: AgentCapabilities {
            streaming: Some(false),
            extensions: vec![AgentExtension {
                uri: "urn:x".into(),
                description: String::new(),
                required: false,
                params: Some(
                    json!({"z": 1.5, "name": "café", "n": 10, "big": 1e21, "a": null, "m": {}, "k": [""]})
                        .as_object()
                        .cloned()
                        .unwrap(),
                ),
            }],
            ..Default::default()
        },
        security_schemes: BTreeMap::from([(
            "bearer".into(),
            SecurityScheme::HttpAuthSecurityScheme {
                description: None,
                scheme: "Bearer".into(),
                bearer_format: None,
            },
        )]),
        security_requirements: vec![BTreeMap::from([("bearer".into(), vec![])])],
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec![],
        skills: vec![],
        icon_url: None,
        signatures: vec![AgentCardSignature {
            protected: "p".into(),
            signature: "s".into(),
            header: None,
        }],
    };
    // By hand: keys sorted at every level; "description":"", "tenant":"", the empty
    // output modes and skills, the params' null, {} and [""] dropped; the scope-less
    // requirement {"schemes":{"bearer":{}}} empties out level by level and goes too;
    // `signatures` is never signed; numbers as ECMAScript writes them (1e21 → 1e+21);
    // non-ASCII as UTF-8; no whitespace.
    let expected = concat!(
        r#"{"capabilities":{"extensions":[{"params":{"big":1e+21,"n":10,"name":"café","z":1.5},"#,
        r#""uri":"urn:x"}],"streaming":false},"#,
        r#""defaultInputModes":["text/plain"],"#,
        r#""name":"echo","#,
        r#""securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer"}}},"#,
        r#""supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"https://h/a2a"}],"#,
        r#""version":"1"}"#,
    );
    let payload = canonical_payload(&serde_json::to_value(&card).unwrap()).unwrap();
    assert_eq!(String::from_utf8(payload).unwrap(), expected);
}

#[test]
fn the_canonical_payload_ignores_signatures_and_merged_fields() {
    let signer = signer(SigningAlgorithm::EdDsa);
    let card = sample_card();
    let plain = canonical_payload(&serde_json::to_value(&card).unwrap()).unwrap();
    let signed = signer.sign(&card, None).unwrap();
    assert_eq!(
        canonical_payload(&serde_json::to_value(&signed).unwrap()).unwrap(),
        plain
    );
    assert_eq!(canonical_payload(&signed.to_merged_json()).unwrap(), plain);
    // And it is what the signature covers: the signing input rebuilt from it verifies.
    let input = format!(
        "{}.{}",
        signed.signatures[0].protected,
        URL_SAFE_NO_PAD.encode(&plain)
    );
    let key = DecodingKey::from_jwk(&serde_json::from_value(signer.public_jwk()).unwrap()).unwrap();
    assert!(
        jsonwebtoken::crypto::verify(
            &signed.signatures[0].signature,
            input.as_bytes(),
            &key,
            Algorithm::EdDSA
        )
        .unwrap()
    );
}

#[test]
fn the_canonicaliser_follows_rfc_8785() {
    // RFC 8785 §3.2.2's example, input and output as the RFC prints them.
    let input: Value = serde_json::from_str(
        r#"{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
            "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
            "literals": [null, true, false]}"#,
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(jcs(&input).unwrap()).unwrap(),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
    // RFC 8785 §3.2.3: keys sort by UTF-16 code units (the emoji's surrogates come
    // before U+FB33 although its code point is larger).
    let input: Value = serde_json::from_str(
        r#"{"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh",
            "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control",
            "\u00f6": "Latin Small Letter O With Diaeresis"}"#,
    )
    .unwrap();
    let sorted: Value = serde_json::from_slice(&jcs(&input).unwrap()).unwrap();
    let order: Vec<&str> = sorted
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "Carriage Return",
            "One",
            "Control",
            "Latin Small Letter O With Diaeresis",
            "Euro Sign",
            "Emoji: Grinning Face",
            "Hebrew Letter Dalet With Dagesh",
        ]
    );
}

#[test]
fn integers_without_an_exact_double_are_refused() {
    let mut card = sample_card();
    fn params(card: &mut AgentCard) -> &mut Map<String, Value> {
        card.capabilities.extensions[0].params.as_mut().unwrap()
    }
    params(&mut card).insert("max".into(), json!(9_007_199_254_740_991_u64));
    assert!(canonical_payload(&serde_json::to_value(&card).unwrap()).is_ok());
    params(&mut card).insert("id".into(), json!(9_007_199_254_740_993_u64));
    let err = canonical_payload(&serde_json::to_value(&card).unwrap()).unwrap_err();
    assert!(matches!(err, SigningError::Canonicalization(_)), "{err}");
    assert!(
        err.to_string()
            .contains("capabilities.extensions[0].params.id"),
        "{err}"
    );
    let err = signer(SigningAlgorithm::Es256)
        .sign(&card, None)
        .unwrap_err();
    assert!(matches!(err, SigningError::Canonicalization(_)), "{err}");
}

#[test]
fn from_pem_of_the_generated_pem_is_the_same_key() {
    for alg in BOTH {
        let (generated, pem) = CardSigner::generate(alg).unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{pem}");
        let loaded = CardSigner::from_pem(&pem, None).unwrap();
        assert_eq!(loaded.kid(), generated.kid(), "{alg}");
        assert_eq!(loaded.algorithm(), alg);
        assert_eq!(loaded.public_jwk(), generated.public_jwk(), "{alg}");
        let json = signed_json(&loaded, &sample_card());
        assert_eq!(
            verifier(&[&generated]).verify(&json).unwrap(),
            generated.kid()
        );
        // A given kid is used as is.
        let named = CardSigner::from_pem(&pem, Some("2026-01".into())).unwrap();
        assert_eq!(named.kid(), "2026-01");
        assert_eq!(named.public_jwk()["kid"], "2026-01");
    }
}

#[test]
fn two_generated_keys_differ() {
    for alg in BOTH {
        let (a, pem_a) = CardSigner::generate(alg).unwrap();
        let (b, pem_b) = CardSigner::generate(alg).unwrap();
        assert_ne!(pem_a, pem_b);
        assert_ne!(a.kid(), b.kid());
    }
}

#[test]
fn the_default_kid_is_the_rfc_7638_thumbprint() {
    let ed = CardSigner::from_pem(&rfc8037_pem(), None).unwrap();
    assert_eq!(ed.algorithm(), SigningAlgorithm::EdDsa);
    assert_eq!(ed.kid(), RFC8037_THUMBPRINT);
    assert_eq!(
        ed.public_jwk(),
        json!({"kty": "OKP", "crv": "Ed25519", "x": RFC8037_X,
               "kid": RFC8037_THUMBPRINT, "alg": "EdDSA", "use": "sig"})
    );
    let ec = CardSigner::from_pem(&rfc7515_pem(), None).unwrap();
    assert_eq!(ec.algorithm(), SigningAlgorithm::Es256);
    assert_eq!(ec.kid(), RFC7515_THUMBPRINT);
    assert_eq!(
        ec.public_jwk(),
        json!({"kty": "EC", "crv": "P-256", "x": RFC7515_X, "y": RFC7515_Y,
               "kid": RFC7515_THUMBPRINT, "alg": "ES256", "use": "sig"})
    );
    assert_eq!(
        jwks(&[&ed, &ec]),
        json!({"keys": [ed.public_jwk(), ec.public_jwk()]})
    );
}

#[test]
fn eddsa_signatures_match_rfc_8037() {
    // RFC 8037 appendix A.4: Ed25519 is deterministic, so the signature is fixed.
    let ed = CardSigner::from_pem(&rfc8037_pem(), None).unwrap();
    let signature = ed
        .sign_input(b"eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc")
        .unwrap();
    assert_eq!(
        signature,
        "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"
    );
}

#[test]
fn a_pkcs8_v2_ed25519_key_is_read() {
    // ed25519-dalek writes PKCS#8 v2 (with the public key); others write v1. Same key.
    let seed: [u8; 32] = URL_SAFE_NO_PAD
        .decode(RFC8037_D)
        .unwrap()
        .try_into()
        .unwrap();
    let v2 = ed25519_dalek::SigningKey::from_bytes(&seed)
        .to_pkcs8_pem(LineEnding::LF)
        .unwrap();
    assert_ne!(v2.as_str(), rfc8037_pem());
    let signer = CardSigner::from_pem(&v2, None).unwrap();
    assert_eq!(signer.kid(), RFC8037_THUMBPRINT);
    let json = signed_json(&signer, &sample_card());
    assert!(verifier(&[&signer]).verify(&json).is_ok());
}

#[test]
fn debug_does_not_print_the_private_key() {
    let pem = rfc8037_pem();
    let signer = CardSigner::from_pem(&pem, None).unwrap();
    let debug = format!("{signer:?}");
    assert!(debug.contains(RFC8037_THUMBPRINT), "{debug}");
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let seed = URL_SAFE_NO_PAD.decode(RFC8037_D).unwrap();
    for secret in [
        RFC8037_D.to_owned(),
        body,
        format!("{seed:?}"),
        format!("{:?}", &seed[..8]),
    ] {
        assert!(!debug.contains(&secret), "{debug} shows {secret}");
    }
    let ec = CardSigner::from_pem(&rfc7515_pem(), None).unwrap();
    assert!(!format!("{ec:?}").contains(RFC7515_D));
    let verifier = verifier(&[&signer, &ec]);
    let debug = format!("{verifier:?}");
    assert!(
        debug.contains(RFC8037_THUMBPRINT) && debug.contains("ES256"),
        "{debug}"
    );
}

// Signed by the official Python SDK (a2a-sdk 1.3.0, `a2a.utils.signing`
// `create_agent_card_signer`) with the RFC 8037 Ed25519 key (kid "python-ed", with a jku)
// and then the RFC 7515 P-256 key (kid "python-ec"), and printed with `MessageToDict`;
// PY_CANONICAL is the SDK's `_canonicalize_agent_card` of the same card.
const PY_CARD: &str = r#"{"name": "py-agent", "description": "Signed by the Python SDK — café ✓", "supportedInterfaces": [{"url": "https://py.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}, {"url": "https://py.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}], "provider": {"url": "https://py.example", "organization": "Py"}, "version": "2.0.1", "capabilities": {"streaming": true, "pushNotifications": false, "extensions": [{"uri": "urn:ext:1", "params": {"f": 0.5, "nested": {"a": [1.0, 2.0]}, "n": 3.0, "s": "x", "e": ""}}]}, "securitySchemes": {"key": {"apiKeySecurityScheme": {"location": "header", "name": "X-Key"}}, "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}}}, "securityRequirements": [{"schemes": {"bearer": {"list": ["read", "write"]}}}, {"schemes": {"key": {}}}], "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain", "application/json"], "skills": [{"id": "s1", "name": "Skill", "description": "Does it", "tags": ["t"], "examples": ["hi"]}], "signatures": [{"protected": "eyJhbGciOiJFZERTQSIsImprdSI6Imh0dHBzOi8vcHkuZXhhbXBsZS9qd2tzLmpzb24iLCJraWQiOiJweXRob24tZWQiLCJ0eXAiOiJKT1NFIn0", "signature": "PG28yuUzvPOYS2E0-fvUDxVGDFH-W8cGoeinYD57_xbsBjnqRhawkuETTCxSq501MvxbLHFomneMJCO9j5KDCw"}, {"protected": "eyJhbGciOiJFUzI1NiIsImtpZCI6InB5dGhvbi1lYyIsInR5cCI6IkpPU0UifQ", "signature": "Y4f95_15wy9MXz7Dg_JNQR6VUDpgosvO0YcjN1di5dVzLWwZ3LuC4Oet77lvCILwNNnlVrvmeUUYTxzpiGNZEQ"}]}"#;
const PY_CANONICAL: &str = r#"{"capabilities":{"extensions":[{"params":{"f":0.5,"n":3,"nested":{"a":[1,2]},"s":"x"},"uri":"urn:ext:1"}],"pushNotifications":false,"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain","application/json"],"description":"Signed by the Python SDK — café ✓","name":"py-agent","provider":{"organization":"Py","url":"https://py.example"},"securityRequirements":[{"schemes":{"bearer":{"list":["read","write"]}}}],"securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"bearerFormat":"JWT","scheme":"Bearer"}},"key":{"apiKeySecurityScheme":{"location":"header","name":"X-Key"}}},"skills":[{"description":"Does it","examples":["hi"],"id":"s1","name":"Skill","tags":["t"]}],"supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"https://py.example/a2a"},{"protocolBinding":"JSONRPC","protocolVersion":"0.3","url":"https://py.example/a2a"}],"version":"2.0.1"}"#;

fn python_keys() -> Value {
    json!({"keys": [
        {"kty": "OKP", "crv": "Ed25519", "x": RFC8037_X, "kid": "python-ed"},
        {"kty": "EC", "crv": "P-256", "x": RFC7515_X, "y": RFC7515_Y, "kid": "python-ec",
         "alg": "ES256", "use": "sig"},
    ]})
}

#[test]
fn cards_signed_by_the_python_sdk_verify() {
    let card: Value = serde_json::from_str(PY_CARD).unwrap();
    assert_eq!(canonical_payload(&card).unwrap(), PY_CANONICAL.as_bytes());
    let both = CardVerifier::from_jwks(&python_keys()).unwrap();
    assert_eq!(both.verify(&card).unwrap(), "python-ed");
    // With only the EC key the first signature's kid is unknown and the second verifies.
    let mut ec_only = python_keys();
    ec_only["keys"].as_array_mut().unwrap().remove(0);
    assert_eq!(
        CardVerifier::from_jwks(&ec_only)
            .unwrap()
            .verify(&card)
            .unwrap(),
        "python-ec"
    );
    // And a change the SDK's signature covers is caught.
    let mut tampered = card;
    tampered["capabilities"]["extensions"][0]["params"]["n"] = json!(4);
    let err = both.verify(&tampered).unwrap_err();
    let SigningError::NoValidSignature(errors) = &err else {
        panic!("expected NoValidSignature, got {err}");
    };
    assert_eq!(errors.len(), 2);
    assert!(
        errors
            .iter()
            .all(|e| matches!(e, SigningError::BadSignature { .. })),
        "{err}"
    );
}

#[test]
fn the_python_sdk_signer_and_this_one_sign_the_same_bytes() {
    // The same card signed here with the same Ed25519 key and header gives the SDK's
    // signature byte for byte (Ed25519 is deterministic).
    let mut card: AgentCard = parse_card(&serde_json::from_str(PY_CARD).unwrap()).unwrap();
    card.signatures.truncate(1);
    let python = card.signatures[0].clone();
    let ed = CardSigner::from_pem(&rfc8037_pem(), Some("python-ed".into())).unwrap();
    let ours = ed
        .sign(&card, Some("https://py.example/jwks.json"))
        .unwrap();
    assert_eq!(ours.signatures[0].protected, python.protected);
    assert_eq!(ours.signatures[0].signature, python.signature);
}

#[test]
fn a_card_without_signatures_fails() {
    let json = serde_json::to_value(sample_card()).unwrap();
    let err = verifier(&[&signer(SigningAlgorithm::Es256)])
        .verify(&json)
        .unwrap_err();
    assert!(matches!(err, SigningError::NoSignatures), "{err}");
}

#[test]
fn unsupported_algorithms_and_malformed_headers_fail() {
    let signer = signer(SigningAlgorithm::Es256);
    let verifier = verifier(&[&signer]);
    let json = signed_json(&signer, &sample_card());
    let kid = signer.kid();
    for alg in ["HS256", "RS256", "ES384", "none"] {
        let card = with_header(
            &json,
            &format!(r#"{{"alg":"{alg}","kid":"{kid}","typ":"JOSE"}}"#),
        );
        let err = verifier.verify(&card).unwrap_err();
        assert!(
            matches!(&err, SigningError::UnsupportedAlgorithm { alg: a, .. } if a == alg),
            "{alg}: {err}"
        );
    }
    let malformed = [
        (r#"{"kid":"k","typ":"JOSE"}"#, "no \"alg\""),
        (r#"{"alg":"ES256","typ":"JOSE"}"#, "no \"kid\""),
        (
            r#"{"alg":"ES256","kid":""}"#,
            "\"kid\" is not a non-empty string",
        ),
        (r#"{"alg":7,"kid":"k"}"#, "\"alg\" is not a string"),
        (r#"["ES256"]"#, "not a JSON object"),
        ("alg=ES256", "not JSON"),
        (
            r#"{"alg":"ES256","kid":"k","crit":["exp"],"exp":1}"#,
            "crit",
        ),
        (r#"{"alg":"ES256","kid":"k","b64":false}"#, "b64"),
    ];
    for (header, says) in malformed {
        let err = verifier.verify(&with_header(&json, header)).unwrap_err();
        assert!(
            matches!(err, SigningError::MalformedHeader { index: 0, .. }),
            "{header}: {err}"
        );
        assert!(err.to_string().contains(says), "{header}: {err}");
    }
    let mut not_base64 = json.clone();
    not_base64["signatures"][0]["protected"] = json!("eyJ!!");
    let err = verifier.verify(&not_base64).unwrap_err();
    assert!(err.to_string().contains("not base64url"), "{err}");
    let mut bad_value = json;
    bad_value["signatures"][0]["signature"] = json!("***");
    let err = verifier.verify(&bad_value).unwrap_err();
    assert!(
        matches!(err, SigningError::MalformedSignature { .. }),
        "{err}"
    );
}

#[test]
fn a_header_naming_the_wrong_algorithm_for_its_key_fails() {
    let signer = signer(SigningAlgorithm::Es256);
    let json = signed_json(&signer, &sample_card());
    let card = with_header(
        &json,
        &format!(r#"{{"alg":"EdDSA","kid":"{}"}}"#, signer.kid()),
    );
    let err = verifier(&[&signer]).verify(&card).unwrap_err();
    assert!(
        matches!(
            err,
            SigningError::AlgorithmMismatch {
                alg: SigningAlgorithm::EdDsa,
                key_alg: SigningAlgorithm::Es256,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn any_one_good_signature_is_enough_and_every_failure_is_reported() {
    let trusted = signer(SigningAlgorithm::EdDsa);
    let stranger = signer(SigningAlgorithm::Es256);
    let card = sample_card();
    let by_stranger = stranger.sign(&card, None).unwrap();
    let by_trusted = trusted.sign(&card, None).unwrap();
    let mut both = by_stranger;
    both.signatures.extend(by_trusted.signatures);
    let verifier = verifier(&[&trusted]);
    let json = serde_json::to_value(&both).unwrap();
    assert_eq!(verifier.verify(&json).unwrap(), trusted.kid());

    let mut tampered = both.clone();
    tampered.version = "9.9.9".into();
    let err = verifier
        .verify(&serde_json::to_value(&tampered).unwrap())
        .unwrap_err();
    let SigningError::NoValidSignature(errors) = &err else {
        panic!("expected NoValidSignature, got {err}");
    };
    assert!(
        matches!(errors[0], SigningError::UnknownKid { index: 0, .. }),
        "{err}"
    );
    assert!(
        matches!(errors[1], SigningError::BadSignature { index: 1, .. }),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.starts_with("none of the card's 2 signatures verifies"),
        "{message}"
    );
    assert!(
        message.contains("signatures[0]") && message.contains("signatures[1]"),
        "{message}"
    );
}

#[test]
fn invalid_card_json_is_reported() {
    let verifier = verifier(&[&signer(SigningAlgorithm::EdDsa)]);
    let err = verifier.verify(&json!(["not", "a", "card"])).unwrap_err();
    assert!(matches!(err, SigningError::InvalidCard(_)), "{err}");
    let mut json = serde_json::to_value(sample_card()).unwrap();
    json.as_object_mut().unwrap().remove("supportedInterfaces");
    let err = verifier.verify(&json).unwrap_err();
    assert!(err.to_string().contains("supportedInterfaces"), "{err}");
    assert!(canonical_payload(&json).is_err());
}

#[test]
fn from_jwks_skips_keys_it_cannot_use() {
    let signer = CardSigner::from_pem(&rfc8037_pem(), None).unwrap();
    let ec = CardSigner::from_pem(&rfc7515_pem(), None).unwrap();
    let jwks = json!({"keys": [
        {"kty": "RSA", "kid": "rsa", "n": "sXch", "e": "AQAB"},
        {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"},
        {"kty": "OKP", "crv": "X25519", "kid": "x25519", "x": RFC8037_X},
        {"kty": "EC", "crv": "P-384", "kid": "p384", "x": RFC7515_X, "y": RFC7515_Y},
        {"kty": "EC", "crv": "P-256", "kid": "enc", "use": "enc", "x": RFC7515_X, "y": RFC7515_Y},
        {"kty": "EC", "crv": "P-256", "kid": "ops", "key_ops": ["sign"], "x": RFC7515_X, "y": RFC7515_Y},
        {"kty": "EC", "crv": "P-256", "kid": "es384", "alg": "ES384", "x": RFC7515_X, "y": RFC7515_Y},
        {"kty": "EC", "crv": "P-256", "kid": "off-curve", "x": RFC7515_X, "y": RFC7515_X},
        {"kty": "OKP", "crv": "Ed25519", "kid": "short", "x": "AAAA"},
        {"kty": "OKP", "crv": "Ed25519", "kid": "weak", "x": URL_SAFE_NO_PAD.encode([0u8; 32])},
        {"kty": "OKP", "crv": "Ed25519", "kid": "padded", "x": format!("{RFC8037_X}=")},
        "not a key",
        // Usable: no kid, so it is known by its RFC 7638 thumbprint.
        {"kty": "OKP", "crv": "Ed25519", "x": RFC8037_X},
    ]});
    let verifier = CardVerifier::from_jwks(&jwks).unwrap();
    assert_eq!(
        format!("{verifier:?}"),
        format!(r#"CardVerifier {{ keys: ["{RFC8037_THUMBPRINT} (EdDSA)"] }}"#)
    );
    let json = signed_json(&signer, &sample_card());
    assert_eq!(verifier.verify(&json).unwrap(), RFC8037_THUMBPRINT);
    let err = verifier
        .verify(&signed_json(&ec, &sample_card()))
        .unwrap_err();
    assert!(matches!(err, SigningError::UnknownKid { .. }), "{err}");

    let mut unusable = jwks;
    unusable["keys"].as_array_mut().unwrap().pop();
    let err = CardVerifier::from_jwks(&unusable).unwrap_err();
    let SigningError::NoUsableKeys { skipped } = &err else {
        panic!("expected NoUsableKeys, got {err}");
    };
    assert_eq!(skipped.len(), 12, "{err}");
    for (kid, says) in [
        ("rsa", "RSA keys are not supported"),
        ("hmac", "symmetric"),
        ("x25519", ""),
        ("p384", "P384"),
        ("enc", "\"enc\""),
        ("ops", "key_ops"),
        ("es384", "ES384"),
        ("off-curve", "not a point on P-256"),
        ("short", "3 bytes, not 32"),
        ("weak", "weak"),
        ("padded", "base64url"),
    ] {
        let line = skipped
            .iter()
            .find(|s| s.contains(&format!("(kid {kid:?})")));
        assert!(line.is_some_and(|l| l.contains(says)), "{kid}: {err}");
    }
    for not_jwks in [json!({}), json!({"keys": {}}), json!([])] {
        let err = CardVerifier::from_jwks(&not_jwks).unwrap_err();
        assert!(matches!(err, SigningError::InvalidJwks(_)), "{err}");
    }
    let err = CardVerifier::from_jwks(&json!({"keys": []})).unwrap_err();
    assert!(matches!(err, SigningError::NoUsableKeys { .. }), "{err}");
}

const RSA_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIIBVAIBADANBgkqhkiG9w0BAQEFAASCAT4wggE6AgEAAkEAzipUUNGU/q+I1tnw
4fBumtFqaXFuYooOGNJGPFsE6CaAk1Wtyy823I98DY1OiUIShxfcTGkW7mL1Lhwo
KNgu6wIDAQABAkEAhbLzzRmtm2Ewx8y8p3mp8OLgNJNoN6U6MSSkgd2xF+88fr9s
DLQAS2UPR5MsLNsk9lqt+UPRHyYF+21p/IzMSQIhAP/ND4jyEeBAL0WGNqthpdyS
Bk6LwzZfIdZqm9aFnNvdAiEAzlNiaCoryEzGTiwzrE3YQMQqtiCsj5G/R3wulDt/
jWcCIFNWFDSSYJ6FaqEk25S0CFw2upVGVT/WeGipbMHT38mFAiBvouZn/glag0/5
FCmRXT1ZLcr+aId11yJsB2Eci2TkmQIgcHu84mDPlZHVVm56tQy1K56kAn+wjirY
DIoxWXM23sM=
-----END PRIVATE KEY-----";

const P384_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDBn93AQWPIryYF7paOM
edVKLwYACYJL0Apt963PcmtMw6fGtK7tMLifSXZuG9fgbzChZANiAAR+obDuOre1
aPqUP0HlRAFafeTIcqYBddRxPhWeCGylmhmdc0+zjIcroej/FE2WjXtwRuuByyiy
1Rfl6CWPcDwfqaE2e71Ou/Gr/Fd3VHAU6l+NrLg6NFiqmYx/6Z69+D4=
-----END PRIVATE KEY-----";

const SEC1_PEM: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEINEQF4ZQJ0ktSG4MwKTV6M5RczleNRjE3hXVHGV2E08hoAoGCCqGSM49
AwEHoUQDQgAEsuTWtldQPtybqejxTMduUudXD2qW5LIBPXo1eQ/Iyaq45UiAqGWw
nQ15ZcrotXjwzIZtEEt4HcdMdQCPXvwrHw==
-----END EC PRIVATE KEY-----";

const X25519_PEM: &str = "-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VuBCIEIPj9fpBZYp9t6XGZwxJaFQplYczHgd0AzQ6P9lZaKTB2
-----END PRIVATE KEY-----";

const ED25519_PUBLIC_PEM: &str = "-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAVXvFXWUXaswT5rZlRK+RzEXK06/e0fnQ5LxAmy5CO4Q=
-----END PUBLIC KEY-----";

#[test]
fn from_pem_refuses_other_keys_saying_what_to_do() {
    type IsKind = fn(&SigningError) -> bool;
    let cases: [(&str, IsKind, &str); 6] = [
        (
            RSA_PEM,
            |e| matches!(e, SigningError::UnsupportedKey(_)),
            "an RSA key",
        ),
        (
            P384_PEM,
            |e| matches!(e, SigningError::UnsupportedKey(_)),
            "P-384",
        ),
        (
            X25519_PEM,
            |e| matches!(e, SigningError::UnsupportedKey(_)),
            "1.3.101.110",
        ),
        (
            SEC1_PEM,
            |e| matches!(e, SigningError::InvalidKey(_)),
            "openssl pkcs8 -topk8",
        ),
        (
            ED25519_PUBLIC_PEM,
            |e| matches!(e, SigningError::InvalidKey(_)),
            "needs the private key",
        ),
        (
            "not a key",
            |e| matches!(e, SigningError::InvalidKey(_)),
            "BEGIN PRIVATE KEY",
        ),
    ];
    for (pem, kind, says) in cases {
        let err = CardSigner::from_pem(pem, None).unwrap_err();
        assert!(kind(&err), "{err}");
        assert!(err.to_string().contains(says), "{err}");
    }
    let err = CardSigner::from_pem(RSA_PEM, None).unwrap_err();
    assert!(
        err.to_string().contains("ES256 (an EC P-256 key) or EdDSA"),
        "{err}"
    );
    let err = CardSigner::from_pem(&rfc8037_pem(), Some(String::new())).unwrap_err();
    assert!(matches!(err, SigningError::EmptyKid), "{err}");
}
