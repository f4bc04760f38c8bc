//! Configuration: defaults < TOML file < `SWITCHBOARD_*` environment < flags. Loading is
//! a pure function of its inputs so tests never touch the process environment.
//!
//! - here: the settings of `switchboard serve` ([`Config`]), their defaults, and the
//!   services of a split deployment ([`Service`]);
//! - `agent`: the `[[agents]]` entries ([`AgentConfig`], the registry's agent definition);
//! - `load`: the settings given as flags or in the environment ([`Overrides`]), laid over
//!   the file by [`load()`];
//! - `validate`: what the types cannot say (names, limits, credentials, topology).
//!
//! Closed sets of values are enums, so serde names the allowed values when it refuses one.

mod agent;
mod load;
mod validate;

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer};

pub use agent::{
    AgentConfig, AgentKind, ApiKeyConfig, ApiKeyEntry, AuthConfig, CardForm, JwtConfig, TokenConfig,
};
pub use load::{Overrides, load};
/// What happens to a turn whose worker is lost (`on_worker_lost`).
pub use sb_registry::OnWorkerLost;
pub use validate::parse_token;
pub(crate) use validate::validate;

/// The whole configuration of `switchboard serve`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    /// Use the in-memory store instead of the data directory (nothing survives a restart).
    pub memory: bool,
    /// The externally visible base URL written into cards; defaults to `http://{listen}`.
    pub public_url: Option<String>,
    pub max_body_bytes: usize,
    /// Most bytes of an HTTP/1 request head (request line and headers): larger gets 431.
    pub max_header_bytes: usize,
    /// The agent also served at the root; `""` names none (TOML has no null).
    #[serde(deserialize_with = "empty_is_none")]
    pub default_agent: Option<String>,
    /// Seconds to let streams and agent runs finish on shutdown.
    pub shutdown_grace_secs: u64,
    /// Webhook targets trusted beyond the public internet: CIDRs, addresses, host names.
    pub webhook_allow: Vec<String>,
    /// Waits before each webhook retry, in milliseconds.
    pub webhook_retry_delays_ms: Vec<u64>,
    /// Timeout of one webhook attempt, in milliseconds.
    pub webhook_timeout_ms: u64,
    /// `PRINCIPAL=TOKEN` bearer tokens accepted by every hosted agent.
    pub auth_tokens: Vec<String>,
    /// Seconds a finished task stays readable before it is evicted.
    pub task_ttl_secs: u64,
    /// Seconds a task may wait for input (or auth) before it is canceled.
    pub input_timeout_secs: u64,
    /// Seconds a running task may go without an event before it is failed.
    pub stall_timeout_secs: u64,
    /// Streams one principal may hold open on this node.
    pub max_streams_per_principal: usize,
    /// Unfinished tasks one principal may have per agent.
    pub max_tasks_in_flight_per_principal: usize,
    /// Hops of agents calling agents a new task may come from (`metadata.delegationDepth`).
    pub max_delegation_depth: u64,
    /// Bearer token of the admin endpoints (`/admin/…`); they are off without one.
    pub admin_token: Option<String>,
    /// The services this process runs; empty runs them all in one process (agents in
    /// process too).
    pub services: Vec<Service>,
    /// Shared state: `redis://[:password@]host:port/db` or `rediss://…` (TLS). Without
    /// it the all-in-one uses the embedded store; split services require it.
    pub backend: Option<String>,
    /// Prefix of every Redis key, so several deployments can share one Redis.
    pub redis_prefix: String,
    /// The task-state service's replicas (comma-separated `http://host:port`).
    pub tasks_url: Option<String>,
    /// The fan-out service's replicas.
    pub fanout_url: Option<String>,
    /// The registry service's replicas.
    pub registry_url: Option<String>,
    /// The dispatcher service, whose dead letters a gateway serves at `/admin/…`.
    pub dispatcher_url: Option<String>,
    /// Signs the cards served (JWS, A2A §8.4) with this key: a PKCS#8 PEM file, EC P-256
    /// (ES256) or Ed25519 (EdDSA). Without one, a key generated at the first start and
    /// kept in the store (so every replica signs with it).
    pub card_signing_key: Option<PathBuf>,
    /// Serve cards unsigned.
    pub unsigned_cards: bool,
    pub agents: Vec<AgentConfig>,
    /// `[fleet]`: fleet health and the rest of the fleet layer.
    pub fleet: sb_fleet::FleetConfig,
    /// `[mcp]`: the fleet's agents as MCP tools at `/mcp`.
    pub mcp: McpConfig,
}

