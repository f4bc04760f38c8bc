//! The CLI's configuration files and the parts of `auth` that need no authorization
//! server, run as the real binary in a made-up home: precedence (flag, environment,
//! local `.env` found walking up, `--config` in its place, global file, default) as
//! `config show` reports it and as a command obeys it; secrets redacted; bad files and
//! unreachable token endpoints as clear errors with their exit statuses; a stored token
//! that expired and cannot be renewed.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

/// A home of its own: `$XDG_CONFIG_HOME/a2a-cli/.env` is the global file, `project/` has
/// the local `.env`, and commands run in `project/sub/` (the local file is found walking
/// up).
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let home = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(home.path("config/a2a-cli")).unwrap();
        std::fs::create_dir_all(home.path("project/sub")).unwrap();
        home
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn run(&self, args: &[&str], envs: &[(&str, &str)]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
        command
            .args(args)
            .current_dir(self.path("project/sub"))
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.path("config"));
        for (name, _) in std::env::vars() {
            if name.starts_with("A2ACLI_") || name.starts_with("SWITCHBOARD_") {
                command.env_remove(name);
            }
        }
        command.envs(envs.iter().copied()).output().unwrap()
    }

    /// A card file for an agent nobody serves, with `schemes` as its security schemes.
    fn card(&self, schemes: Value) -> String {
        let card = json!({
            "name": "guarded", "description": "d", "version": "1", "capabilities": {},
            "supportedInterfaces": [{"url": "http://127.0.0.1:9/a2a", "protocolBinding": "JSONRPC",
                                     "protocolVersion": "1.0"}],
            "securitySchemes": schemes,
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []
        });
        let path = self.write("card.json", &card.to_string());
        path.to_string_lossy().into_owned()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn show(home: &Home, args: &[&str], envs: &[(&str, &str)]) -> Value {
    let mut all = vec!["config", "show", "-o", "json"];
    all.extend_from_slice(args);
    let out = home.run(&all, envs);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The (value, source, file) `config show` gives a setting.
fn setting(report: &Value, name: &str) -> (Value, String, Value) {
    let row = report["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report:#}"));
    (
        row["value"].clone(),
        row["source"].as_str().unwrap().to_owned(),
        row["file"].clone(),
    )
}

#[test]
fn config_show_reports_each_level_of_the_precedence() {
    let home = Home::new();
    let global = home.write(
        "config/a2a-cli/.env",
        "A2ACLI_TIMEOUT=4s\nA2ACLI_POLL_INTERVAL=4s\nA2ACLI_A2A_VERSION=9.9\n\
         A2ACLI_CONTEXT_ID=from-global\nA2ACLI_BEARER=global-secret-token\n",
    );
    let local = home.write(
        "project/.env",
        "A2ACLI_TIMEOUT=3s\nA2ACLI_POLL_INTERVAL=3s\nA2ACLI_A2A_VERSION=0.3\n",
    );
    let env = [("A2ACLI_TIMEOUT", "2s"), ("A2ACLI_POLL_INTERVAL", "2s")];
    let report = show(&home, &["--timeout", "1s"], &env);
    assert_eq!(report["files"]["global"], json!(global.to_string_lossy()));
    assert_eq!(report["files"]["local"], json!(local.to_string_lossy()));
    assert_eq!(
        setting(&report, "A2ACLI_TIMEOUT"),
        (json!("1s"), "flag".into(), Value::Null)
    );
    assert_eq!(
        setting(&report, "A2ACLI_POLL_INTERVAL"),
        (json!("2s"), "env".into(), Value::Null)
    );
    assert_eq!(
        setting(&report, "A2ACLI_A2A_VERSION"),
        (json!("0.3"), "file".into(), json!(local.to_string_lossy()))
    );
    assert_eq!(
        setting(&report, "A2ACLI_CONTEXT_ID"),
        (
            json!("from-global"),
            "file".into(),
            json!(global.to_string_lossy())
        )
    );
    assert_eq!(
        setting(&report, "A2ACLI_TASK_ID"),
        (Value::Null, "default".into(), Value::Null)
    );
    assert_eq!(
        setting(&report, "A2ACLI_OUTPUT"),
        (json!("json"), "flag".into(), Value::Null)
    );
    // A secret from a file is named, never shown, in either format.
    assert_eq!(setting(&report, "A2ACLI_BEARER").0, json!("<redacted>"));
    let out = home.run(&["config", "show"], &[]);
    assert!(!text(&out.stdout).contains("global-secret-token"));
    assert!(text(&out.stdout).contains("A2ACLI_BEARER=<redacted>"));

    // --config replaces the local file (not the global one); the environment still wins.
    let other = home.write("agent-b.env", "A2ACLI_A2A_VERSION=1.0\n");
    let report = show(&home, &["--config", other.to_str().unwrap()], &env);
    assert_eq!(report["files"]["local"], json!(other.to_string_lossy()));
    assert_eq!(
        setting(&report, "A2ACLI_A2A_VERSION"),
        (json!("1.0"), "file".into(), json!(other.to_string_lossy()))
    );
    assert_eq!(setting(&report, "A2ACLI_TIMEOUT").1, "env");
    assert_eq!(setting(&report, "A2ACLI_CONTEXT_ID").1, "file");
    assert_eq!(setting(&report, "A2ACLI_CONFIG").1, "flag");
    // So does A2ACLI_CONFIG.
    let by_env = show(&home, &[], &[("A2ACLI_CONFIG", other.to_str().unwrap())]);
    assert_eq!(by_env["files"]["local"], json!(other.to_string_lossy()));
}

#[test]
fn a_command_obeys_the_files_under_the_environment() {
    let home = Home::new();
    let card = home.card(json!({}));
    home.write(
        "project/.env",
        &format!("A2ACLI_AGENT_CARD={card}\nA2ACLI_A2A_VERSION=7.7\n"),
    );
    // The agent and the version both come from the local file.
    let out = home.run(&["send", "hello"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("\"7.7\""),
        "{}",
        text(&out.stderr)
    );
    // The environment wins over the file: now the (unserved) agent is called.
    let out = home.run(&["send", "hello"], &[("A2ACLI_A2A_VERSION", "1.0")]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("A2ACLI_ERR_UNREACHABLE"));
}

#[test]
fn a_bad_or_missing_file_is_a_usage_error_naming_it() {
    let home = Home::new();
    let bad = home.write("project/.env", "A2ACLI_TIMEOUT='unterminated\n");
    let out = home.run(&["config", "show"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let error = text(&out.stderr);
    assert!(error.contains(bad.to_str().unwrap()), "{error}");
    assert!(error.contains("A2ACLI_ERR_USAGE"), "{error}");
    let out = home.run(
        &["config", "show", "--config", "/no/such.env", "-o", "json"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["error"]["code"], "A2ACLI_ERR_USAGE");
    // The server's commands never read them.
    let out = home.run(&["serve", "--check", "--memory"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

fn oauth_card(home: &Home, token_url: &str) -> String {
    home.card(json!({
        "oauth2": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {
            "tokenUrl": token_url, "scopes": {"a2a": "call"}}}}},
        "oauth2Device": {"oauth2SecurityScheme": {"flows": {"deviceCode": {
            "deviceAuthorizationUrl": token_url.replace("/token", "/device/auth"),
            "tokenUrl": token_url, "scopes": {"a2a": "call"}}}}}
    }))
}

fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn auth_login_says_why_it_cannot_get_a_token() {
    let home = Home::new();
    let token_url = format!("http://127.0.0.1:{}/token", closed_port());
    let card = oauth_card(&home, &token_url);
    // Client credentials, the token endpoint down: unreachable (3), naming it.
    let out = home.run(
        &["auth", "login", &card, "--client-id", "m"],
        &[("A2ACLI_CLIENT_SECRET", "s")],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("A2ACLI_ERR_UNREACHABLE"));
    assert!(text(&out.stderr).contains("authorization server"));
    // The device flow, its endpoint down: the same, before any prompt.
    let out = home.run(&["auth", "login", &card, "--flow", "device"], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    // A card with no OAuth scheme and no --token-url: a usage error saying what to give.
    let plain = home.card(json!({}));
    let out = home.run(&["auth", "login", &plain], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--token-url"),
        "{}",
        text(&out.stderr)
    );
    // An OpenID Connect scheme: its discovery document is read for the endpoints.
    let discovery = format!(
        "http://127.0.0.1:{}/.well-known/openid-configuration",
        closed_port()
    );
    let oidc = home.card(json!({"oidc": {"openIdConnectSecurityScheme": {
        "openIdConnectUrl": discovery}}}));
    let out = home.run(&["auth", "login", &oidc], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains(&discovery),
        "{}",
        text(&out.stderr)
    );
    // Nothing was stored.
    let out = home.run(&["auth", "status"], &[]);
    assert!(text(&out.stdout).contains("No stored tokens"));
    assert!(!home.path("config/a2a-cli/tokens").join("x").exists());
}

/// A token as `auth login` stores it, expired, for the agent of `card`.
#[test]
fn commands_offer_only_the_options_they_use() {
    let home = Home::new();
    // Login reads the card and talks to the authorization server, never to the agent:
    // no credentials, bindings, protocol version or task output to choose.
    let help = text(&home.run(&["auth", "login", "--help"], &[]).stdout);
    for used in [
        "--agent-card",
        "--insecure",
        "--debug",
        "--client-id",
        "--output",
        "--json",
    ] {
        assert!(help.contains(used), "{used} missing from:\n{help}");
    }
    for unused in [
        "--bearer",
        "--api-key",
        "--svc-param",
        "--transport",
        "--a2a-version",
        "--verbose",
        "--exit-status",
    ] {
        assert!(!help.contains(unused), "{unused} offered by:\n{help}");
    }
    let out = home.run(
        &["auth", "login", "http://127.0.0.1:1", "--bearer", "t"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    for command in [
        &["auth", "logout", "--help"][..],
        &["auth", "status", "--help"],
    ] {
        let help = text(&home.run(command, &[]).stdout);
        assert!(help.contains("--json"), "{help}");
        for unused in ["--bearer", "--transport", "--verbose", "--exit-status"] {
            assert!(!help.contains(unused), "{unused} offered by:\n{help}");
        }
    }
    // A command that calls the agent keeps them all.
    let help = text(&home.run(&["send", "--help"], &[]).stdout);
    for used in [
        "--bearer",
        "--transport",
        "--verbose",
        "--exit-status",
        "--agent-card",
    ] {
        assert!(help.contains(used), "{used} missing from:\n{help}");
    }
    // The task's view and outcome belong to the commands that report a task.
    for command in [
        &["task", "get", "--help"][..],
        &["task", "cancel", "--help"],
        &["subscribe", "--help"],
        &["inbox", "answer", "--help"],
    ] {
        let help = text(&home.run(command, &[]).stdout);
        assert!(
            help.contains("--verbose") && help.contains("--exit-status"),
            "{command:?}:\n{help}"
        );
    }
    for command in [
        &["card", "--help"][..],
        &["task", "list", "--help"],
        &["task", "download", "--help"],
        &["push", "list", "--help"],
        &["agents", "list", "--help"],
        &["inbox", "list", "--help"],
        &["ceremonies", "list", "--help"],
        &["config", "show", "--help"],
        &["conformance", "--help"],
        &["health", "--help"],
    ] {
        let help = text(&home.run(command, &[]).stdout);
        assert!(help.contains("--json"), "{command:?}:\n{help}");
        assert!(
            !help.contains("--verbose") && !help.contains("--exit-status"),
            "{command:?} offers the task's view:\n{help}"
        );
    }
}

fn store_expired(home: &Home, card: &str, flow: &str, token_url: &str) -> PathBuf {
    let tokens = home.path("config/a2a-cli/tokens");
    std::fs::create_dir_all(&tokens).unwrap();
    let agent = format!("file://{card}");
    let stored = json!({
        "agent": agent, "flow": flow, "token_url": token_url, "client_id": "m",
        "access_token": "stale-access-token", "expires_at": 1_000, "scopes": ["a2a"],
        "extra_params": []
    });
    let name = agent
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect::<String>()
        .replace("___", "_");
    let path = tokens.join(format!("{}.json", name.trim_matches('_')));
    std::fs::write(&path, stored.to_string()).unwrap();
    path
}

#[test]
fn an_expired_token_that_cannot_be_renewed_asks_for_a_new_login() {
    let home = Home::new();
    let token_url = format!("http://127.0.0.1:{}/token", closed_port());
    let card = oauth_card(&home, &token_url);
    let file = store_expired(&home, &card, "client_credentials", &token_url);
    let status = home.run(&["auth", "status", "-o", "json"], &[]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["tokens"][0]["expired"], true, "{status:#}");
    assert!(!status.to_string().contains("stale-access-token"));

    // No secret to get another, no refresh token: exit 4, saying to log in again.
    let out = home.run(&["send", &card, "hello"], &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let error = text(&out.stderr);
    assert!(error.contains("expired"), "{error}");
    assert!(error.contains("auth login"), "{error}");
    // The secret in a .env file is used, and renewing fails on the endpoint: still 4,
    // with why.
    home.write("project/.env", "A2ACLI_CLIENT_SECRET=s\n");
    let out = home.run(&["send", &card, "hello"], &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("cannot reach"),
        "{}",
        text(&out.stderr)
    );
    // An explicit credential wins: the stored token is not even looked at.
    let out = home.run(&["send", &card, "hello", "--bearer", "mine"], &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));

    // logout removes the file (the agent named by its stored URL, no card needed).
    let agent = format!("file://{card}");
    let out = home.run(&["auth", "logout", &agent], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!Path::new(&file).exists());
}
