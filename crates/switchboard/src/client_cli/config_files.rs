//! Configuration files (spec §8.3): `.env` files holding the same `A2ACLI_*` names as
//! the environment. Precedence, highest first: a flag, the environment, the local file
//! (a `.env` found walking up from the working directory, or the one `--config` names in
//! its place), the global file (`$XDG_CONFIG_HOME/a2a-cli/.env`, `~/.config/a2a-cli/.env`),
//! the built-in default.
//!
//! Without touching the process environment (setting it is `unsafe` in edition 2024, and
//! would hide where a value came from), a value from a file becomes the default of each
//! argument reading that variable, when the variable itself is not set: clap's own
//! precedence (flag, then environment, then default) then gives the order above.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::{Arg, Command};

/// The client's variables beyond the `A2ACLI_*` ones (its Switchboard options).
const OTHER_VARIABLES: [&str; 3] = [
    "SWITCHBOARD_URL",
    "SWITCHBOARD_TOKEN",
    "SWITCHBOARD_API_KEY",
];

/// Commands that are not the client's: the server's configuration is its TOML file and
/// its own `SWITCHBOARD_*` variables, never an a2a-cli file.
const NOT_CLIENT: [&str; 6] = ["serve", "worker", "mcp", "completion", "health", "help"];

/// The variable naming a file to use in place of the local `.env` (as `--config` does).
pub(crate) const CONFIG_VARIABLE: &str = "A2ACLI_CONFIG";
/// The id of `--config` among a command's arguments.
pub(crate) const CONFIG_ARG: &str = "a2acli_config";

/// One file read.
#[derive(Clone, Debug, Default)]
pub(crate) struct EnvFile {
    pub path: PathBuf,
    pub values: BTreeMap<String, String>,
}

/// The files this run read, and each setting the command line knows.
#[derive(Clone, Debug, Default)]
pub(crate) struct Loaded {
    pub global: Option<EnvFile>,
    /// The local `.env`, or the `--config` file.
    pub local: Option<EnvFile>,
    /// Variable → (its flag, its built-in default, whether it is a secret).
    pub settings: BTreeMap<String, Setting>,
}

/// A setting as the command line declares it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Setting {
    pub flag: String,
    pub default: Option<String>,
    pub secret: bool,
}

static LOADED: OnceLock<Loaded> = OnceLock::new();

/// What [`prepare`] read (empty for commands that read no file).
pub(crate) fn loaded() -> &'static Loaded {
    LOADED.get_or_init(Loaded::default)
}

/// A variable's value from the environment, else the local file, else the global one
/// (for values no flag carries, such as the client secret a stored token is renewed
/// with).
pub(crate) fn lookup(name: &str) -> Option<String> {
    if let Ok(value) = std::env::var(name) {
        return Some(value);
    }
    let loaded = loaded();
    [&loaded.local, &loaded.global]
        .into_iter()
        .flatten()
        .find_map(|file| file.values.get(name).cloned())
}

/// `command` with `--config` on the client commands and, for a client command in
/// `args`, the files' values as defaults. A file that cannot be read is an error to
/// report as a usage error (exit 2).
pub(crate) fn prepare(command: Command, args: &[String]) -> Result<Command, String> {
    let command = with_config_flag(command);
    let Some(sub) = subcommand(args) else {
        return Ok(command);
    };
    if NOT_CLIENT.contains(&sub) {
        return Ok(command);
    }
    let mut loaded = Loaded {
        global: global_path()
            .filter(|p| p.is_file())
            .map(read)
            .transpose()?,
        local: local_path(args)?.map(read).transpose()?,
        settings: BTreeMap::new(),
    };
    collect_settings(&command, &mut loaded.settings);
    let command = with_file_defaults(command, &loaded);
    let _ = LOADED.set(loaded);
    Ok(command)
}

/// Adds `--config PATH` to every client command (and, being global, their own).
pub(crate) fn with_config_flag(command: Command) -> Command {
    let names: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .filter(|n| !NOT_CLIENT.contains(&n.as_str()))
        .collect();
    names.iter().fold(command, |command, name| {
        command.mut_subcommand(name, |sub| {
            sub.arg(
                Arg::new(CONFIG_ARG)
                    .long("config")
                    .env(CONFIG_VARIABLE)
                    .value_name("PATH")
                    .global(true)
                    .help(
                        "A .env file read in place of the local .env (A2ACLI_CONFIG); the \
                         environment still wins over it (docs/cli.md, Configuration)",
                    ),
            )
        })
    })
}

/// The first word that is not an option: the command.
fn subcommand(args: &[String]) -> Option<&str> {
    args.iter()
        .skip(1)
        .map(String::as_str)
        .find(|a| !a.starts_with('-'))
}

