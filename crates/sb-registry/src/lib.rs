//! The card registry: builds each hosted agent's Agent Card from what is really served
//! (never a hand-written card), renders it once as the merged 1.0 + 0.3 document, and
//! serves it with a strong validator for conditional requests.
//!
//! # Layout
//! - [`CardRegistry`]: the lookup the gateway uses (in process now, over gRPC later).
//! - [`StaticRegistry`]: cards computed at startup from the configuration.
//! - [`HostedAgent`]: what the registry needs to know of one agent.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sb_protocol::card::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    SecurityScheme,
};

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

pub trait CardRegistry: Send + Sync + std::fmt::Debug + 'static {
    /// The card of a hosted agent, with its URLs under `/agents/{name}`.
    fn card(&self, agent: &str) -> Option<&CardEntry>;
    /// The default agent's card, with its URLs at the root.
    fn root_card(&self) -> Option<&CardEntry>;
    /// Which agent the root serves.
    fn default_agent(&self) -> Option<&str>;
}

/// One hosted agent as the card describes it.
#[derive(Clone, Debug)]
pub struct HostedAgent {
    pub name: String,
    pub description: String,
    pub version: String,
    pub skills: Vec<AgentSkill>,
    pub input_modes: Vec<String>,
    pub output_modes: Vec<String>,
    pub extensions: Vec<AgentExtension>,
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    pub security_requirements: Vec<BTreeMap<String, Vec<String>>>,
    /// Serve the merged 1.0 + 0.3 card to requests without `A2A-Version`.
    pub merged_card_by_default: bool,
    /// Whether authenticated callers can fetch an extended card.
    pub extended_card: bool,
}

#[derive(Debug)]
pub struct StaticRegistry {
    cards: BTreeMap<String, CardEntry>,
    root: Option<CardEntry>,
    default_agent: Option<String>,
}

impl StaticRegistry {
    /// Builds every card. `public_url` is the externally visible base (no trailing slash).
    pub fn new(
        public_url: &str,
        agents: &[HostedAgent],
        default_agent: Option<&str>,
    ) -> StaticRegistry {
        let now = Utc::now();
        let base = public_url.trim_end_matches('/');
        let grpc = grpc_address(base);
        let cards = agents
            .iter()
            .map(|a| {
                let grpc = AgentInterface {
                    tenant: Some(a.name.clone()),
                    ..interface(grpc.clone(), "GRPC", "1.0")
                };
                let card = build_card(a, &format!("{base}/agents/{}", a.name), grpc);
                (a.name.clone(), entry(card, a.merged_card_by_default, now))
            })
            .collect();
        let default = default_agent.and_then(|name| agents.iter().find(|a| a.name == name));
        let root_grpc = interface(grpc, "GRPC", "1.0");
        StaticRegistry {
            cards,
            // The root is what generic clients of either generation discover first.
            root: default.map(|a| entry(build_card(a, base, root_grpc), true, now)),
            default_agent: default.map(|a| a.name.clone()),
        }
    }
}

/// One card as another process sends it (the registry service to the gateway).
#[derive(Clone, Debug)]
pub struct CardSnapshot {
    pub agent: String,
    pub card: AgentCard,
    pub merged_by_default: bool,
    pub last_modified: DateTime<Utc>,
}

impl StaticRegistry {
    /// Every card, and the root card, as snapshots (what the registry service serves).
    pub fn snapshots(&self) -> (Vec<CardSnapshot>, Option<CardSnapshot>) {
        let snapshot = |agent: &str, e: &CardEntry| CardSnapshot {
            agent: agent.to_owned(),
            card: e.card.clone(),
            merged_by_default: e.merged_by_default,
            last_modified: e.last_modified,
        };
        let cards = self.cards.iter().map(|(a, e)| snapshot(a, e)).collect();
        let root = self
            .root
            .as_ref()
            .map(|e| snapshot(self.default_agent.as_deref().unwrap_or_default(), e));
        (cards, root)
    }

    /// Rebuilds a registry from snapshots, rendering each card the same way (so the
    /// ETags agree with the registry service's).
    pub fn from_snapshots(
        cards: Vec<CardSnapshot>,
        root: Option<CardSnapshot>,
        default_agent: Option<String>,
    ) -> StaticRegistry {
        StaticRegistry {
            cards: cards
                .into_iter()
                .map(|s| (s.agent, entry(s.card, s.merged_by_default, s.last_modified)))
                .collect(),
            root: root.map(|s| entry(s.card, s.merged_by_default, s.last_modified)),
            default_agent,
        }
    }

    /// The names of the agents with cards.
    pub fn agents(&self) -> impl Iterator<Item = &str> {
        self.cards.keys().map(String::as_str)
    }
}

impl CardRegistry for StaticRegistry {
    fn card(&self, agent: &str) -> Option<&CardEntry> {
        self.cards.get(agent)
    }

    fn root_card(&self) -> Option<&CardEntry> {
        self.root.as_ref()
    }

    fn default_agent(&self) -> Option<&str> {
        self.default_agent.as_deref()
    }
}

fn interface(url: String, binding: &str, version: &str) -> AgentInterface {
    AgentInterface {
        url,
        protocol_binding: binding.into(),
        protocol_version: version.into(),
        tenant: None,
    }
}

