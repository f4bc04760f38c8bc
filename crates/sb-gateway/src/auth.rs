//! Authentication per hosted agent: who is calling, from the request's credentials.
//!
//! The same [`AgentAuth`] value produces the card's `securitySchemes` and
//! `securityRequirements` ([`AgentAuth::card_security`]), so what a card declares is
//! exactly what is enforced. Secrets are compared in constant time.

use std::collections::BTreeMap;

use axum::http::HeaderMap;
use sb_protocol::card::SecurityScheme;
use subtle::ConstantTimeEq;

use crate::jwt::JwtVerifier;

/// Security schemes by name, as the card lists them.
pub type SecuritySchemes = BTreeMap<String, SecurityScheme>;
/// Scheme names (each with its scopes) that together satisfy a requirement.
pub type SecurityRequirement = BTreeMap<String, Vec<String>>;

/// One credential and the principal it stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct Credential {
    pub principal: String,
    pub secret: String,
}

/// An API key scheme: keys sent in one request header.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiKeys {
    pub header: String,
    pub keys: Vec<Credential>,
}

/// How an agent authenticates callers. Empty (the default) means no authentication:
/// every caller is the anonymous principal "".
#[derive(Clone, Debug, Default)]
pub struct AgentAuth {
    /// `Authorization: Bearer <token>` with static tokens.
    pub bearer_tokens: Vec<Credential>,
    pub api_keys: Option<ApiKeys>,
    /// `Authorization: Bearer <JWT>` verified against a key set.
    pub jwt: Option<JwtVerifier>,
}

/// The outcome of authenticating one request.
#[derive(Clone, Debug, PartialEq)]
pub enum Caller {
    Anonymous,
    Principal(String),
}

impl Caller {
    /// The owner recorded on tasks and push configs.
    pub fn owner(&self) -> &str {
        match self {
            Caller::Anonymous => "",
            Caller::Principal(p) => p,
        }
    }
}

/// Why a request was refused, and the challenge to send back.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub message: String,
    pub challenge: String,
}

const BEARER_SCHEME: &str = "bearer";
const API_KEY_SCHEME: &str = "apiKey";
const JWT_SCHEME: &str = "jwt";

fn find<'a>(credentials: &'a [Credential], presented: &str) -> Option<&'a Credential> {
    // Check every credential (no early exit) so timing does not tell which one matched.
    let mut found = None;
    for credential in credentials {
        if bool::from(credential.secret.as_bytes().ct_eq(presented.as_bytes())) {
            found = Some(credential);
        }
    }
    found
}

impl AgentAuth {
    pub fn is_enabled(&self) -> bool {
        !self.bearer_tokens.is_empty() || self.api_keys.is_some() || self.jwt.is_some()
    }

    /// Identifies the caller, or refuses the request.
    pub fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, Refusal> {
        if !self.is_enabled() {
            return Ok(Caller::Anonymous);
        }
        if let Some(api) = &self.api_keys
            && let Some(key) = headers
                .get(api.header.as_str())
                .and_then(|v| v.to_str().ok())
        {
            return match find(&api.keys, key.trim()) {
                Some(c) => Ok(Caller::Principal(c.principal.clone())),
                None => Err(self.refusal("the API key is not valid")),
            };
        }
        let authorization = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if let Some(value) = authorization {
            let token = value
                .split_once(' ')
                .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                .map(|(_, token)| token.trim());
            let Some(token) = token else {
                return Err(self.refusal("only Bearer credentials are accepted in Authorization"));
            };
            if let Some(c) = find(&self.bearer_tokens, token) {
                return Ok(Caller::Principal(c.principal.clone()));
            }
            return match &self.jwt {
                Some(jwt) => jwt
                    .verify(token)
                    .map(Caller::Principal)
                    .map_err(|reason| self.refusal(&reason)),
                None => Err(self.refusal("the bearer token is not valid")),
            };
        }
        Err(self.refusal("this agent requires authentication"))
    }