/// `$XDG_CONFIG_HOME/a2a-cli`, else `~/.config/a2a-cli`.
pub(crate) fn config_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("a2a-cli"))
}

fn global_path() -> Option<PathBuf> {
    config_dir().map(|d| d.join(".env"))
}

/// `--config PATH` (or `A2ACLI_CONFIG`), which must exist; else the nearest `.env` up
/// from the working directory.
fn local_path(args: &[String]) -> Result<Option<PathBuf>, String> {
    let explicit = explicit_config(args).or_else(|| {
        std::env::var(CONFIG_VARIABLE)
            .ok()
            .filter(|v| !v.is_empty())
    });
    if let Some(path) = explicit {
        let path = PathBuf::from(path);
        return match path.is_file() {
            true => Ok(Some(path)),
            false => Err(format!("the config file {} does not exist", path.display())),
        };
    }
    let Ok(mut dir) = std::env::current_dir() else {
        return Ok(None);
    };
    loop {
        let candidate = dir.join(".env");
        if candidate.is_file() {
            return Ok(Some(candidate));
        }
        if !dir.pop() {
            return Ok(None);
        }
    }
}

fn explicit_config(args: &[String]) -> Option<String> {
    let mut words = args.iter().take_while(|a| a.as_str() != "--");
    while let Some(word) = words.next() {
        if word == "--config" {
            return words.next().cloned();
        }
        if let Some(path) = word.strip_prefix("--config=") {
            return Some(path.to_owned());
        }
    }
    None
}

fn read(path: PathBuf) -> Result<EnvFile, String> {
    let unreadable =
        |e: dotenvy::Error| format!("cannot read the config file {}: {e}", path.display());
    let mut values = BTreeMap::new();
    for entry in dotenvy::from_path_iter(&path).map_err(unreadable)? {
        let (name, value) = entry.map_err(unreadable)?;
        values.insert(name, value);
    }
    Ok(EnvFile { path, values })
}

fn is_setting(variable: &str) -> bool {
    variable.starts_with("A2ACLI_") || OTHER_VARIABLES.contains(&variable)
}

fn collect_settings(command: &Command, settings: &mut BTreeMap<String, Setting>) {
    for arg in command.get_arguments() {
        let Some(variable) = arg.get_env().and_then(OsStr::to_str) else {
            continue;
        };
        if !is_setting(variable) || settings.contains_key(variable) {
            continue;
        }
        let default = arg.get_default_values();
        settings.insert(
            variable.to_owned(),
            Setting {
                flag: arg.get_long().map(|l| format!("--{l}")).unwrap_or_default(),
                default: (!default.is_empty()).then(|| {
                    let values: Vec<_> = default.iter().map(|v| v.to_string_lossy()).collect();
                    values.join(",")
                }),
                secret: arg.is_hide_env_values_set() || is_secret(variable),
            },
        );
    }
    for sub in command.get_subcommands() {
        if !NOT_CLIENT.contains(&sub.get_name()) {
            collect_settings(sub, settings);
        }
    }
}

/// Whether a variable holds a credential (never printed).
pub(crate) fn is_secret(variable: &str) -> bool {
    ["BEARER", "TOKEN", "API_KEY", "SECRET", "PASSWORD"]
        .iter()
        .any(|word| variable.contains(word))
}

/// The file value of a variable the environment does not set (local before global).
fn file_value<'a>(loaded: &'a Loaded, variable: &str) -> Option<&'a str> {
    if std::env::var_os(variable).is_some() {
        return None;
    }
    [&loaded.local, &loaded.global]
        .into_iter()
        .flatten()
        .find_map(|file| file.values.get(variable))
        .map(String::as_str)
}

fn with_file_defaults(command: Command, loaded: &Loaded) -> Command {
    let ids: Vec<(String, String)> = command
        .get_arguments()
        .filter_map(|arg| {
            let variable = arg.get_env()?.to_str()?;
            let value = file_value(loaded, variable).filter(|_| is_setting(variable))?;
            Some((arg.get_id().to_string(), value.to_owned()))
        })
        .collect();
    let command = ids.into_iter().fold(command, |command, (id, value)| {
        command.mut_arg(id, |arg| arg.default_value(value))
    });
    let subs: Vec<String> = command
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .filter(|n| !NOT_CLIENT.contains(&n.as_str()))
        .collect();
    subs.iter().fold(command, |command, name| {
        command.mut_subcommand(name, |sub| with_file_defaults(sub, loaded))
    })
}

/// Where a file's value came from, for `config show`.
pub(crate) fn file_source(variable: &str) -> Option<(&'static Path, &'static str)> {
    let loaded = loaded();
    [&loaded.local, &loaded.global]
        .into_iter()
        .flatten()
        .find_map(|file| {
            let value = file.values.get(variable)?;
            Some((file.path.as_path(), value.as_str()))
        })
}
