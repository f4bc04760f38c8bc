//! Configuration: defaults < TOML file < `SWITCHBOARD_*` environment < flags. Loading is
//! a pure function of its inputs so tests never touch the process environment.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

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
    /// The agent also served at the root.
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
    /// Bearer token of the admin endpoints (`/admin/…`); they are off without one.
    pub admin_token: Option<String>,
    /// The services this process runs (`gateway`, `tasks`, `fanout`, `dispatcher`,
    /// `registry`); empty runs them all in one process (agents in process too).
    pub services: Vec<String>,
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
    pub agents: Vec<AgentConfig>,
}

/// The services of a split deployment.
pub const SERVICES: [&str; 5] = ["gateway", "tasks", "fanout", "dispatcher", "registry"];

/// One hosted agent.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub name: String,
    /// Which built-in agent runs it: `echo`, `consolidate`, `conformance` or `bench`; or
    /// `embedded`: an agent of the program that embeds Switchboard
    /// ([`crate::Switchboard::agent`]), which this entry configures.
    pub kind: String,
    #[serde(default)]
    pub description: Option<String>,
    /// `consolidate`: milliseconds spent per transcript.
    #[serde(default)]
    pub pause_ms: Option<u64>,
    /// Card served without an `A2A-Version` header: `merged` (1.0 + 0.3 fields) or `1.0`.
    #[serde(default)]
    pub card: Option<String>,
    /// How callers authenticate; absent means no authentication.
    #[serde(default)]
    pub auth: Option<AuthConfig>,
    /// Signs this agent's webhooks (Standard Webhooks): `whsec_<base64>` or 16+ characters.
    #[serde(default)]
    pub webhook_secret: Option<String>,
    /// Split deployment: turns queued or running at most before new tasks are rejected.
    #[serde(default)]
    pub max_queued: Option<usize>,
    /// Split deployment: what happens to a turn whose worker is lost: `fail` (default)
    /// or `reassign` (queue it again, up to 3 times).
    #[serde(default)]
    pub on_worker_lost: Option<String>,
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
            admin_token: None,
            services: Vec::new(),
            backend: None,
            redis_prefix: "sb:".into(),
            tasks_url: None,
            fanout_url: None,
            registry_url: None,
            dispatcher_url: None,
            agents: default_agents(),
        }
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

/// The kinds an `[[agents]]` entry may name.
pub const AGENT_KINDS: [&str; 5] = ["echo", "consolidate", "conformance", "bench", "embedded"];

impl AgentConfig {
    /// An agent of `kind` under `name`, with every setting at its default.
    pub fn new(name: &str, kind: &str) -> AgentConfig {
        AgentConfig {
            name: name.into(),
            kind: kind.into(),
            description: None,
            pause_ms: None,
            card: None,
            auth: None,
            webhook_secret: None,
            max_queued: None,
            on_worker_lost: None,
        }
    }
}

fn default_agents() -> Vec<AgentConfig> {
    let conformance = AgentConfig {
        card: Some("1.0".into()),
        ..AgentConfig::new("conformance", "conformance")
    };
    vec![
        AgentConfig::new("echo", "echo"),
        conformance,
        AgentConfig::new("consolidate", "consolidate"),
    ]
}

/// Values given on the command line or in `SWITCHBOARD_*` variables (clap merges the two).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub listen: Option<SocketAddr>,
    pub data_dir: Option<PathBuf>,
    pub memory: bool,
    pub public_url: Option<String>,
    pub max_body_bytes: Option<usize>,
    pub default_agent: Option<String>,
    /// Added to the configured webhook allowlist.
    pub webhook_allow: Vec<String>,
    /// Added to the configured `PRINCIPAL=TOKEN` bearer tokens.
    pub auth_tokens: Vec<String>,
    pub admin_token: Option<String>,
    pub services: Vec<String>,
    pub backend: Option<String>,
    pub tasks_url: Option<String>,
    pub fanout_url: Option<String>,
    pub registry_url: Option<String>,
    pub dispatcher_url: Option<String>,
}

/// Builds the configuration from an optional TOML document and the overrides, and
/// checks it. Errors say what is wrong in words a person can act on.
pub fn load(file: Option<&str>, overrides: Overrides) -> Result<Config, String> {
    let mut config = match file {
        Some(text) => {
            toml::from_str::<Config>(text).map_err(|e| format!("invalid config file: {e}"))?
        }
        None => Config::default(),
    };
    if let Some(listen) = overrides.listen {
        config.listen = listen;
    }
    if let Some(dir) = overrides.data_dir {
        config.data_dir = dir;
    }
    config.memory |= overrides.memory;
    if overrides.public_url.is_some() {
        config.public_url = overrides.public_url;
    }
    if let Some(max) = overrides.max_body_bytes {
        config.max_body_bytes = max;
    }
    if overrides.default_agent.is_some() {
        config.default_agent = overrides.default_agent.filter(|a| !a.is_empty());
    }
    config.webhook_allow.extend(overrides.webhook_allow);
    config.auth_tokens.extend(overrides.auth_tokens);
    if overrides.admin_token.is_some() {
        config.admin_token = overrides.admin_token;
    }
    if !overrides.services.is_empty() {
        config.services = overrides.services;
    }
    for (value, slot) in [
        (overrides.backend, &mut config.backend),
        (overrides.tasks_url, &mut config.tasks_url),
        (overrides.fanout_url, &mut config.fanout_url),
        (overrides.registry_url, &mut config.registry_url),
        (overrides.dispatcher_url, &mut config.dispatcher_url),
    ] {
        if value.is_some() {
            *slot = value;
        }
    }
    validate(&config)?;
    validate_topology(&config)?;
    Ok(config)
}

