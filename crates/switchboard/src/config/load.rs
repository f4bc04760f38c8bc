//! Loading: the file's settings, then the ones given as flags or `SWITCHBOARD_*`
//! variables laid over them, then the checks.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Serialize;

use super::Config;
use super::validate::{validate, validate_topology};

/// The settings given on the command line or in `SWITCHBOARD_*` variables (clap reads
/// both, a flag winning over its variable). This is the one declaration of each: a
/// field is named as its TOML key, and [`load`] lays them all over the file in one step.
/// A field left unset (`None`, an empty list, `false`) keeps the file's value.
///
/// Values that name one of a closed set (`services`) are taken as text here and checked
/// with the file's, so a wrong one is a configuration error (exit 64) like in the file,
/// not a command-line one.
#[derive(Clone, Debug, Default, clap::Args, Serialize)]
pub struct Overrides {
    /// Address to listen on.
    #[arg(long, env = "SWITCHBOARD_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Directory of the embedded store.
    #[arg(long, env = "SWITCHBOARD_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Keep everything in memory (nothing survives a restart).
    #[arg(long, env = "SWITCHBOARD_MEMORY")]
    pub memory: bool,
    /// Base URL clients reach this server at (written into the agent cards).
    #[arg(long, env = "SWITCHBOARD_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "SWITCHBOARD_MAX_BODY_BYTES")]
    pub max_body_bytes: Option<usize>,
    /// The agent also served at the root ("" for none).
    #[arg(long, env = "SWITCHBOARD_DEFAULT_AGENT")]
    pub default_agent: Option<String>,
    /// Trust these webhook targets beyond the public internet (CIDRs, addresses, host
    /// names; comma-separated or repeated), e.g. `127.0.0.1/32` for a local receiver.
    /// Added to the file's list.
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_ALLOW", value_delimiter = ',')]
    pub webhook_allow: Vec<String>,
    /// Require `Authorization: Bearer TOKEN` on every hosted agent, as PRINCIPAL=TOKEN
    /// (repeatable, or comma-separated in the environment). Added to the file's list.
    #[arg(
        long = "auth-token",
        env = "SWITCHBOARD_AUTH_TOKENS",
        value_delimiter = ','
    )]
    pub auth_tokens: Vec<String>,
    /// Enables the admin endpoints (`/admin/…`, e.g. dead letters) for this bearer token.
    #[arg(long, env = "SWITCHBOARD_ADMIN_TOKEN")]
    pub admin_token: Option<String>,
    /// Run only these services (comma-separated: gateway, tasks, fanout, dispatcher,
    /// registry); without it every service runs in this one process.
    #[arg(long, env = "SWITCHBOARD_SERVICES", value_delimiter = ',')]
    pub services: Vec<String>,
    /// Shared state in Redis: `redis://[:password@]host:port/db`, or `rediss://` for TLS.
    #[arg(long, env = "SWITCHBOARD_BACKEND")]
    pub backend: Option<String>,
    /// The task-state service (comma-separated replica URLs, `http://host:port`).
    #[arg(long, env = "SWITCHBOARD_TASKS_URL")]
    pub tasks_url: Option<String>,
    /// The fan-out service (comma-separated replica URLs).
    #[arg(long, env = "SWITCHBOARD_FANOUT_URL")]
    pub fanout_url: Option<String>,
    /// The registry service (comma-separated replica URLs).
    #[arg(long, env = "SWITCHBOARD_REGISTRY_URL")]
    pub registry_url: Option<String>,
    /// The dispatcher service, for the admin endpoints on a gateway.
    #[arg(long, env = "SWITCHBOARD_DISPATCHER_URL")]
    pub dispatcher_url: Option<String>,
    /// Sign cards with this key (PKCS#8 PEM, P-256 or Ed25519) instead of the generated one.
    #[arg(long, env = "SWITCHBOARD_CARD_SIGNING_KEY")]
    pub card_signing_key: Option<PathBuf>,
    /// Serve cards unsigned.
    #[arg(long, env = "SWITCHBOARD_UNSIGNED_CARDS")]
    pub unsigned_cards: bool,
    /// The directory of ceremony files (`[fleet.ceremonies] dir`).
    #[arg(long, env = "SWITCHBOARD_CEREMONIES_DIR")]
    #[serde(skip)]
    pub ceremonies_dir: Option<PathBuf>,
}

/// Overrides added to the file's list instead of replacing it: credentials and trusted
/// targets are granted in several places (a shared file, a secret in the environment).
const ADDED_TO_THE_FILE: [&str; 2] = ["webhook_allow", "auth_tokens"];

