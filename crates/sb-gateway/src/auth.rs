//! Authentication per hosted agent: who is calling, from the request's credentials.
//!
//! [`AgentAuth`] is made from the agent's definition ([`AgentAuth::from_config`]), the
//! same `auth` the registry declares on the card (`sb_registry::card::card_security`),
//! so what a card declares is what is enforced. Secrets are compared in constant time.
//! [`Authenticators`] holds every agent's, replaced whole when the registry changes.

use std::collections::BTreeMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use axum::http::HeaderMap;
use sb_registry::auth_config::AuthConfig;
use subtle::ConstantTimeEq;

use crate::jwt::JwtVerifier;

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

/// Every agent's authentication, by agent name; agents missing here need none.
#[derive(Debug, Default)]
pub struct Authenticators(ArcSwap<BTreeMap<String, Arc<AgentAuth>>>);

impl Authenticators {
    pub fn new(by_agent: BTreeMap<String, AgentAuth>) -> Authenticators {
        let by_agent = by_agent
            .into_iter()
            .map(|(k, v)| (k, Arc::new(v)))
            .collect();
        Authenticators(ArcSwap::from_pointee(by_agent))
    }

    pub fn get(&self, agent: &str) -> Option<Arc<AgentAuth>> {
        self.0.load().get(agent).cloned()
    }

    /// Every agent's authentication now (the registry changed).
    pub fn replace(&self, by_agent: BTreeMap<String, Arc<AgentAuth>>) {
        self.0.store(Arc::new(by_agent));
    }
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
    /// The authentication an agent's `auth` describes, plus the `shared` bearer tokens
    /// every agent accepts; `jwt` is the verifier of its `auth.jwt` (loaded by the caller:
    /// a key set may have to be fetched).
    pub fn from_config(
        own: Option<&AuthConfig>,
        shared: &[Credential],
        jwt: Option<JwtVerifier>,
    ) -> AgentAuth {
        let mut bearer_tokens = shared.to_vec();
        let mut api_keys = None;
        if let Some(own) = own {
            bearer_tokens.extend(own.bearer.iter().map(|t| Credential {
                principal: t.principal.clone(),
                secret: t.token.clone(),
            }));
            api_keys = own.api_keys.as_ref().map(|a| ApiKeys {
                header: a.header.clone(),
                keys: a
                    .keys
                    .iter()
                    .map(|k| Credential {
                        principal: k.principal.clone(),
                        secret: k.key.clone(),
                    })
                    .collect(),
            });
        }
        AgentAuth {
            bearer_tokens,
            api_keys,
            jwt,
        }
    }

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
        let config: AuthConfig = serde_json::from_value(serde_json::json!({
            "bearer": [{"principal": "alice", "token": "tok-a"}],
            "api_keys": {"header": "X-Key", "keys": [{"principal": "bob", "key": "key-b"}]}
        }))
        .unwrap();
        let (schemes, requirements) = sb_registry::card::card_security(Some(&config), false);
        assert_eq!(schemes.len(), 2);
        assert_eq!(requirements.len(), 2, "either scheme alone suffices");
        let enforced = AgentAuth::from_config(Some(&config), &[], None);
        assert_eq!(
            enforced
                .authenticate(&headers(&[("authorization", "Bearer tok-a")]))
                .unwrap(),
            Caller::Principal("alice".into())
        );
        assert_eq!(
            enforced
                .authenticate(&headers(&[("x-key", "key-b")]))
                .unwrap(),
            Caller::Principal("bob".into())
        );
        let (none, no_reqs) = sb_registry::card::card_security(None, false);
        assert!(none.is_empty() && no_reqs.is_empty());
        assert!(!AgentAuth::from_config(None, &[], None).is_enabled());
        let (shared, _) = sb_registry::card::card_security(None, true);
        let shared_auth = AgentAuth::from_config(
            None,
            &[Credential {
                principal: "ops".into(),
                secret: "s".into(),
            }],
            None,
        );
        assert_eq!(shared.len(), 1);
        assert!(shared_auth.is_enabled());
    }
}
