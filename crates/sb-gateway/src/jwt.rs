//! JWT bearer tokens verified against a JWKS (a file, or a URL refreshed periodically).
//!
//! A token must name its key (`kid`) in the set; the key decides the algorithm family, so
//! a token cannot pick a weaker algorithm than its key (no `none`, no HMAC with a public
//! key). Expiry is always checked; issuer and audience when configured.

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{DecodingKey, Validation, decode, decode_header};
use parking_lot::RwLock;
use serde_json::{Map, Value};

/// Where the key set comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum JwksSource {
    File(std::path::PathBuf),
    Url(String),
}

#[derive(Clone, Debug)]
pub struct JwtVerifier {
    keys: Arc<RwLock<JwkSet>>,
    pub source: JwksSource,
    issuer: Option<String>,
    audience: Option<String>,
    /// The claim that names the principal (default `sub`).
    principal_claim: String,
}

/// How often a JWKS URL is fetched again (key rotation).
pub const JWKS_REFRESH: Duration = Duration::from_secs(300);

fn parse_set(json: &str) -> Result<JwkSet, String> {
    serde_json::from_str(json).map_err(|e| format!("not a JWKS document: {e}"))
}

impl JwtVerifier {
    /// A verifier with the given key set (JSON).
    pub fn new(
        jwks_json: &str,
        source: JwksSource,
        issuer: Option<String>,
        audience: Option<String>,
        principal_claim: Option<String>,
    ) -> Result<JwtVerifier, String> {
        let keys = parse_set(jwks_json)?;
        Ok(JwtVerifier {
            keys: Arc::new(RwLock::new(keys)),
            source,
            issuer,
            audience,
            principal_claim: principal_claim.unwrap_or_else(|| "sub".to_owned()),
        })
    }

    /// Loads the key set from its source (reading the file or fetching the URL).
    pub async fn load(
        source: JwksSource,
        issuer: Option<String>,
        audience: Option<String>,
        principal_claim: Option<String>,
    ) -> Result<JwtVerifier, String> {
        let json = fetch(&source).await?;
        JwtVerifier::new(&json, source, issuer, audience, principal_claim)
    }

    /// Fetches the key set again (for URL sources; files are read once).
    pub async fn refresh(&self) -> Result<(), String> {
        let json = fetch(&self.source).await?;
        let keys = parse_set(&json)?;
        *self.keys.write() = keys;
        Ok(())
    }

    /// Verifies a token; returns the principal it names.
    pub fn verify(&self, token: &str) -> Result<String, String> {
        let header = decode_header(token).map_err(|e| format!("the token is not a JWT: {e}"))?;
        let kid = header
            .kid
            .as_deref()
            .ok_or("the token names no key (kid)")?;
        let keys = self.keys.read();
        let jwk = keys
            .find(kid)
            .ok_or_else(|| format!("the token's key {kid} is not in the key set"))?;
        let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("key {kid} is unusable: {e}"))?;
        // Both enums serialize to the JOSE name ("RS256", …).
        let declared = jwk
            .common
            .key_algorithm
            .and_then(|a| serde_json::to_value(a).ok());
        let presented = serde_json::to_value(header.alg).ok();
        if let Some(declared) = declared
            && Some(&declared) != presented.as_ref()
        {
            return Err(format!(
                "key {kid} is for {declared}, the token says {:?}",
                header.alg
            ));
        }
        let mut validation = Validation::new(header.alg);
        match &self.issuer {
            Some(issuer) => validation.set_issuer(&[issuer]),
            None => validation.iss = None,
        }
        match &self.audience {
            Some(audience) => validation.set_audience(&[audience]),
            None => validation.validate_aud = false,
        }
        let data = decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| format!("the token is not valid: {e}"))?;
        match data
            .claims
            .get(&self.principal_claim)
            .and_then(Value::as_str)
        {
            Some(principal) if !principal.is_empty() => Ok(principal.to_owned()),
            _ => Err(format!(
                "the token has no \"{}\" claim",
                self.principal_claim
            )),
        }
    }
}

async fn fetch(source: &JwksSource) -> Result<String, String> {
    match source {
        JwksSource::File(path) => tokio::fs::read_to_string(path)
            .await
            .map_err(|e| format!("cannot read JWKS file {}: {e}", path.display())),
        JwksSource::Url(url) => {
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .map_err(|e| e.to_string())?;
            let response = client
                .get(url)
                .send()
                .await
                .map_err(|e| format!("cannot fetch JWKS {url}: {e}"))?;
            if !response.status().is_success() {
                return Err(format!("JWKS {url} answered {}", response.status()));
            }
            response
                .text()
                .await
                .map_err(|e| format!("cannot read JWKS {url}: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header, encode};
    use serde_json::json;

    const SECRET: &[u8] = b"a-test-signing-key-of-32-bytes!!";

    fn jwks() -> String {
        use base64::Engine;
        let k = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(SECRET);
        json!({"keys": [{"kty": "oct", "kid": "k1", "alg": "HS256", "k": k}]}).to_string()
    }

    fn token(kid: &str, claims: Value) -> String {
        let mut header = Header::new(jsonwebtoken::Algorithm::HS256);
        header.kid = Some(kid.to_owned());
        encode(&header, &claims, &EncodingKey::from_secret(SECRET)).unwrap()
    }

    fn future() -> u64 {
        jsonwebtoken::get_current_timestamp() + 600
    }

    #[test]
    fn verifies_signature_expiry_issuer_and_audience() {
        let v = JwtVerifier::new(
            &jwks(),
            JwksSource::File("k.json".into()),
            Some("https://issuer".into()),
            Some("switchboard".into()),
            None,
        )
        .unwrap();
        let good =
            json!({"sub": "alice", "exp": future(), "iss": "https://issuer", "aud": "switchboard"});
        assert_eq!(v.verify(&token("k1", good.clone())).unwrap(), "alice");

        let expired =
            json!({"sub": "alice", "exp": 1000, "iss": "https://issuer", "aud": "switchboard"});
        assert!(
            v.verify(&token("k1", expired))
                .unwrap_err()
                .contains("not valid")
        );
        let wrong_issuer =
            json!({"sub": "alice", "exp": future(), "iss": "https://evil", "aud": "switchboard"});
        assert!(v.verify(&token("k1", wrong_issuer)).is_err());
        let wrong_audience =
            json!({"sub": "alice", "exp": future(), "iss": "https://issuer", "aud": "other"});
        assert!(v.verify(&token("k1", wrong_audience)).is_err());
        assert!(
            v.verify(&token("k9", good.clone()))
                .unwrap_err()
                .contains("not in the key set")
        );
        let forged = encode(
            &Header {
                kid: Some("k1".into()),
                ..Header::new(jsonwebtoken::Algorithm::HS256)
            },
            &good,
            &EncodingKey::from_secret(b"another-key-another-key-another!"),
        )
        .unwrap();
        assert!(v.verify(&forged).is_err());
        assert!(v.verify("not.a.jwt").is_err());
        let no_sub = json!({"exp": future(), "iss": "https://issuer", "aud": "switchboard"});
        assert!(
            v.verify(&token("k1", no_sub))
                .unwrap_err()
                .contains("\"sub\"")
        );
    }
}
