//! Standard Webhooks signatures (`webhook-signature: v1,<base64 HMAC-SHA256>`), and
//! each agent's signing key ([`SigningSecrets`], which follows the registry).

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;

/// Per agent, the key that signs its webhooks; replaced whole when the registry changes.
#[derive(Debug, Default)]
pub struct SigningSecrets(ArcSwap<HashMap<String, Arc<[u8]>>>);

impl SigningSecrets {
    pub fn new(by_agent: HashMap<String, Vec<u8>>) -> SigningSecrets {
        let secrets = SigningSecrets::default();
        secrets.replace(by_agent);
        secrets
    }

    pub fn get(&self, agent: &str) -> Option<Arc<[u8]>> {
        self.0.load().get(agent).cloned()
    }

    pub fn is_empty(&self) -> bool {
        self.0.load().is_empty()
    }

    pub fn replace(&self, by_agent: HashMap<String, Vec<u8>>) {
        let keys = by_agent
            .into_iter()
            .map(|(k, v)| (k, Arc::from(v)))
            .collect();
        self.0.store(Arc::new(keys));
    }
}

/// The Standard Webhooks signature: `v1,` + base64 of HMAC-SHA256 over
/// `{id}.{timestamp}.{body}`.
pub fn sign(secret: &[u8], webhook_id: &str, timestamp: &str, body: &[u8]) -> String {
    use base64::Engine;
    use hmac::{KeyInit, Mac};
    // HMAC takes keys of any length, so the error arm cannot be reached.
    let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret) else {
        return String::new();
    };
    mac.update(webhook_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// Reads a signing secret: `whsec_<base64>` (the Standard Webhooks form) or raw text.
pub fn parse_secret(text: &str) -> Result<Vec<u8>, String> {
    use base64::Engine;
    match text.strip_prefix("whsec_") {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| "a whsec_ secret must be base64 after the prefix".to_owned()),
        None if text.len() >= 16 => Ok(text.as_bytes().to_vec()),
        None => Err("a webhook signing secret needs at least 16 characters".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_standard_webhooks_vector() {
        // The Standard Webhooks reference test vector.
        let secret = parse_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        let signature = sign(&secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body);
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert!(parse_secret("short").is_err());
        assert!(parse_secret("whsec_***").is_err());
    }
}