/// A service of a split deployment, as `--services` names it.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Service {
    /// The public A2A edge.
    Gateway,
    /// The task-state service, with the turn queue and the workers' hub.
    Tasks,
    /// Task event streams.
    Fanout,
    /// Webhook deliveries.
    Dispatcher,
    /// The agent registry: definitions and their cards.
    Registry,
}

impl Service {
    pub fn name(self) -> &'static str {
        match self {
            Service::Gateway => "gateway",
            Service::Tasks => "tasks",
            Service::Fanout => "fanout",
            Service::Dispatcher => "dispatcher",
            Service::Registry => "registry",
        }
    }

    /// Whether it keeps its state in the shared backend (Redis), so every replica sees it.
    pub fn needs_backend(self) -> bool {
        matches!(
            self,
            Service::Tasks | Service::Fanout | Service::Dispatcher | Service::Registry
        )
    }
}

impl fmt::Display for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub const DEFAULT_MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data_dir: default_data_dir(),
            memory: false,
            public_url: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_header_bytes: 8192,
            default_agent: Some("echo".into()),
            shutdown_grace_secs: 10,
            webhook_allow: Vec::new(),
            webhook_retry_delays_ms: vec![1000, 3000, 9000],
            webhook_timeout_ms: 10_000,
            auth_tokens: Vec::new(),
            task_ttl_secs: 3600,
            input_timeout_secs: 600,
            stall_timeout_secs: 900,
            max_streams_per_principal: 10_000,
            max_tasks_in_flight_per_principal: 10_000,
            max_delegation_depth: 8,
            admin_token: None,
            services: Vec::new(),
            backend: None,
            redis_prefix: "sb:".into(),
            tasks_url: None,
            fanout_url: None,
            registry_url: None,
            dispatcher_url: None,
            card_signing_key: None,
            unsigned_cards: false,
            agents: agent::default_agents(),
            fleet: sb_fleet::FleetConfig::default(),
            mcp: McpConfig::default(),
        }
    }
}

impl Config {
    /// Whether this process runs `service` (every service when none is named).
    pub fn runs(&self, service: Service) -> bool {
        self.services.is_empty() || self.services.contains(&service)
    }

    pub fn is_split(&self) -> bool {
        !self.services.is_empty()
    }

    /// The services named to run here, joined by `separator` (for logs and traces).
    pub fn service_names(&self, separator: &str) -> String {
        let names: Vec<&str> = self.services.iter().map(|s| s.name()).collect();
        names.join(separator)
    }

    pub fn public_url(&self) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen))
            .trim_end_matches('/')
            .to_owned()
    }
}

fn default_data_dir() -> PathBuf {
    match std::env::var_os("XDG_DATA_HOME") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("switchboard"),
        _ => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(".local/share/switchboard"),
            None => PathBuf::from("switchboard-data"),
        },
    }
}

fn empty_is_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let name = Option::<String>::deserialize(deserializer)?;
    Ok(name.filter(|name| !name.is_empty()))
}

/// `[mcp]`: the MCP server of every gateway (`/mcp`).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Serve `/mcp`.
    pub enabled: bool,
    /// Longest a tool call waits for its task to end or ask something, in seconds.
    pub wait_secs: u64,
}

impl Default for McpConfig {
    fn default() -> McpConfig {
        McpConfig {
            enabled: true,
            wait_secs: 30,
        }
    }
}
