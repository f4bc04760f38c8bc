//! The `switchboard` CLI against an official A2A SDK server directly (no Switchboard in
//! between): the consolidate agent of `tests/interop/upstreams/python/upstream.py`, on
//! a2a-sdk 1.3.0 (A2A 1.0, JSON-RPC and HTTP+JSON). The card, the story through its
//! question (send, the resume command, answer), the artifact by `get`, a streamed send.
//!
//! Needs the upstream venv as `tests/interop/bridged.sh` installs it
//! (`${XDG_CACHE_HOME:-~/.cache}/switchboard-interop/upstream-venv`), so it runs apart:
//! `cargo test -p switchboard --test cli_sdk_server -- --ignored` (scripts/test.sh does,
//! after bridged.sh).

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

#[path = "support/cli.rs"]
mod cli_support;
#[path = "support/process.rs"]
mod process;

use cli_support::{cli, field, json, stdout};
use process::Reaped;

struct Upstream {
    process: Reaped,
    base: String,
}

/// The Python SDK's consolidate on a free port, once its card answers.
async fn python_consolidate() -> Upstream {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    let python = cache.join("switchboard-interop/upstream-venv/bin/python");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/interop/upstreams/python/upstream.py");
    let port = process::free_port();
    let child = Command::new(python)
        .arg(script)
        .args(["--agent", "consolidate", "--port", &port.to_string()])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("cannot start the Python upstream (is its venv installed?): {e}")
        });
    let mut upstream = Upstream {
        process: Reaped(child),
        base: format!("http://127.0.0.1:{port}"),
    };
    let card = format!("{}/.well-known/agent-card.json", upstream.base);
    for _ in 0..300 {
        if let Ok(Some(status)) = upstream.process.0.try_wait() {
            panic!("the Python upstream exited ({status}); is it installed?");
        }
        if reqwest::get(&card)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return upstream;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the Python upstream did not answer at {card} within 30 s");
}

#[tokio::test]
#[ignore = "needs the upstream venv (tests/interop/bridged.sh installs it)"]
async fn the_cli_drives_the_story_on_the_python_sdk_server() {
    let upstream = python_consolidate().await;
    let agent = upstream.base.as_str();

    let out = cli(&["card", agent]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(field(&stdout(&out), "Streaming"), "yes");

    for transport in ["JSONRPC", "HTTP+JSON"] {
        let story = "the user is vegetarian\nthe user ordered a steak";
        let out = cli(&["send", agent, story, "--transport", transport]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{transport}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let shown = stdout(&out);
        assert_eq!(field(&shown, "State"), "input-required", "{transport}");
        let task_id = field(&shown, "Task ID");
        assert!(field(&shown, "Resume").contains(&format!("--task-id {task_id}")));

        let out = cli(&[
            "answer",
            agent,
            &task_id,
            "the user is vegetarian",
            "--transport",
            transport,
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{transport}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(field(&stdout(&out), "State"), "completed", "{transport}");

        let out = cli(&[
            "task",
            "get",
            "-a",
            agent,
            &task_id,
            "-o",
            "json",
            "--transport",
            transport,
        ]);
        let task = json(&out);
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
        let facts = task["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "facts")
            .unwrap_or_else(|| panic!("no facts artifact: {task}"));
        assert_eq!(
            facts["parts"][0]["text"], "- the user is vegetarian",
            "{transport}"
        );
    }

    // A streamed send: JSON Lines, the task first, the completion last.
    let out = cli(&["send", agent, "a\nb", "--stream", "-o", "json"]);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines[0].get("task").is_some(), "{lines:?}");
    let last = &lines[lines.len() - 1];
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{lines:?}"
    );

    // An unknown task: the SDK's TaskNotFoundError, exit 1.
    let out = cli(&["get", agent, "no-such-task", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "TaskNotFoundError");
}

/// `conformance` and `card get --validate` against an agent that is not Switchboard:
/// every check the SDK server is expected to pass passes, and the card is valid
/// against the A2A 1.0 schema.
#[tokio::test]
#[ignore = "needs the upstream venv (tests/interop/bridged.sh installs it)"]
async fn conformance_and_the_card_schema_pass_on_the_python_sdk_server() {
    let upstream = python_consolidate().await;
    let out = cli(&["card", "get", &upstream.base, "--validate", "-o", "json"]);
    let report = json(&out);
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(report["valid"], true, "{report:#}");

    let out = cli(&[
        "conformance",
        &upstream.base,
        "--timeout",
        "20s",
        "-o",
        "json",
    ]);
    let report = json(&out);
    assert_eq!(report["summary"]["failed"], 0, "{report:#}");
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    let passed = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "pass")
        .count();
    assert!(passed >= 8, "{report:#}");
}
