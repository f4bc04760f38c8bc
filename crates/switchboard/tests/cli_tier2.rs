//! The a2a-cli tier 2 commands and checks, run as the real binary: `--debug`'s raw wire
//! messages with credentials redacted, capability checks before a call, and `task
//! download` (with Switchboard's conformance agent and a stub agent serving URL parts).

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::sync::Arc;

use serde_json::{Value, json};

#[path = "support/all_in_one.rs"]
mod all_in_one;
#[path = "support/cli.rs"]
mod cli_support;
#[path = "support/process.rs"]
mod process;
#[path = "support/stub_agent.rs"]
mod stub_agent;

use all_in_one::{card_file, start};
use cli_support::{cli, field, json, stderr, stdout};

#[tokio::test]
async fn debug_shows_the_raw_wire_messages_of_every_binding_without_the_credentials() {
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
    // The card's fetch is on the wire too: where it was asked for and what came back.
    assert!(
        log.contains("GetAgentCard → GET http://")
            && log.contains("/.well-known/agent-card.json")
            && log.contains("GetAgentCard ← 200 OK")
            && log.contains(r#""supportedInterfaces""#),
        "{log}"
    );
    assert!(!log.contains(token), "the token leaked:\n{log}");
    assert!(
        !log.contains("svc-value-42"),
        "the service parameter leaked:\n{log}"
    );
    // The same tap on the other bindings: the HTTP+JSON route and answer, the gRPC
    // messages as JSON, a stream's events; never the token.
    for (transport, request) in [("HTTP+JSON", "GET http://"), ("GRPC", "GetTask → gRPC")] {
        let out = cli(&[
            "task",
            "get",
            &agent,
            "no-such-task",
            "--transport",
            transport,
            "--debug",
            "--bearer",
            token,
        ]);
        let log = stderr(&out);
        assert!(
            log.contains(request) && log.contains("no-such-task"),
            "{transport}: {log}"
        );
        assert!(
            !log.contains(token),
            "{transport}: the token leaked:\n{log}"
        );
    }
    let out = cli(&[
        "send", &agent, "hello", "--stream", "--debug", "--bearer", token,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = stderr(&out);
    assert!(log.contains("SendStreamingMessage ← event"), "{log}");
    assert!(!log.contains(token), "the token leaked:\n{log}");
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

#[tokio::test]
async fn download_writes_each_artifact_once_and_never_overwrites_without_force() {
    let server = start().await;
    let agent = server.agent("conformance");
    let dir = tempfile::tempdir().unwrap();
    let into = dir.path().join("out");
    let into = into.to_str().unwrap();

    // A file part: `send` reports it and names the command that saves it.
    let out = cli(&["send", &agent, "tck-artifact-file"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let task_id = field(&text, "Task ID");
    assert!(
        text.contains("[file output.txt, text/plain, 3 bytes]"),
        "{text}"
    );
    assert_eq!(
        field(&text, "Download"),
        format!("switchboard task download -a {agent} {task_id}")
    );
    let out = cli(&["task", "download", &agent, &task_id, "--dir", into]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let saved = dir.path().join("out/output.txt");
    assert_eq!(std::fs::read(&saved).unwrap(), b"tck");
    assert_eq!(
        field(&stdout(&out), "File"),
        format!("{} (3 bytes, text/plain)", saved.display())
    );

    // Again: refused (nothing written), unless --force.
    std::fs::write(&saved, "mine").unwrap();
    let out = cli(&[
        "task", "download", &agent, &task_id, "--dir", into, "-o", "json",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(json(&out)["error"]["code"], "SWITCHBOARD_FILE_EXISTS");
    assert_eq!(std::fs::read(&saved).unwrap(), b"mine");
    let out = cli(&[
        "task", "download", &agent, &task_id, "--dir", into, "--force", "-o", "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = json(&out);
    assert_eq!(files[0]["bytes"], 3);
    assert_eq!(files[0]["mediaType"], "text/plain");
    assert_eq!(std::fs::read(&saved).unwrap(), b"tck");

    // A data part as pretty JSON; a text part as .txt; an unknown artifact is an error.
    let out = cli(&["send", &agent, "tck-artifact-data", "-o", "json"]);
    let data_task = json(&out)["task"]["id"].as_str().unwrap().to_owned();
    let out = cli(&[
        "task", "download", &agent, &data_task, "--dir", into, "-o", "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let path = json(&out)[0]["path"].as_str().unwrap().to_owned();
    assert!(path.ends_with(".json"), "{path}");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(saved, json!({"key": "value", "count": 42}));
    let out = cli(&["task", "download", &agent, &data_task, "--artifact", "nope"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("SWITCHBOARD_NOT_FOUND"),
        "{}",
        stderr(&out)
    );
}

/// A task whose artifacts are files by URL: one on the agent's origin, under a name
/// that tries to leave the directory, one `file://` URL, and one on another origin.
fn url_task(base: &str) -> Value {
    let file = |url: String, name: &str| json!({"url": url, "filename": name, "mediaType": "application/pdf"});
    json!({
        "id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [
            {"artifactId": "a1", "name": "remote", "parts": [file(format!("{base}/files/r.pdf"), "../../evil.pdf")]},
            {"artifactId": "a2", "name": "local", "parts": [file("file:///etc/passwd".into(), "passwd")]},
            {"artifactId": "a3", "name": "elsewhere", "parts": [file(base.replace("127.0.0.1", "localhost") + "/files/e.pdf", "e.pdf")]}
        ]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn download_fetches_url_parts_safely() {
    let base = Arc::new(std::sync::OnceLock::<String>::new());
    let seen = base.clone();
    let stub = stub_agent::start(
        json!({}),
        Arc::new(move |request: &Value| match request["method"].as_str() {
            Some("GetTask") => stub_agent::result(request, url_task(seen.get().unwrap())),
            _ => stub_agent::error(request, -32601, "no such method"),
        }),
    )
    .await;
    base.set(stub.base.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let into = dir.path().to_str().unwrap();
    let out = cli(&[
        "task",
        "download",
        &stub.base,
        "t1",
        "--artifact",
        "remote",
        "--dir",
        into,
        "--bearer",
        "tok-1",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let files = json(&out);
    let path = files[0]["path"].as_str().unwrap();
    assert_eq!(path, dir.path().join("_.._evil.pdf").to_str().unwrap());
    assert_eq!(std::fs::read(path).unwrap(), b"%PDF-stub-bytes");
    assert_eq!(files[0]["mediaType"], "application/pdf");
    // The agent's own origin got the token (the GetTask call, then the file).
    let auths = stub.authorizations.lock().unwrap().clone();
    assert_eq!(auths, ["Bearer tok-1", "Bearer tok-1"]);

    let out = cli(&[
        "task",
        "download",
        &stub.base,
        "t1",
        "--artifact",
        "local",
        "--dir",
        into,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("only http and https"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("passwd").exists());

    // Another origin gets the file request without the token.
    let out = cli(&[
        "task",
        "download",
        &stub.base,
        "t1",
        "--artifact",
        "elsewhere",
        "--dir",
        into,
        "--bearer",
        "tok-1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(dir.path().join("e.pdf").exists());
    let auths = stub.authorizations.lock().unwrap().clone();
    assert_eq!(auths.last().map(String::as_str), Some("-"), "{auths:?}");
}
