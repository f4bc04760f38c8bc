//! One upstream A2A server as a bridged agent sees it: its card, fetched and checked
//! ([`fetch_card`]: read, validated, its signature verified when it has one) and kept
//! for the refresh interval; the interface to call, with the configured credentials
//! placed as its card says.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sb_client::discovery::{Discovered, discover};
use sb_client::interface::{Preferences, choose};
use sb_client::{Credentials, Transport, connect};
use sb_registry::card::content_hash;
use sb_registry::signing::CardVerifier;
use sb_registry::{AgentDefinition, UpstreamDefinition};
use serde_json::Value;
use tokio::sync::Mutex;

/// A card the bridge accepted.
#[derive(Clone, Debug)]
pub struct AcceptedCard {
    pub found: Discovered,
    /// SHA-256 of the card's canonical content.
    pub hash: String,
}

/// Fetches and checks the upstream's card, within the call timeout: one that is signed
/// must verify, against the configured `upstream.jwks_url` or else the key set its
/// signature names (`jku`) on the upstream's own origin; with a `jwks_url` configured,
/// an unsigned card is refused.
pub async fn fetch_card(
    http: &reqwest::Client,
    url: &str,
    settings: &UpstreamDefinition,
) -> Result<AcceptedCard, String> {
    let timeout = settings.call_timeout();
    tokio::time::timeout(timeout, fetch_and_verify(http, url, settings))
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "the card at {url} did not come within {}s",
                timeout.as_secs()
            ))
        })
}

async fn fetch_and_verify(
    http: &reqwest::Client,
    url: &str,
    settings: &UpstreamDefinition,
) -> Result<AcceptedCard, String> {
    let mut found = discover(http, url, None).await.map_err(|e| e.to_string())?;
    let signed = !found.card.signatures.is_empty();
    let keys = match (&settings.jwks_url, signed) {
        (Some(jwks), _) => Some(jwks.clone()),
        (None, true) => Some(signed_key_set(&found)?),
        (None, false) => None,
    };
    if let Some(jwks_url) = keys {
        let verifier = key_set(http, &jwks_url).await?;
        let kid = verifier
            .verify(&found.json)
            .map_err(|e| format!("the card at {} does not verify: {e}", found.url))?;
        found.signed_by = Some(kid);
    }
    let hash = content_hash(&found.card);
    Ok(AcceptedCard { found, hash })
}

/// The key set the card's first signature names, when it is on the card's own origin
/// (a key set elsewhere would let whoever serves the card vouch for it).
fn signed_key_set(found: &Discovered) -> Result<String, String> {
    let jku = found
        .card
        .signatures
        .iter()
        .find_map(|s| {
            protected_header(&s.protected)?
                .get("jku")?
                .as_str()
                .map(str::to_owned)
        })
        .ok_or_else(|| {
            format!(
                "the card at {} is signed but names no key set (jku); configure upstream.jwks_url",
                found.url
            )
        })?;
    match origin(&jku) == origin(&found.url) {
        true => Ok(jku),
        false => Err(format!(
            "the card at {} is signed with keys from another origin ({jku}); configure upstream.jwks_url to trust them",
            found.url
        )),
    }
}

fn protected_header(protected: &str) -> Option<Value> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(protected)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> Option<&str> {
    let rest_at = url.find("://")? + 3;
    let end = url[rest_at..].find('/').map_or(url.len(), |i| rest_at + i);
    Some(&url[..end])
}

async fn key_set(http: &reqwest::Client, url: &str) -> Result<CardVerifier, String> {
    let failed = |e: String| format!("cannot read the key set at {url}: {e}");
    let response = http
        .get(url)
        .send()
        .await
        .map_err(|e| failed(e.to_string()))?;
    if !response.status().is_success() {
        return Err(failed(format!("HTTP {}", response.status())));
    }
    let jwks: Value = response.json().await.map_err(|e| failed(e.to_string()))?;
    CardVerifier::from_jwks(&jwks).map_err(|e| failed(e.to_string()))
}

/// A bridged agent's upstream.
#[derive(Debug)]
pub struct Upstream {
    pub name: String,
    pub url: String,
    pub settings: UpstreamDefinition,
    http: reqwest::Client,
    card: Mutex<Option<(Instant, Arc<AcceptedCard>)>>,
}

/// The card in use and a transport on its best interface.
#[derive(Clone, Debug)]
pub struct Connection {
    pub card: Arc<AcceptedCard>,
    pub transport: Arc<dyn Transport>,
}

impl Upstream {
    /// The upstream of a bridged agent's definition (`None` for another kind).
    pub fn of(definition: &AgentDefinition, http: reqwest::Client) -> Option<Upstream> {
        Some(Upstream {
            name: definition.name.clone(),
            url: definition.url.clone()?,
            settings: definition.upstream.clone().unwrap_or_default(),
            http,
            card: Mutex::new(None),
        })
    }

    pub fn credentials(&self) -> Credentials {
        Credentials {
            bearer: self.settings.token.clone(),
            api_key: self.settings.api_key.clone(),
            headers: self
                .settings
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// The card (fetched again once older than the refresh interval) and a transport
    /// on the interface it offers that suits best.
    pub async fn connect(&self) -> Result<Connection, String> {
        let card = self.card().await?;
        let chosen = choose(&card.found.card, &Preferences::default()).ok_or_else(|| {
            format!(
                "the card at {} offers no interface Switchboard speaks (JSON-RPC or HTTP+JSON 1.0/0.3, gRPC 1.0)",
                card.found.url
            )
        })?;
        let placement = self.credentials().placed_for(Some(&card.found.card));
        let transport =
            connect(self.http.clone(), &chosen, placement).map_err(|e| e.to_string())?;
        Ok(Connection { card, transport })
    }

    async fn card(&self) -> Result<Arc<AcceptedCard>, String> {
        let mut cached = self.card.lock().await;
        if let Some((at, card)) = &*cached
            && at.elapsed() < self.settings.card_refresh()
        {
            return Ok(card.clone());
        }
        let card = Arc::new(fetch_card(&self.http, &self.url, &self.settings).await?);
        *cached = Some((Instant::now(), card.clone()));
        Ok(card)
    }

    /// Forgets the card: a submission failed, and the upstream may have changed.
    pub async fn forget_card(&self) {
        *self.card.lock().await = None;
    }

    pub fn call_timeout(&self) -> Duration {
        self.settings.call_timeout()
    }
}
