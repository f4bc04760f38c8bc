//! Running the real `switchboard` binary as the command-line client in the CLI tests,
//! and reading what it printed.

#![allow(dead_code)] // each test binary uses its part
use std::process::{Command, Output};

use serde_json::Value;

/// The CLI with `args`, with none of the caller's `A2ACLI_*` or `SWITCHBOARD_*`
/// settings, configuration files or stored tokens leaking in.
pub(crate) fn cli(args: &[&str]) -> Output {
    cli_env(args, &[])
}

/// The CLI with `envs` set (and nothing else of the caller's settings).
pub(crate) fn cli_env(args: &[&str], envs: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .env_remove("A2ACLI_AGENT_CARD")
        .env_remove("A2ACLI_BEARER")
        .env_remove("A2ACLI_API_KEY")
        .env_remove("A2ACLI_OUTPUT")
        .env_remove("SWITCHBOARD_TOKEN")
        .env_remove("SWITCHBOARD_API_KEY")
        .env_remove("SWITCHBOARD_URL")
        .env_remove("A2ACLI_CONFIG")
        // No global .env file or stored token of the person running the tests.
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("switchboard-tests-no-config"),
        )
        .envs(envs.iter().copied())
        .output()
        .unwrap()
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The value of the first `Label: value` line.
pub(crate) fn field(text: &str, label: &str) -> String {
    let prefix = format!("{label}: ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {label:?} in:\n{text}"))
        .to_owned()
}

/// Standard output as the one JSON document it must be.
pub(crate) fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{}", stdout(out)))
}