pub(crate) fn validate(config: &Config) -> Result<(), String> {
    if config.agents.is_empty() {
        return Err("no agents configured: add at least one [[agents]] entry".into());
    }
    let mut seen = BTreeMap::new();
    for agent in &config.agents {
        let valid_name = !agent.name.is_empty()
            && agent
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid_name {
            return Err(format!(
                "agent name \"{}\" must be non-empty and use only letters, digits, '-' and '_'",
                agent.name
            ));
        }
        if seen.insert(agent.name.clone(), ()).is_some() {
            return Err(format!("agent \"{}\" is configured twice", agent.name));
        }
        if !AGENT_KINDS.contains(&agent.kind.as_str()) {
            return Err(format!(
                "agent \"{}\": unknown kind \"{}\" (expected one of {})",
                agent.name,
                agent.kind,
                AGENT_KINDS.join(", ")
            ));
        }
        if let Some(card) = &agent.card
            && card != "merged"
            && card != "1.0"
        {
            return Err(format!(
                "agent \"{}\": card must be \"merged\" or \"1.0\", not \"{card}\"",
                agent.name
            ));
        }
    }
    if let Some(default) = &config.default_agent
        && !seen.contains_key(default)
    {
        return Err(format!(
            "default_agent \"{default}\" is not one of the configured agents"
        ));
    }
    sb_webhooks::AddressPolicy::parse(&config.webhook_allow.join(","))?;
    for entry in &config.auth_tokens {
        parse_token(entry)?;
    }
    for agent in &config.agents {
        if let Some(auth) = &agent.auth {
            validate_auth(&agent.name, auth)?;
        }
        if let Some(secret) = &agent.webhook_secret {
            sb_webhooks::signing::parse_secret(secret)
                .map_err(|e| format!("agent \"{}\": {e}", agent.name))?;
        }
    }
    for (name, value) in [
        ("task_ttl_secs", config.task_ttl_secs),
        ("input_timeout_secs", config.input_timeout_secs),
        ("stall_timeout_secs", config.stall_timeout_secs),
        (
            "max_streams_per_principal",
            config.max_streams_per_principal as u64,
        ),
        (
            "max_tasks_in_flight_per_principal",
            config.max_tasks_in_flight_per_principal as u64,
        ),
    ] {
        if value == 0 {
            return Err(format!("{name} must be positive"));
        }
    }
    if let Some(token) = &config.admin_token
        && (token.len() < 16 || token.contains(char::is_whitespace))
    {
        return Err("admin_token needs at least 16 characters and no spaces".into());
    }
    if config.webhook_timeout_ms == 0 {
        return Err("webhook_timeout_ms must be positive".into());
    }
    if config.max_header_bytes < 8192 {
        return Err(format!(
            "max_header_bytes must be at least 8192, the smallest buffer hyper reads into (got {})",
            config.max_header_bytes
        ));
    }
    if config.max_body_bytes < 1024 {
        return Err(format!(
            "max_body_bytes must be at least 1024 (got {})",
            config.max_body_bytes
        ));
    }
    if let Some(url) = &config.public_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(format!(
            "public_url must start with http:// or https:// (got \"{url}\")"
        ));
    }
    Ok(())
}

/// The split-deployment settings: known services, shared state, where the others are.
fn validate_topology(config: &Config) -> Result<(), String> {
    for service in &config.services {
        if !SERVICES.contains(&service.as_str()) {
            return Err(format!(
                "unknown service \"{service}\" (expected some of {})",
                SERVICES.join(", ")
            ));
        }
    }
    if let Some(url) = &config.backend
        && !(url.starts_with("redis://") || url.starts_with("rediss://"))
    {
        return Err("backend must be a redis:// or rediss:// URL".into());
    }
    if !config.services.is_empty() {
        let runs = |s: &str| config.services.iter().any(|x| x == s);
        let stateful = ["tasks", "fanout", "dispatcher"].iter().any(|s| runs(s));
        if stateful && config.backend.is_none() {
            return Err(
                "the tasks, fanout and dispatcher services share state through Redis: set --backend redis://…"
                    .into(),
            );
        }
        if runs("gateway") {
            for (needed, url, flag) in [
                ("tasks", &config.tasks_url, "--tasks-url"),
                ("fanout", &config.fanout_url, "--fanout-url"),
                ("registry", &config.registry_url, "--registry-url"),
            ] {
                if !runs(needed) && url.is_none() {
                    return Err(format!(
                        "the gateway needs the {needed} service: run it here (--services) or give {flag}"
                    ));
                }
            }
        }
    }
    for agent in &config.agents {
        if let Some(policy) = &agent.on_worker_lost
            && policy != "fail"
            && policy != "reassign"
        {
            return Err(format!(
                "agent \"{}\": on_worker_lost must be \"fail\" or \"reassign\", not \"{policy}\"",
                agent.name
            ));
        }
        if agent.max_queued == Some(0) {
            return Err(format!(
                "agent \"{}\": max_queued must be positive",
                agent.name
            ));
        }
    }
    Ok(())
}

