//! An agent's definition: everything Switchboard knows of one agent, in the shape of a
//! TOML `[[agents]]` entry (and of the JSON body of `PUT /registry/agents/{name}`, and of
//! a worker's announcement). Its card is made from it ([`crate::card`]); which code runs
//! it is its [`AgentKind`]; how callers authenticate is its [`AuthConfig`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::auth_config::AuthConfig;
use crate::upstream::UpstreamDefinition;

/// Turns queued or running at most for one agent in the split deployment, unless its
/// definition says otherwise.
pub const DEFAULT_MAX_QUEUED: usize = 1000;

/// One agent.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AgentDefinition {
    pub name: String,
    pub kind: AgentKind,
    /// What the agent does; a built-in kind has its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The card's version; without one, a digest of the definition's card content, so
    /// any change is a new version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ProviderDefinition>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "documentationUrl"
    )]
    pub documentation_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "iconUrl")]
    pub icon_url: Option<String>,
    /// The skills on the card; absent means the kind's own (none for a worker's agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<SkillDefinition>>,
    /// Media types the agent accepts; absent means the kind's (`text/plain` otherwise).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "defaultInputModes"
    )]
    pub default_input_modes: Option<Vec<String>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "defaultOutputModes"
    )]
    pub default_output_modes: Option<Vec<String>>,
    /// Card extensions the agent declares (beside Switchboard's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<ExtensionDefinition>,
    /// `consolidate`: milliseconds spent per transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_ms: Option<u64>,
    /// The card served to a request without an `A2A-Version` header.
    #[serde(default, skip_serializing_if = "is_default")]
    pub card: CardForm,
    /// How callers authenticate; absent means no authentication.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthConfig>,
    /// Signs this agent's webhooks (Standard Webhooks): `whsec_<base64>` or 16+ characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<String>,
    /// The agent's own keys to Switchboard's API (`X-API-Key` on `/api/ceremonies`): a
    /// request with one of them is this agent's (the fleet guide's per-agent
    /// `WORKSTACEAN_API_KEY_<AGENT>`). Secrets, redacted like the webhook secret.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_keys: Vec<String>,
    /// Split deployment: turns queued or running at most before new tasks are rejected.
    #[serde(default = "default_max_queued")]
    pub max_queued: usize,
    /// Split deployment: what happens to a turn whose worker is lost.
    #[serde(default, skip_serializing_if = "is_default")]
    pub on_worker_lost: OnWorkerLost,
    /// `a2a`: the upstream A2A server's base URL or card URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `a2a`: credentials for the upstream, the card refresh interval, timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<UpstreamDefinition>,
}

/// Which code runs an agent.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
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
    /// Code of its own on remote workers (split deployment), in any language: the
    /// definition alone makes its card.
    Worker,
    /// An existing A2A server, bridged by its URL: its card follows the upstream's.
    A2a,
    /// The fleet's routing agent: its card lists every skill of the fleet, and each
    /// message goes on to an agent that serves the skill it asks for.
    Router,
}

/// The card served without an `A2A-Version` header.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub enum CardForm {
    /// 1.0 and 0.3 fields side by side, readable by clients of either version.
    #[default]
    #[serde(rename = "merged")]
    Merged,
    /// The 1.0 card alone.
    #[serde(rename = "1.0")]
    V1,
}

/// What happens to a turn whose worker is lost (`on_worker_lost`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnWorkerLost {
    /// Fail the task with the reason.
    #[default]
    Fail,
    /// Queue the turn again for another worker (a bounded number of times).
    Reassign,
}

/// Who provides the agent.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProviderDefinition {
    pub organization: String,
    pub url: String,
}

/// One skill on the card. Field names take the TOML (snake_case) or the card's
/// (camelCase) spelling.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SkillDefinition {
    pub id: String,
    /// Defaults to the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", alias = "inputModes")]
    pub input_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty", alias = "outputModes")]
    pub output_modes: Vec<String>,
}