/// Builds the configuration from an optional TOML document and the overrides, and
/// checks it. Errors say what is wrong in words a person can act on.
pub fn load(file: Option<&str>, overrides: Overrides) -> Result<Config, String> {
    let mut settings = match file {
        Some(text) => {
            // Typed first: serde's errors then point at the file's line.
            toml::from_str::<Config>(text).map_err(|e| format!("invalid config file: {e}"))?;
            toml::from_str::<toml::Table>(text).map_err(|e| format!("invalid config file: {e}"))?
        }
        None => toml::Table::new(),
    };
    lay_over(&mut settings, &overrides)?;
    if let Some(dir) = &overrides.ceremonies_dir {
        set_nested(&mut settings, &["fleet", "ceremonies", "dir"], dir)?;
    }
    let config: Config = settings.try_into().map_err(|e: toml::de::Error| {
        format!(
            "invalid flag or SWITCHBOARD_* setting: {}",
            e.to_string().trim_end()
        )
    })?;
    validate(&config)?;
    validate_topology(&config)?;
    Ok(config)
}

/// Puts each override that was given over the file's setting of the same key.
fn lay_over(settings: &mut toml::Table, overrides: &Overrides) -> Result<(), String> {
    let given = toml::Table::try_from(overrides)
        .map_err(|e| format!("invalid flag or SWITCHBOARD_* setting: {e}"))?;
    // `None` fields are not serialized at all; a switch left off and a list not given
    // come as `false` and `[]`.
    for (key, value) in given {
        match value {
            toml::Value::Boolean(false) => {}
            toml::Value::Array(items) if items.is_empty() => {}
            toml::Value::Array(items) if ADDED_TO_THE_FILE.contains(&key.as_str()) => {
                let list = settings
                    .entry(key)
                    .or_insert_with(|| toml::Value::Array(Vec::new()));
                // The file was read as a `Config` already, so this key holds a list.
                if let toml::Value::Array(list) = list {
                    list.extend(items);
                }
            }
            value => {
                settings.insert(key, value);
            }
        }
    }
    Ok(())
}

/// Sets the table key at `path` (tables made on the way): a setting of a section.
fn set_nested(
    settings: &mut toml::Table,
    path: &[&str],
    value: &std::path::Path,
) -> Result<(), String> {
    let Some((last, sections)) = path.split_last() else {
        return Ok(());
    };
    let mut table = settings;
    for section in sections {
        let entry = table
            .entry(*section)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let toml::Value::Table(inner) = entry else {
            return Err(format!("invalid config file: {section} must be a table"));
        };
        table = inner;
    }
    let text = value
        .to_str()
        .ok_or_else(|| format!("{} is not a UTF-8 path", value.display()))?;
    table.insert((*last).to_owned(), toml::Value::String(text.to_owned()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Overrides, load};
    use crate::config::{AgentKind, Service};

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
            max_body_bytes = 4096
            memory = true
            webhook_allow = ["10.0.0.0/8"]
            [[agents]]
            name = "a"
            kind = "consolidate"
            pause_ms = 5
        "#;
        let config = load(
            Some(file),
            Overrides {
                listen: Some("127.0.0.1:9001".parse().unwrap()),
                webhook_allow: vec!["hooks.internal".into()],
                services: vec!["fanout".into(), "tasks".into()],
                backend: Some("redis://127.0.0.1:6379".into()),
                ..Default::default()
            },
        )
        .unwrap();
        // A flag replaces the file's value, adds to its list, or leaves it alone.
        assert_eq!(config.listen.port(), 9001);
        assert_eq!(config.webhook_allow, ["10.0.0.0/8", "hooks.internal"]);
        assert_eq!(config.max_body_bytes, 4096);
        assert!(config.memory, "an unset flag turned the file's setting off");
        assert_eq!(config.services, [Service::Fanout, Service::Tasks]);
        assert_eq!(config.agents[0].kind, AgentKind::Consolidate);
        assert_eq!(config.agents[0].pause_ms, Some(5));
    }

    #[test]
    fn the_ceremonies_directory_comes_from_the_file_or_the_flag() {
        let file = "[fleet.ceremonies]\ndir = \"/etc/ceremonies\"\ncatch_up_grace_secs = 60\n";
        let config = load(Some(file), Overrides::default()).unwrap();
        let settings = &config.fleet.ceremonies;
        assert_eq!(settings.dir.as_deref(), Some("/etc/ceremonies".as_ref()));
        assert_eq!(settings.catch_up_grace_secs, 60);
        let flag = Overrides {
            ceremonies_dir: Some("/srv/ceremonies".into()),
            ..Default::default()
        };
        let config = load(Some(file), flag).unwrap();
        let settings = &config.fleet.ceremonies;
        assert_eq!(settings.dir.as_deref(), Some("/srv/ceremonies".as_ref()));
        assert_eq!(
            settings.catch_up_grace_secs, 60,
            "the rest of the section stays"
        );
        let bare = Overrides {
            ceremonies_dir: Some("/srv/ceremonies".into()),
            ..Default::default()
        };
        let config = load(None, bare).unwrap();
        assert!(config.fleet.ceremonies.dir.is_some());
    }

    #[test]
    fn an_empty_default_agent_names_none() {
        let flag = Overrides {
            default_agent: Some(String::new()),
            ..Default::default()
        };
        assert_eq!(load(None, flag).unwrap().default_agent, None);
        let file = load(Some("default_agent = \"\""), Overrides::default());
        assert_eq!(file.unwrap().default_agent, None);
    }
}