impl Config {
    /// Whether this process runs `service` (every service when none is named).
    pub fn runs(&self, service: &str) -> bool {
        self.services.is_empty() || self.services.iter().any(|s| s == service)
    }

    pub fn is_split(&self) -> bool {
        !self.services.is_empty()
    }
}

/// Parses a `PRINCIPAL=TOKEN` entry.
pub fn parse_token(entry: &str) -> Result<(String, String), String> {
    match entry.split_once('=') {
        Some((principal, token))
            if !principal.trim().is_empty()
                && !token.trim().is_empty()
                && !token.contains(char::is_whitespace) =>
        {
            Ok((principal.trim().to_owned(), token.to_owned()))
        }
        _ => Err(
            "an auth token must look like PRINCIPAL=TOKEN (both non-empty, no spaces in the token)"
                .into(),
        ),
    }
}

fn validate_auth(agent: &str, auth: &AuthConfig) -> Result<(), String> {
    let secrets = auth.bearer.iter().map(|t| (&t.principal, &t.token)).chain(
        auth.api_keys
            .iter()
            .flat_map(|a| a.keys.iter().map(|k| (&k.principal, &k.key))),
    );
    for (principal, secret) in secrets {
        if principal.trim().is_empty()
            || secret.trim().is_empty()
            || secret.contains(char::is_whitespace)
        {
            return Err(format!(
                "agent \"{agent}\": every credential needs a principal and a secret without spaces"
            ));
        }
    }
    if let Some(jwt) = &auth.jwt
        && jwt.jwks_file.is_some() == jwt.jwks_url.is_some()
    {
        return Err(format!(
            "agent \"{agent}\": auth.jwt needs exactly one of jwks_file and jwks_url"
        ));
    }
    if let Some(api) = &auth.api_keys
        && axum::http::HeaderName::from_bytes(api.header.as_bytes()).is_err()
    {
        return Err(format!(
            "agent \"{agent}\": \"{}\" is not a valid header name",
            api.header
        ));
    }
    Ok(())
}

impl Config {
    pub fn public_url(&self) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", self.listen))
            .trim_end_matches('/')
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_host_three_agents() {
        let config = load(None, Overrides::default()).unwrap();
        let names: Vec<&str> = config.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["echo", "conformance", "consolidate"]);
        assert_eq!(config.public_url(), "http://127.0.0.1:8080");
    }

    #[test]
    fn file_then_overrides() {
        let file = r#"
            listen = "127.0.0.1:9000"
            default_agent = "a"
            [[agents]]
            name = "a"
            kind = "consolidate"
            pause_ms = 5
        "#;
        let config = load(
            Some(file),
            Overrides {
                listen: Some("127.0.0.1:9001".parse().unwrap()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(config.listen.port(), 9001);
        assert_eq!(config.agents[0].pause_ms, Some(5));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(
            load(Some("listen = 5"), Overrides::default())
                .unwrap_err()
                .contains("invalid config file")
        );
        assert!(
            load(Some("bogus = 1"), Overrides::default())
                .unwrap_err()
                .contains("unknown field")
        );
        let dup = "[[agents]]\nname='a'\nkind='echo'\n[[agents]]\nname='a'\nkind='echo'\n";
        assert!(
            load(Some(dup), Overrides::default())
                .unwrap_err()
                .contains("twice")
        );
        let kind = "default_agent='a'\n[[agents]]\nname='a'\nkind='robot'\n";
        assert!(
            load(Some(kind), Overrides::default())
                .unwrap_err()
                .contains("unknown kind")
        );
        let bad_token = Overrides {
            auth_tokens: vec!["no-equals-sign".into()],
            ..Default::default()
        };
        assert!(
            load(None, bad_token)
                .unwrap_err()
                .contains("PRINCIPAL=TOKEN")
        );
        let bad_allow = Overrides {
            webhook_allow: vec!["10.0.0.0/33".into()],
            ..Default::default()
        };
        assert!(load(None, bad_allow).unwrap_err().contains("10.0.0.0/33"));
        let missing = Overrides {
            default_agent: Some("ghost".into()),
            ..Default::default()
        };
        assert!(load(None, missing).unwrap_err().contains("ghost"));
        let small_head = load(Some("max_header_bytes = 4096"), Overrides::default());
        assert!(small_head.unwrap_err().contains("at least 8192"));
    }
}
