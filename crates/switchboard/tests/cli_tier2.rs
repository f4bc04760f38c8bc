//! The a2a-cli tier 2 commands and checks, run as the real binary: `--debug`'s raw wire
//! messages with credentials redacted, capability checks before a call, `task download`,
//! `card get --validate` against the A2A JSON Schema, and `conformance` against
//! Switchboard's own agents and against a stub agent that answers wrongly.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::process::Child;

use serde_json::{Value, json};

#[path = "support/cli.rs"]
mod cli_support;
#[path = "support/process.rs"]
mod process;

use cli_support::{cli, json, stderr, stdout};

struct Server {
    base: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn agent(&self, name: &str) -> String {
        format!("{}/agents/{name}", self.base)
    }
}

/// The all-in-one with the `echo` and `conformance` agents.
async fn start() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("switchboard.toml");
    std::fs::write(
        &config,
        "[[agents]]\nname = \"echo\"\nkind = \"echo\"\n\n\
         [[agents]]\nname = \"conformance\"\nkind = \"conformance\"\n",
    )
    .unwrap();
    let port = process::free_port();
    let config = config.to_string_lossy().into_owned();
    let child = process::serve(port, &["--config", config.as_str(), "--memory"]).await;
    Server {
        base: format!("http://127.0.0.1:{port}"),
        child,
        _dir: dir,
    }
}

/// A card file for an agent whose only interface is `url` (JSON-RPC 1.0), with
/// `capabilities`.
fn card_file(dir: &std::path::Path, url: &str, capabilities: Value) -> String {
    let card = json!({
        "name": "stub", "description": "a stub agent", "version": "1.0.0",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": capabilities,
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "d", "tags": ["t"]}]
    });
    let path = dir.join("card.json");
    std::fs::write(&path, card.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

#[tokio::test]
async fn debug_shows_the_raw_json_rpc_exchange_without_the_credentials() {
    let server = start().await;
    let agent = server.agent("echo");
    let token = "s3cr3t-bearer-token";
    let out = cli(&[
        "task",
        "get",
        &agent,
        "no-such-task",
        "--transport",
        "JSONRPC",
        "--debug",
        "--bearer",
        token,
        "--svc-param",
        "X-Custom:svc-value-42",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let log = stderr(&out);
    // The request as sent (method, params) and the server's answer (the error object).
    assert!(
        log.contains(r#""method":"GetTask""#) && log.contains(r#""id":"no-such-task""#),
        "{log}"
    );
    assert!(
        log.contains(r#""error":{"#) && log.contains("-32001"),
        "{log}"
    );
    assert!(log.contains("authorization: [REDACTED]"), "{log}");
    assert!(!log.contains(token), "the token leaked:\n{log}");
    assert!(
        !log.contains("svc-value-42"),
        "the service parameter leaked:\n{log}"
    );
    // Without --debug, nothing of the wire.
    let out = cli(&[
        "task",
        "get",
        &agent,
        "no-such-task",
        "--transport",
        "JSONRPC",
    ]);
    assert!(
        !stderr(&out).contains(r#""method":"GetTask""#),
        "{}",
        stderr(&out)
    );
}

#[test]
fn push_commands_fail_fast_when_the_card_offers_no_push() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 9: a call that went out would fail as unreachable (3).
    let card = card_file(
        dir.path(),
        "http://127.0.0.1:9/a2a",
        json!({"streaming": false, "pushNotifications": false}),
    );
    for args in [
        vec!["push", "list", card.as_str(), "t1"],
        vec!["push", "get", card.as_str(), "t1", "c1"],
        vec![
            "task",
            "push-config",
            "create",
            card.as_str(),
            "t1",
            "--url",
            "http://h/x",
        ],
    ] {
        let mut args = args.clone();
        args.extend(["-o", "json"]);
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let error = &json(&out)["error"];
        assert_eq!(
            error["code"], "PushNotificationNotSupportedError",
            "{error}"
        );
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("pushNotifications")
        );
    }
    // Declared: the call goes out (and finds nothing listening).
    let card = card_file(
        dir.path(),
        "http://127.0.0.1:9/a2a",
        json!({"pushNotifications": true}),
    );
    let out = cli(&["push", "list", &card, "t1"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
}
