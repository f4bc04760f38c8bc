//! What the registry stores of one agent: its definition, where it came from, and the
//! history of its card's versions. Cards are not stored: each is made again from the
//! definition, so a new release's card rules apply to every stored agent.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::definition::AgentDefinition;
use crate::upstream::UpstreamCard;

/// Versions of an agent's card kept in its history, newest last.
pub const HISTORY_LEN: usize = 50;

/// Where a registration came from; it decides which of two definitions of one agent wins.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The configuration file (registered at every start; the file wins at start).
    Config,
    /// `PUT /registry/agents/{name}`.
    Api,
    /// A remote worker's announcement when it attached; a configured definition wins.
    Worker,
    /// A bridged agent's upstream card changed (in the history only: it never
    /// registers an agent).
    Upstream,
}

impl Source {
    /// Whether a definition from `self` may replace one from `existing`: a worker's
    /// announcement never replaces what an operator configured or registered.
    pub fn may_replace(self, existing: Source) -> bool {
        !(self == Source::Worker && existing != Source::Worker)
    }
}

/// One version of an agent's card, and when it took effect.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct VersionChange {
    pub version: String,
    pub at: DateTime<Utc>,
    pub source: Source,
    /// What changed, when known (a bridged agent's drift: version, skills, interfaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One registered agent, as stored.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Registration {
    pub definition: AgentDefinition,
    pub source: Source,
    pub created_at: DateTime<Utc>,
    /// When the definition last changed.
    pub changed_at: DateTime<Utc>,
    /// The card's versions, oldest first, at most [`HISTORY_LEN`].
    pub history: Vec<VersionChange>,
    /// When it was removed: it takes no new messages, and its tasks stay readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<DateTime<Utc>>,
    /// A bridged agent's upstream card, as last fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<UpstreamCard>,
}

impl Registration {
    /// A new registration whose card has `version`.
    pub fn new(definition: AgentDefinition, source: Source, version: String) -> Registration {
        let now = Utc::now();
        Registration {
            definition,
            source,
            created_at: now,
            changed_at: now,
            history: vec![VersionChange {
                version,
                at: now,
                source,
                note: None,
            }],
            removed_at: None,
            upstream: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The upstream card that still holds for `definition`: what was fetched from one
    /// upstream says nothing of another.
    pub fn upstream_for(&self, definition: &AgentDefinition) -> Option<&UpstreamCard> {
        self.upstream
            .as_ref()
            .filter(|_| definition.url == self.definition.url)
    }

    /// The card version in effect.
    pub fn version(&self) -> &str {
        self.history.last().map_or("", |v| v.version.as_str())
    }

    /// This registration with `definition` in place of its own: `None` when nothing
    /// changed; the history grows when the card's version did.
    pub fn replaced_by(
        &self,
        definition: AgentDefinition,
        source: Source,
        version: String,
    ) -> Option<Registration> {
        if definition == self.definition
            && version == self.version()
            && source == self.source
            && self.removed_at.is_none()
        {
            return None;
        }
        let now = Utc::now();
        let upstream = self.upstream_for(&definition).cloned();
        let mut next = Registration {
            definition,
            source,
            created_at: self.created_at,
            changed_at: now,
            history: self.history.clone(),
            removed_at: None,
            upstream,
        };
        next.record(version, source, None, now);
        Some(next)
    }

    fn record(&mut self, version: String, source: Source, note: Option<String>, at: DateTime<Utc>) {
        if version != self.version() {
            self.history.push(VersionChange {
                version,
                at,
                source,
                note,
            });
            let excess = self.history.len().saturating_sub(HISTORY_LEN);
            self.history.drain(..excess);
        }
    }

    /// This registration with its upstream card as last fetched, whose card then has
    /// `version`; `note` says what drifted. `None` when nothing changed.
    pub fn with_upstream(
        &self,
        upstream: UpstreamCard,
        version: String,
        note: Option<String>,
    ) -> Option<Registration> {
        if self.upstream.as_ref() == Some(&upstream) {
            return None;
        }
        let mut next = self.clone();
        next.upstream = Some(upstream);
        // A fetch that found nothing new changes when it was checked, not the card.
        if version != self.version() {
            next.changed_at = Utc::now();
            next.record(version, Source::Upstream, note, next.changed_at);
        }
        Some(next)
    }

    /// This registration, removed now.
    pub fn removed(&self) -> Registration {
        let now = Utc::now();
        Registration {
            changed_at: now,
            removed_at: Some(now),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::AgentKind;

    #[test]
    fn history_grows_with_versions_only() {
        let definition = AgentDefinition::new("a", AgentKind::Echo);
        let first = Registration::new(definition.clone(), Source::Api, "v1".into());
        assert!(
            first
                .replaced_by(definition.clone(), Source::Api, "v1".into())
                .is_none()
        );
        let mut queued = definition.clone();
        queued.max_queued = 3;
        let second = first.replaced_by(queued, Source::Api, "v1".into()).unwrap();
        assert_eq!(second.history.len(), 1, "same card, same version");
        let third = second
            .replaced_by(definition, Source::Api, "v2".into())
            .unwrap();
        assert_eq!(third.version(), "v2");
        assert_eq!(third.history.len(), 2);
        assert_eq!(third.created_at, first.created_at);
    }

    #[test]
    fn a_worker_never_replaces_an_operator() {
        assert!(!Source::Worker.may_replace(Source::Config));
        assert!(!Source::Worker.may_replace(Source::Api));
        assert!(Source::Worker.may_replace(Source::Worker));
        assert!(Source::Api.may_replace(Source::Config));
    }
}
