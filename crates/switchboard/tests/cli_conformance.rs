//! Checking cards and agents, run as the real binary: `card get --validate` against
//! the A2A JSON Schemas, and `conformance` against Switchboard's own agents (it passes)
//! and against a stub agent that answers wrongly (it fails, check by check).

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

use all_in_one::{card_file, start, start_with};
use cli_support::{cli, field, json, stderr, stdout};

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

#[tokio::test]
async fn a_webhook_url_the_agent_refuses_skips_the_push_check_saying_why() {
    // No --webhook-allow: the server refuses a loopback webhook when it is registered.
    let server = start_with(&[]).await;
    let agent = server.agent("echo");
    let out = cli(&[
        "conformance",
        &agent,
        "--transport",
        "JSONRPC",
        "--webhook-url",
        "http://127.0.0.1:9/hook",
        "-o",
        "json",
    ]);
    let report = json(&out);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "push config lifecycle")
        .unwrap();
    assert_eq!(check["verdict"], "skip", "{check:#}");
    let reason = check["reason"].as_str().unwrap();
    assert!(
        reason.contains("refused the webhook URL http://127.0.0.1:9/hook")
            && reason.contains("--webhook-url"),
        "{reason}"
    );
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
