//! How callers authenticate to an agent, as its definition says (`auth` of an
//! `[[agents]]` entry): static bearer tokens, API keys in a header, JWTs verified against
//! a key set. The gateway turns it into its authenticator; the card declares the
//! matching security schemes ([`crate::card::card_security`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Credentials an agent accepts; any one of them identifies the caller.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Static bearer tokens (`Authorization: Bearer <token>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bearer: Vec<TokenConfig>,
    /// API keys in one header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_keys: Option<ApiKeyConfig>,
    /// JWT bearer tokens verified against a key set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt: Option<JwtConfig>,
}

/// Where a JWT's keys come from and what the token must say.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// A JWKS document on disk (read at startup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_file: Option<PathBuf>,
    /// A JWKS URL (fetched at startup and every few minutes, for key rotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// The claim naming the principal (default `sub`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal_claim: Option<String>,
    /// Where callers get these tokens: advertised on the card as OAuth 2 schemes, so a
    /// client (`switchboard auth login`) knows where to ask without being told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthConfig>,
}

/// The authorization server issuing an agent's JWTs, as its card advertises it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// The token endpoint (client credentials, device code, refresh).
    pub token_url: String,
    /// The device authorization endpoint (RFC 8628), for people at a terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_authorization_url: Option<String>,
    /// Whether machines may get tokens with their own client credentials (default yes).
    #[serde(default = "yes")]
    pub client_credentials: bool,
    /// Scopes a caller may ask for: name → description.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    pub principal: String,
    pub token: String,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    #[serde(default = "default_api_key_header")]
    pub header: String,
    pub keys: Vec<ApiKeyEntry>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyEntry {
    pub principal: String,
    pub key: String,
}

fn default_api_key_header() -> String {
    "X-API-Key".into()
}

impl AuthConfig {
    /// Every principal and secret of the static credentials.
    pub fn credentials(&self) -> impl Iterator<Item = (&str, &str)> {
        let tokens = self
            .bearer
            .iter()
            .map(|t| (t.principal.as_str(), t.token.as_str()));
        let keys = self.api_keys.iter().flat_map(|a| {
            a.keys
                .iter()
                .map(|k| (k.principal.as_str(), k.key.as_str()))
        });
        tokens.chain(keys)
    }

    pub(crate) fn redact(&mut self, shown: &str) {
        for token in &mut self.bearer {
            token.token = shown.into();
        }
        for key in self.api_keys.iter_mut().flat_map(|a| a.keys.iter_mut()) {
            key.key = shown.into();
        }
    }
}
