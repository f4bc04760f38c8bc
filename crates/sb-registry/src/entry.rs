//! A card as it is served: rendered once in each form, with its strong validator.

use chrono::{DateTime, Utc};
use sb_protocol::card::AgentCard;

/// One rendering of a card with its strong ETag (quoted).
#[derive(Clone, Debug)]
pub struct RenderedCard {
    pub json: String,
    pub etag: String,
}

/// A card, rendered once in both forms, with its cache validators.
#[derive(Clone, Debug)]
pub struct CardEntry {
    pub card: AgentCard,
    /// Strict 1.0 JSON: what 1.0 clients (and the 1.0 TCK's schema) expect.
    pub v1: RenderedCard,
    /// 1.0 plus the 0.3 fields, readable by both generations.
    pub merged: RenderedCard,
    /// Which form a request without `A2A-Version` gets.
    pub merged_by_default: bool,
    pub last_modified: DateTime<Utc>,
}

impl CardEntry {
    /// Renders `card` in both forms. Replicas rendering the same card agree on the
    /// validators.
    pub fn new(
        card: AgentCard,
        merged_by_default: bool,
        last_modified: DateTime<Utc>,
    ) -> CardEntry {
        let v1 = render(serde_json::to_string(&card).unwrap_or_default());
        let merged = render(card.to_merged_json().to_string());
        CardEntry {
            card,
            v1,
            merged,
            merged_by_default,
            last_modified,
        }
    }

    /// The form for a request's `A2A-Version` header: 1.0 gets strict 1.0, 0.3 the
    /// merged card, no header the agent's configured default.
    pub fn for_version(&self, a2a_version: Option<&str>) -> &RenderedCard {
        match a2a_version.map(str::trim).filter(|v| !v.is_empty()) {
            Some(v) if v.starts_with("1.") => &self.v1,
            Some(_) => &self.merged,
            None if self.merged_by_default => &self.merged,
            None => &self.v1,
        }
    }
}

fn render(json: String) -> RenderedCard {
    // DefaultHasher::new() has fixed keys, so replicas running the same binary agree on
    // the validator.
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hasher::write(&mut hasher, json.as_bytes());
    let etag = format!("\"{:016x}\"", std::hash::Hasher::finish(&hasher));
    RenderedCard { json, etag }
}
