//! The a2a-cli tier 2 commands and checks, run as the real binary: `--debug`'s raw wire
//! messages with credentials redacted, capability checks before a call, `task download`,
//! `card get --validate` against the A2A JSON Schema, and `conformance` against
//! Switchboard's own agents and against a stub agent that answers wrongly.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::process::Child;
use std::sync::Arc;

use serde_json::{Value, json};

#[path = "support/cli.rs"]
mod cli_support;
#[path = "support/process.rs"]
mod process;
#[path = "support/stub_agent.rs"]
mod stub_agent;

use cli_support::{cli, field, json, stderr, stdout};

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
    start_with(&[]).await
}

/// The same, with `args`.
async fn start_with(args: &[&str]) -> Server {
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
    let mut all = vec!["--config", config.as_str(), "--memory"];
    all.extend_from_slice(args);
    let child = process::serve(port, &all).await;
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

#[tokio::test]
async fn card_validate_checks_the_a2a_json_schema_of_each_version_claimed() {
    let server = start().await;
    // Switchboard's served cards (1.0, merged with the 0.3 fields): valid for both.
    let out = cli(&[
        "card",
        "get",
        &server.agent("echo"),
        "--validate",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report = json(&out);
    assert_eq!(report["valid"], true, "{report:#}");
    assert_eq!(report["schemaVersions"], json!(["1.0", "0.3"]));
    let out = cli(&["card", "get", &server.agent("conformance"), "--validate"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).starts_with("Valid: yes\nSchema: A2A 1.0, A2A 0.3\n"),
        "{}",
        stdout(&out)
    );

    let dir = tempfile::tempdir().unwrap();
    // A 0.3-only card.
    let v03 = json!({
        "name": "old", "description": "d", "version": "1", "protocolVersion": "0.3.0",
        "url": "http://127.0.0.1:9/a2a", "preferredTransport": "JSONRPC", "capabilities": {},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "d", "tags": []}]
    });
    let path = dir.path().join("v03.json");
    std::fs::write(&path, v03.to_string()).unwrap();
    let path = path.to_str().unwrap();
    let out = cli(&[
        "card",
        "get",
        path,
        "--validate",
        "--a2a-version",
        "0.3",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(json(&out)["schemaVersions"], json!(["0.3"]));

    // Broken: usable by the client (which ignores what it does not know), but not what
    // the 1.0 schema allows.
    let path = card_file(
        dir.path(),
        "http://127.0.0.1:9/a2a",
        json!({"streaming": false, "telepathy": true}),
    );
    let mut broken: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    broken["supportedInterfaces"][0]["priority"] = json!("high");
    std::fs::write(&path, broken.to_string()).unwrap();
    let out = cli(&["card", "get", &path, "--validate", "-o", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let report = json(&out);
    assert_eq!(report["valid"], false);
    let mut pointers: Vec<&str> = report["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["pointer"].as_str().unwrap())
        .collect();
    pointers.sort_unstable();
    assert_eq!(
        pointers,
        ["/capabilities", "/supportedInterfaces/0"],
        "{report:#}"
    );
    let out = cli(&["card", "get", &path, "--validate"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("Valid: no\n"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("[1.0] /capabilities: Additional properties"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("A2ACLI_ERR_CARD_INVALID"),
        "{}",
        stderr(&out)
    );
    // Without --validate the card is shown: the client can use it.
    assert_eq!(cli(&["card", "get", &path]).status.code(), Some(0));
}

/// The verdict of each check, as `NAME [INTERFACE]` → `pass`/`fail`/`skip`.
fn verdicts(report: &Value) -> Vec<(String, String)> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let interface = c["interface"].as_str().unwrap_or("card");
            let name = format!("{} [{interface}]", c["name"].as_str().unwrap());
            (name, c["verdict"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[tokio::test]
async fn conformance_passes_against_switchboards_own_agents_on_every_binding() {
    let server = start_with(&["--webhook-allow", "127.0.0.1/32"]).await;
    let hook = "http://127.0.0.1:9/hook";
    for name in ["conformance", "echo"] {
        let agent = server.agent(name);
        let out = cli(&["conformance", &agent, "--webhook-url", hook, "-o", "json"]);
        let report = json(&out);
        assert_eq!(out.status.code(), Some(0), "{report:#}");
        assert_eq!(report["summary"]["failed"], 0, "{report:#}");
        let checks = verdicts(&report);
        for interface in ["JSONRPC 1.0", "HTTP+JSON 1.0", "GRPC 1.0"] {
            for check in [
                "SendMessage",
                "GetTask of an unknown id",
                "SendStreamingMessage",
                "push config lifecycle",
            ] {
                let key = format!("{check} [{interface}]");
                assert!(
                    checks.contains(&(key.clone(), "pass".into())),
                    "{key}: {checks:?}"
                );
            }
        }
        // The JSON-RPC-only check is skipped elsewhere, with a reason.
        assert!(checks.contains(&("unknown method [GRPC 1.0]".into(), "skip".into())));
    }
    // At A2A 0.3: the 0.3 interfaces, ListTasks (1.0) skipped, the gRPC interface (1.0
    // only) reported as skipped.
    let agent = server.agent("echo");
    let out = cli(&[
        "conformance",
        &agent,
        "--a2a-version",
        "0.3",
        "--webhook-url",
        hook,
        "-o",
        "json",
    ]);
    let report = json(&out);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    let checks = verdicts(&report);
    assert!(
        checks.contains(&("SendMessage [HTTP+JSON 0.3]".into(), "pass".into())),
        "{checks:?}"
    );
    assert!(
        checks.contains(&("ListTasks [JSONRPC 0.3]".into(), "skip".into())),
        "{checks:?}"
    );
    assert!(
        checks.contains(&("interface [GRPC 0.3]".into(), "skip".into())),
        "{checks:?}"
    );
    // --transport narrows it to one binding; the text names each check and sums up.
    let agent = server.agent("echo");
    let out = cli(&[
        "conformance",
        &agent,
        "--transport",
        "JSONRPC",
        "--webhook-url",
        hook,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "PASS [JSONRPC 1.0] GetTask of an unknown id (CORE-GET-002): TaskNotFoundError"
        ),
        "{text}"
    );
    assert!(!text.contains("GRPC"), "{text}");
    assert_eq!(field(&text, "Failed"), "0");
}

/// A stub that serves a valid card (no streaming, no push) and answers every call
/// wrongly.
fn wrong_answer(request: &Value) -> Value {
    match request["method"].as_str().unwrap_or_default() {
        // A task without an id.
        "SendMessage" => stub_agent::result(
            request,
            json!({"task": {"id": "", "contextId": "", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ),
        // Any id is found.
        "GetTask" => stub_agent::result(
            request,
            json!({"id": request["params"]["id"], "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}),
        ),
        "CancelTask" => stub_agent::error(request, -32603, "internal"),
        "ListTasks" => stub_agent::result(request, json!({"tasks": "none"})),
        // Not a stream, and not refused either; push configs made though not offered.
        "SendStreamingMessage" => stub_agent::result(request, json!({})),
        "CreateTaskPushNotificationConfig" => stub_agent::result(
            request,
            json!({"id": "p1", "taskId": "t", "url": "http://h/x"}),
        ),
        // Unknown methods succeed.
        _ => stub_agent::result(request, json!({})),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_fails_against_an_agent_that_answers_wrongly() {
    let stub = stub_agent::start(
        json!({"streaming": false, "pushNotifications": false}),
        Arc::new(wrong_answer),
    )
    .await;
    let out = cli(&["conformance", &stub.base, "--timeout", "5s", "-o", "json"]);
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    let checks = verdicts(&report);
    let expected = [
        ("agent card [card]", "pass"),
        ("SendMessage [JSONRPC 1.0]", "fail"),
        ("GetTask [JSONRPC 1.0]", "skip"),
        ("GetTask of an unknown id [JSONRPC 1.0]", "fail"),
        ("CancelTask of an unknown id [JSONRPC 1.0]", "fail"),
        ("unknown method [JSONRPC 1.0]", "fail"),
        ("streaming refused [JSONRPC 1.0]", "fail"),
        ("ListTasks [JSONRPC 1.0]", "fail"),
        ("push config refused [JSONRPC 1.0]", "fail"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    assert_eq!(checks, expected, "{report:#}");
    assert_eq!(
        report["summary"],
        json!({"passed": 1, "failed": 7, "skipped": 1})
    );
    let reasons: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["reason"].as_str().unwrap())
        .collect();
    assert!(
        reasons.contains(&"the Task has no id; the Task has no contextId"),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&"expected TaskNotFoundError, the call succeeded"),
        "{reasons:?}"
    );
}