/// A card extension the agent declares: its URI and, when it takes any, its parameters
/// (e.g. the fleet guide's `cost-v1` with its price).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExtensionDefinition {
    pub uri: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

fn default_max_queued() -> usize {
    DEFAULT_MAX_QUEUED
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

impl AgentDefinition {
    /// An agent of `kind` under `name`, with every setting at its default.
    pub fn new(name: &str, kind: AgentKind) -> AgentDefinition {
        AgentDefinition {
            name: name.into(),
            kind,
            description: None,
            version: None,
            provider: None,
            documentation_url: None,
            icon_url: None,
            skills: None,
            default_input_modes: None,
            default_output_modes: None,
            extensions: Vec::new(),
            pause_ms: None,
            card: CardForm::default(),
            auth: None,
            webhook_secret: None,
            api_keys: Vec::new(),
            max_queued: DEFAULT_MAX_QUEUED,
            on_worker_lost: OnWorkerLost::default(),
            url: None,
            upstream: None,
        }
    }

    /// The definition with its secrets (tokens, API keys, the webhook secret) replaced,
    /// for answers to readers: credentials are written, never read back.
    pub fn redacted(&self) -> AgentDefinition {
        let mut shown = self.clone();
        if let Some(secret) = &mut shown.webhook_secret {
            *secret = REDACTED.into();
        }
        for key in &mut shown.api_keys {
            *key = REDACTED.into();
        }
        if let Some(auth) = &mut shown.auth {
            auth.redact(REDACTED);
        }
        if let Some(upstream) = &mut shown.upstream {
            upstream.redact(REDACTED);
        }
        shown
    }
}

/// What a redacted secret reads as.
pub const REDACTED: &str = "<redacted>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_reads_from_toml_and_json_alike() {
        let toml_text = r#"
            name = "notes"
            kind = "worker"
            description = "Keeps notes"
            skills = [{ id = "note.add", name = "Add a note", tags = ["notes"], examples = ["remember milk"] }]
            [[extensions]]
            uri = "https://example.com/ext/cost-v1"
            params = { usd_per_call = 0.01 }
        "#;
        let from_toml: AgentDefinition = toml::from_str(toml_text).unwrap();
        let json = serde_json::json!({
            "name": "notes", "kind": "worker", "description": "Keeps notes",
            "skills": [{"id": "note.add", "name": "Add a note", "tags": ["notes"], "examples": ["remember milk"]}],
            "extensions": [{"uri": "https://example.com/ext/cost-v1", "params": {"usd_per_call": 0.01}}]
        });
        let from_json: AgentDefinition = serde_json::from_value(json).unwrap();
        assert_eq!(from_toml, from_json);
        let round: AgentDefinition =
            serde_json::from_value(serde_json::to_value(&from_json).unwrap()).unwrap();
        assert_eq!(round, from_json);
    }

    #[test]
    fn unknown_fields_and_kinds_are_refused_by_name() {
        let error = serde_json::from_value::<AgentDefinition>(
            serde_json::json!({"name": "a", "kind": "robot"}),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("unknown variant `robot`"), "{error}");
        let error = serde_json::from_value::<AgentDefinition>(
            serde_json::json!({"name": "a", "kind": "echo", "colour": "red"}),
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("unknown field `colour`"), "{error}");
    }

    #[test]
    fn secrets_are_redacted() {
        let mut definition = AgentDefinition::new("a", AgentKind::Echo);
        definition.webhook_secret = Some("whsec_secretsecretsecret".into());
        definition.api_keys = vec!["agent-key-0123456789abcdef".into()];
        definition.auth = Some(AuthConfig {
            bearer: vec![crate::auth_config::TokenConfig {
                principal: "p".into(),
                token: "tok".into(),
            }],
            ..Default::default()
        });
        let shown = serde_json::to_string(&definition.redacted()).unwrap();
        assert!(
            !shown.contains("secretsecret")
                && !shown.contains("\"tok\"")
                && !shown.contains("0123456789abcdef"),
            "{shown}"
        );
        assert!(shown.contains("\"p\""), "principals stay visible: {shown}");
    }
}
