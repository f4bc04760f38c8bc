//! The `[[agents]]` entries: which agent runs under which name, what its card says, how
//! callers authenticate to it, and how the split deployment queues its turns.

use std::path::PathBuf;

use sb_rpc::workers::{OnWorkerLost, QueuePolicy};
use serde::Deserialize;

/// One hosted agent.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub name: String,
    pub kind: AgentKind,
    #[serde(default)]
    pub description: Option<String>,
    /// `consolidate`: milliseconds spent per transcript.
    #[serde(default)]
    pub pause_ms: Option<u64>,
    /// The card served to a request without an `A2A-Version` header.
    #[serde(default)]
    pub card: CardForm,
    /// How callers authenticate; absent means no authentication.
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// Signs this agent's webhooks (Standard Webhooks): `whsec_<base64>` or 16+ characters.
    #[serde(default)]
    pub webhook_secret: Option<String>,
    /// Split deployment: turns queued or running at most before new tasks are rejected.
    #[serde(default = "default_max_queued")]
    pub max_queued: usize,
    /// Split deployment: what happens to a turn whose worker is lost.
    #[serde(default)]
    pub on_worker_lost: OnWorkerLost,
}

/// Which code runs an agent: a built-in, or an agent of the program that embeds
/// Switchboard ([`crate::Switchboard::agent`]), which the entry then configures.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    /// Sends back the text it was sent.
    Echo,
    /// Consolidates transcripts, asking when facts contradict (`pause_ms` per transcript).
    Consolidate,
    /// The behaviours the A2A conformance suites expect of a system under test.
    Conformance,
    /// The benchmark agent (`bench/switchboard.toml`): echoes, holds or ticks.
    Bench,
    /// The embedding program's agent of the entry's name.
    Embedded,
}

/// The card served without an `A2A-Version` header.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
pub enum CardForm {
    /// 1.0 and 0.3 fields side by side, readable by clients of either version.
    #[default]
    #[serde(rename = "merged")]
    Merged,
    /// The 1.0 card alone.
    #[serde(rename = "1.0")]
    V1,
}

/// Credentials an agent accepts; any one of them identifies the caller.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// Static bearer tokens (`Authorization: Bearer <token>`).
    #[serde(default)]
    pub bearer: Vec<TokenConfig>,
    /// API keys in one header.
    #[serde(default)]
    pub api_keys: Option<ApiKeyConfig>,
    /// JWT bearer tokens verified against a key set.
    #[serde(default)]
    pub jwt: Option<JwtConfig>,
}

/// Where a JWT's keys come from and what the token must say.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JwtConfig {
    /// A JWKS document on disk (read at startup).
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// A JWKS URL (fetched at startup and every few minutes, for key rotation).
    #[serde(default)]
    pub jwks_url: Option<String>,
    #[serde(default)]
    pub issuer: Option<String>,
    #[serde(default)]
    pub audience: Option<String>,
    /// The claim naming the principal (default `sub`).
    #[serde(default)]
    pub principal_claim: Option<String>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    pub principal: String,
    pub token: String,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    #[serde(default = "default_api_key_header")]
    pub header: String,
    pub keys: Vec<ApiKeyEntry>,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyEntry {
    pub principal: String,
    pub key: String,
}

fn default_api_key_header() -> String {
    "X-API-Key".into()
}

fn default_max_queued() -> usize {
    QueuePolicy::default().max_queued
}

impl AgentConfig {
    /// An agent of `kind` under `name`, with every setting at its default.
    pub fn new(name: &str, kind: AgentKind) -> AgentConfig {
        AgentConfig {
            name: name.into(),
            kind,
            description: None,
            pause_ms: None,
            card: CardForm::default(),
            auth: None,
            webhook_secret: None,
            max_queued: default_max_queued(),
            on_worker_lost: OnWorkerLost::default(),
        }
    }

    /// How the split deployment queues this agent's turns.
    pub fn queue_policy(&self) -> QueuePolicy {
        QueuePolicy {
            max_queued: self.max_queued,
            on_worker_lost: self.on_worker_lost,
        }
    }
}

/// The agents served without a configuration file.
pub(super) fn default_agents() -> Vec<AgentConfig> {
    let conformance = AgentConfig {
        card: CardForm::V1,
        ..AgentConfig::new("conformance", AgentKind::Conformance)
    };
    vec![
        AgentConfig::new("echo", AgentKind::Echo),
        conformance,
        AgentConfig::new("consolidate", AgentKind::Consolidate),
    ]
}
