//! Bridged agents (`kind = "a2a"`): how to reach the A2A server Switchboard fronts
//! ([`UpstreamDefinition`], the `upstream` table of a definition), and what the registry
//! keeps of that server's own card ([`UpstreamCard`]) — the card Switchboard's card for
//! the agent follows, refreshed on an interval, its drift kept in the history.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sb_protocol::card::AgentCard;
use serde::{Deserialize, Serialize};

use crate::card::CardDefaults;

/// Defaults of a bridged agent's settings.
pub const DEFAULT_CARD_REFRESH: Duration = Duration::from_secs(600);
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(300);
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(3600);
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How Switchboard reaches and treats an upstream A2A server. Every field is optional.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UpstreamDefinition {
    /// A bearer token sent upstream (`Authorization: Bearer …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// An API key, sent where the upstream's card says (else `X-API-Key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Headers sent with every upstream call as they are.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The key set the upstream's card must be signed with; without one, a signed card
    /// is verified against the key set its signature names on the upstream's origin,
    /// and an unsigned card is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwks_url: Option<String>,
    /// Seconds between two fetches of the upstream's card (600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card_refresh_secs: Option<u64>,
    /// Seconds an upstream task may go without news before it is canceled upstream and
    /// failed here (300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_timeout_secs: Option<u64>,
    /// Wall-clock seconds a task may take upstream, from its first message (3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_secs: Option<u64>,
    /// Seconds one upstream call may take, streams excepted (30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_timeout_secs: Option<u64>,
}

impl UpstreamDefinition {
    fn seconds(value: Option<u64>, default: Duration) -> Duration {
        value.map_or(default, Duration::from_secs)
    }

    pub fn card_refresh(&self) -> Duration {
        Self::seconds(self.card_refresh_secs, DEFAULT_CARD_REFRESH)
    }

    pub fn stall_timeout(&self) -> Duration {
        Self::seconds(self.stall_timeout_secs, DEFAULT_STALL_TIMEOUT)
    }

    pub fn budget(&self) -> Duration {
        Self::seconds(self.budget_secs, DEFAULT_BUDGET)
    }

    pub fn call_timeout(&self) -> Duration {
        Self::seconds(self.call_timeout_secs, DEFAULT_CALL_TIMEOUT)
    }

    /// The settings' problems, each naming its field under `upstream.`.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        for (field, value) in [
            ("card_refresh_secs", self.card_refresh_secs),
            ("stall_timeout_secs", self.stall_timeout_secs),
            ("budget_secs", self.budget_secs),
            ("call_timeout_secs", self.call_timeout_secs),
        ] {
            if value == Some(0) {
                problems.push((format!("upstream.{field}"), "must be positive".to_owned()));
            }
        }
        if let Some(url) = &self.jwks_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            problems.push((
                "upstream.jwks_url".to_owned(),
                format!("\"{url}\" must be an http:// or https:// URL"),
            ));
        }
        for name in self.headers.keys() {
            let valid = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b));
            if !valid {
                problems.push((
                    format!("upstream.headers.{name}"),
                    "is not a header name (letters, digits, - and _)".to_owned(),
                ));
            }
        }
        problems
    }

    pub(crate) fn redact(&mut self, redacted: &str) {
        for secret in [&mut self.token, &mut self.api_key].into_iter().flatten() {
            *secret = redacted.to_owned();
        }
        for value in self.headers.values_mut() {
            *value = redacted.to_owned();
        }
    }
}

/// What the registry keeps of a bridged agent's upstream card.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct UpstreamCard {
    /// The last card accepted; Switchboard's card for the agent shows its description,
    /// skills, modes and provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<AgentCard>,
    /// Where it was found.
    pub url: String,
    /// SHA-256 (hex) of the accepted card's JCS form: what drift is judged by.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hash: String,
    /// The key id whose signature verified, when the card was signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// When the card was last fetched (or the fetch last failed).
    pub checked_at: DateTime<Utc>,
    /// Why the last fetch was not accepted (unreachable, invalid, a signature that does
    /// not verify); the last accepted card, if any, stays in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

impl UpstreamCard {
    /// What the upstream's card brings to Switchboard's card for it.
    pub fn defaults(&self) -> Option<CardDefaults> {
        let card = self.card.as_ref()?;
        Some(CardDefaults {
            description: card.description.clone(),
            skills: card.skills.clone(),
            input_modes: card.default_input_modes.clone(),
            output_modes: card.default_output_modes.clone(),
            provider: card.provider.clone(),
        })
    }

    /// How `next` differs from this card, in words (empty when the content is the same).
    pub fn drift(&self, next: &UpstreamCard) -> Vec<String> {
        let (Some(before), Some(after)) = (&self.card, &next.card) else {
            return Vec::new();
        };
        if self.hash == next.hash {
            return Vec::new();
        }
        let mut changes = Vec::new();
        if before.version != after.version {
            changes.push(format!("version {} → {}", before.version, after.version));
        }
        let ids = |card: &AgentCard| -> Vec<String> {
            card.skills.iter().map(|s| s.id.clone()).collect()
        };
        let (old, new) = (ids(before), ids(after));
        let added: Vec<&String> = new.iter().filter(|id| !old.contains(id)).collect();
        let removed: Vec<&String> = old.iter().filter(|id| !new.contains(id)).collect();
        if !added.is_empty() {
            changes.push(format!("skills added: {added:?}"));
        }
        if !removed.is_empty() {
            changes.push(format!("skills removed: {removed:?}"));
        }
        if before.supported_interfaces != after.supported_interfaces {
            changes.push("interfaces changed".to_owned());
        }
        if changes.is_empty() {
            changes.push("content changed".to_owned());
        }
        changes
    }
}