    fn refusal(&self, message: &str) -> Refusal {
        let mut challenges = Vec::new();
        if !self.bearer_tokens.is_empty() || self.jwt.is_some() {
            challenges.push("Bearer realm=\"switchboard\"".to_owned());
        }
        if let Some(api) = &self.api_keys {
            challenges.push(format!(
                "ApiKey realm=\"switchboard\", header=\"{}\"",
                api.header
            ));
        }
        let bearer = !self.bearer_tokens.is_empty() || self.jwt.is_some();
        let hint = match &self.api_keys {
            Some(api) if bearer => format!(
                "send Authorization: Bearer <token> or {}: <key>",
                api.header
            ),
            Some(api) => format!("send {}: <key>", api.header),
            None => "send Authorization: Bearer <token>".to_owned(),
        };
        Refusal {
            message: format!("{message}; {hint}"),
            challenge: challenges.join(", "),
        }
    }

    /// The card's security schemes and requirements (any one scheme suffices).
    pub fn card_security(&self) -> (SecuritySchemes, Vec<SecurityRequirement>) {
        let mut schemes = BTreeMap::new();
        let mut requirements = Vec::new();
        if !self.bearer_tokens.is_empty() {
            schemes.insert(
                BEARER_SCHEME.to_owned(),
                SecurityScheme::HttpAuthSecurityScheme {
                    description: Some("a bearer token issued by the operator".into()),
                    scheme: "Bearer".into(),
                    bearer_format: None,
                },
            );
            requirements.push(BTreeMap::from([(BEARER_SCHEME.to_owned(), Vec::new())]));
        }
        if self.jwt.is_some() {
            schemes.insert(
                JWT_SCHEME.to_owned(),
                SecurityScheme::HttpAuthSecurityScheme {
                    description: Some("a JWT signed by a key of the operator's key set".into()),
                    scheme: "Bearer".into(),
                    bearer_format: Some("JWT".into()),
                },
            );
            requirements.push(BTreeMap::from([(JWT_SCHEME.to_owned(), Vec::new())]));
        }
        if let Some(api) = &self.api_keys {
            schemes.insert(
                API_KEY_SCHEME.to_owned(),
                SecurityScheme::ApiKeySecurityScheme {
                    description: Some("an API key issued by the operator".into()),
                    location: "header".into(),
                    name: api.header.clone(),
                },
            );
            requirements.push(BTreeMap::from([(API_KEY_SCHEME.to_owned(), Vec::new())]));
        }
        (schemes, requirements)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> AgentAuth {
        AgentAuth {
            bearer_tokens: vec![Credential {
                principal: "alice".into(),
                secret: "tok-a".into(),
            }],
            api_keys: Some(ApiKeys {
                header: "X-API-Key".into(),
                keys: vec![Credential {
                    principal: "bob".into(),
                    secret: "key-b".into(),
                }],
            }),
            jwt: None,
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn identifies_callers() {
        let a = auth();
        assert_eq!(
            a.authenticate(&headers(&[("authorization", "Bearer tok-a")]))
                .unwrap(),
            Caller::Principal("alice".into())
        );
        assert_eq!(
            a.authenticate(&headers(&[("authorization", "bearer tok-a")]))
                .unwrap(),
            Caller::Principal("alice".into())
        );
        assert_eq!(
            a.authenticate(&headers(&[("x-api-key", "key-b")])).unwrap(),
            Caller::Principal("bob".into())
        );
        assert!(
            a.authenticate(&headers(&[("authorization", "Bearer nope")]))
                .is_err()
        );
        assert!(
            a.authenticate(&headers(&[("authorization", "Basic dG9rLWE=")]))
                .is_err()
        );
        let refused = a.authenticate(&HeaderMap::new()).unwrap_err();
        assert!(refused.challenge.contains("Bearer"));
        assert!(refused.message.contains("X-API-Key"));
        assert_eq!(
            AgentAuth::default()
                .authenticate(&HeaderMap::new())
                .unwrap(),
            Caller::Anonymous
        );
    }

    #[test]
    fn card_declares_what_is_enforced() {
        let (schemes, requirements) = auth().card_security();
        assert_eq!(schemes.len(), 2);
        assert_eq!(requirements.len(), 2, "either scheme alone suffices");
        let (none, no_reqs) = AgentAuth::default().card_security();
        assert!(none.is_empty() && no_reqs.is_empty());
    }
}
