//! Finding an agent's card: from a card URL, or from a base URL at
//! `/.well-known/agent-card.json` and then the legacy `/.well-known/agent.json`; read in
//! either generation, checked, its signature verified when a verifier is given. A
//! [`CardCache`] keeps each card for a TTL of minutes (seed "I6") and forgets it after a
//! failed submission, so the next call fetches it again (seed "When Agents Need to Talk").

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use sb_protocol::card::AgentCard;
use sb_registry::signing::CardVerifier;
use serde_json::Value;

use crate::wire::Tap;
use crate::{legacy, validate};

/// What the wire log calls a card's fetch.
const GET_CARD: &str = "GetAgentCard";

/// Paths a card is looked for under a base URL, in order.
pub const CARD_PATHS: [&str; 2] = ["/.well-known/agent-card.json", "/.well-known/agent.json"];

/// A card found and checked.
#[derive(Clone, Debug)]
pub struct Discovered {
    pub card: AgentCard,
    /// Where it was found.
    pub url: String,
    pub etag: Option<String>,
    /// The key id of the signature that verified, when a verifier was given.
    pub signed_by: Option<String>,
    /// The card as served (what a signature covers).
    pub json: Value,
}

#[derive(Clone, Debug, thiserror::Error)]
pub enum CardError {
    #[error("cannot reach {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("no agent card at {}", tried.join(" or "))]
    NotFound { tried: Vec<String> },
    #[error("the card at {url} cannot be used: {reason}")]
    Invalid { url: String, reason: String },
    #[error("the card at {url} does not verify: {reason}")]
    Signature { url: String, reason: String },
}

/// The URLs a card is looked for at, for a base or card URL.
pub fn card_urls(url: &str) -> Vec<String> {
    let url = url.trim_end_matches('/');
    match url.ends_with(".json") {
        true => vec![url.to_owned()],
        false => CARD_PATHS.iter().map(|p| format!("{url}{p}")).collect(),
    }
}

/// Fetches, reads and checks the card of the agent at `url` (a base or card URL).
pub async fn discover(
    http: &reqwest::Client,
    url: &str,
    verifier: Option<&CardVerifier>,
) -> Result<Discovered, CardError> {
    let tried = card_urls(url);
    // Cards are public: fetched with no credentials, so there is nothing to redact.
    let tap = Tap::default();
    for candidate in &tried {
        let unreachable = |reason: String| CardError::Unreachable {
            url: candidate.clone(),
            reason,
        };
        tap.request(GET_CARD, "GET", candidate, None);
        let response = http
            .get(candidate)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        let status = response.status();
        let etag = response
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response
            .bytes()
            .await
            .map_err(|e| unreachable(e.to_string()))?;
        tap.response(GET_CARD, status, &body);
        if status == StatusCode::NOT_FOUND {
            continue;
        }
        if !status.is_success() {
            return Err(unreachable(format!("HTTP {status}")));
        }
        let json: Value = serde_json::from_slice(&body)
            .map_err(|e| invalid(candidate, format!("not JSON: {e}")))?;
        return read(candidate, json, etag, verifier);
    }
    Err(CardError::NotFound { tried })
}

fn invalid(url: &str, reason: String) -> CardError {
    CardError::Invalid {
        url: url.to_owned(),
        reason,
    }
}

fn read(
    url: &str,
    json: Value,
    etag: Option<String>,
    verifier: Option<&CardVerifier>,
) -> Result<Discovered, CardError> {
    let card = match legacy::is_v03_only(&json) {
        true => legacy::from_v03(&json).map_err(|e| invalid(url, e))?,
        false => AgentCard::from_served_json(&json)
            .map_err(|e| invalid(url, format!("not an agent card: {e}")))?,
    };
    validate::check(&card).map_err(|e| invalid(url, e))?;
    let signed_by = match verifier {
        Some(verifier) => Some(verifier.verify(&json).map_err(|e| CardError::Signature {
            url: url.to_owned(),
            reason: e.to_string(),
        })?),
        None => None,
    };
    Ok(Discovered {
        card,
        url: url.to_owned(),
        etag,
        signed_by,
        json,
    })
}

/// Cards by the URL they were asked for, each kept for `ttl`.
#[derive(Debug)]
pub struct CardCache {
    http: reqwest::Client,
    ttl: Duration,
    verifier: Option<CardVerifier>,
    cards: Mutex<HashMap<String, (Instant, Arc<Discovered>)>>,
}

impl CardCache {
    pub fn new(http: reqwest::Client, ttl: Duration, verifier: Option<CardVerifier>) -> CardCache {
        CardCache {
            http,
            ttl,
            verifier,
            cards: Mutex::new(HashMap::new()),
        }
    }

    /// The card of the agent at `url`: the cached one while it is fresh, else fetched.
    pub async fn get(&self, url: &str) -> Result<Arc<Discovered>, CardError> {
        if let Some(card) = self.fresh(url) {
            return Ok(card);
        }
        let card = Arc::new(discover(&self.http, url, self.verifier.as_ref()).await?);
        if let Ok(mut cards) = self.cards.lock() {
            cards.insert(url.to_owned(), (Instant::now(), card.clone()));
        }
        Ok(card)
    }

    fn fresh(&self, url: &str) -> Option<Arc<Discovered>> {
        let cards = self.cards.lock().ok()?;
        let (fetched, card) = cards.get(url)?;
        (fetched.elapsed() < self.ttl).then(|| card.clone())
    }

    /// Forgets the card of `url` (a submission to the agent failed: it may have changed).
    pub fn forget(&self, url: &str) {
        if let Ok(mut cards) = self.cards.lock() {
            cards.remove(url);
        }
    }
}