/// The gRPC target (`host:port`, spec §5.3) of the public URL: gRPC paths are fixed
/// (`/lf.a2a.v1.A2AService/…`), so every agent shares the origin's address and the
/// interface's `tenant` names the agent (the default agent needs none).
pub fn grpc_address(public_url: &str) -> String {
    let (default_port, rest) = match public_url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (443, rest),
        Some((_, rest)) => (80, rest),
        None => (80, public_url),
    };
    let authority = rest.split('/').next().unwrap_or_default();
    // An IPv6 literal has colons of its own: only one after `]` is a port.
    let has_port = match authority.rsplit_once(']') {
        Some((_, after)) => after.starts_with(':'),
        None => authority.contains(':'),
    };
    match has_port {
        true => authority.to_owned(),
        false => format!("{authority}:{default_port}"),
    }
}

/// The card of an agent served at `base`: JSON-RPC at `{base}/a2a`, HTTP+JSON at `{base}`
/// (1.0 paths) and `{base}/v1/…` (0.3 paths), both versions, and `grpc` (1.0 only);
/// 1.0 preferred.
pub fn build_card(agent: &HostedAgent, base: &str, grpc: AgentInterface) -> AgentCard {
    AgentCard {
        name: agent.name.clone(),
        description: agent.description.clone(),
        supported_interfaces: vec![
            interface(format!("{base}/a2a"), "JSONRPC", "1.0"),
            interface(base.to_owned(), "HTTP+JSON", "1.0"),
            grpc,
            interface(format!("{base}/a2a"), "JSONRPC", "0.3"),
            interface(base.to_owned(), "HTTP+JSON", "0.3"),
        ],
        provider: Some(AgentProvider {
            url: "https://github.com/switchboard-a2a".into(),
            organization: "Switchboard".into(),
        }),
        version: agent.version.clone(),
        documentation_url: None,
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            extended_agent_card: Some(agent.extended_card),
            extensions: agent.extensions.clone(),
        },
        security_schemes: agent.security_schemes.clone(),
        security_requirements: agent.security_requirements.clone(),
        default_input_modes: agent.input_modes.clone(),
        default_output_modes: agent.output_modes.clone(),
        skills: agent.skills.clone(),
        icon_url: None,
        signatures: vec![],
    }
}

fn render(json: String) -> RenderedCard {
    // DefaultHasher::new() has fixed keys, so replicas running the same binary and config
    // agree on the validator.
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hasher::write(&mut hasher, json.as_bytes());
    let etag = format!("\"{:016x}\"", std::hash::Hasher::finish(&hasher));
    RenderedCard { json, etag }
}

fn entry(card: AgentCard, merged_by_default: bool, now: DateTime<Utc>) -> CardEntry {
    let v1 = render(serde_json::to_string(&card).unwrap_or_default());
    let merged = render(card.to_merged_json().to_string());
    CardEntry {
        card,
        v1,
        merged,
        merged_by_default,
        last_modified: now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_address_is_host_and_port() {
        assert_eq!(grpc_address("http://127.0.0.1:28932"), "127.0.0.1:28932");
        assert_eq!(
            grpc_address("https://a2a.example.com/base"),
            "a2a.example.com:443"
        );
        assert_eq!(grpc_address("http://example.com"), "example.com:80");
        assert_eq!(grpc_address("http://[::1]:8080/x"), "[::1]:8080");
        assert_eq!(grpc_address("https://[::1]"), "[::1]:443");
    }

    fn agent(name: &str) -> HostedAgent {
        HostedAgent {
            name: name.into(),
            description: "d".into(),
            version: "1.0.0".into(),
            skills: vec![],
            input_modes: vec!["text/plain".into()],
            output_modes: vec!["text/plain".into()],
            extensions: vec![],
            security_schemes: BTreeMap::new(),
            security_requirements: vec![],
            merged_card_by_default: true,
            extended_card: false,
        }
    }

    #[test]
    fn cards_describe_what_is_served() {
        let reg = StaticRegistry::new("http://h:1/", &[agent("echo"), agent("x")], Some("echo"));
        let echo = reg.card("echo").unwrap();
        assert_eq!(
            echo.card.supported_interfaces[0].url,
            "http://h:1/agents/echo/a2a"
        );
        let json: serde_json::Value = serde_json::from_str(&echo.for_version(None).json).unwrap();
        assert_eq!(json["url"], "http://h:1/agents/echo/a2a");
        let strict: serde_json::Value =
            serde_json::from_str(&echo.for_version(Some("1.0")).json).unwrap();
        assert!(
            strict.get("url").is_none(),
            "1.0 clients get the strict card"
        );
        assert_eq!(
            reg.root_card().unwrap().card.supported_interfaces[1].url,
            "http://h:1"
        );
        let grpc = &echo.card.supported_interfaces[2];
        assert_eq!(
            (grpc.url.as_str(), grpc.protocol_binding.as_str()),
            ("h:1", "GRPC")
        );
        assert_eq!(grpc.tenant.as_deref(), Some("echo"));
        let root_grpc = &reg.root_card().unwrap().card.supported_interfaces[2];
        assert_eq!(root_grpc.tenant, None, "the root serves the default agent");
        assert!(
            !json["additionalInterfaces"].to_string().contains("GRPC"),
            "0.3 clients are not offered the 1.0 gRPC service"
        );
        assert_ne!(echo.merged.etag, reg.card("x").unwrap().merged.etag);
        assert_ne!(echo.merged.etag, echo.v1.etag);
        assert_eq!(reg.default_agent(), Some("echo"));
        assert!(
            StaticRegistry::new("http://h", &[agent("a")], Some("nope"))
                .root_card()
                .is_none()
        );
    }
}
