//! The `switchboard` client commands, run as the real binary against a real all-in-one
//! server: the consolidate story end to end (send, the question and the resume command,
//! answer, the facts artifact), exit statuses, the JSON shapes of the a2a-cli
//! specification's Appendix B, the text labels.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::process::{Command, Output};

use serde_json::Value;

#[path = "support/cli.rs"]
mod cli_support;
#[path = "support/process.rs"]
mod process;

use cli_support::{cli, cli_env, field, json, stderr, stdout};
use process::Served;

const STORY: &str = "the user is vegetarian\nthe user ordered a steak\nthe user likes cats";

/// The all-in-one with the built-in agents; `consolidate` pauses 100 ms per transcript.
async fn start() -> Served {
    start_with("", &[]).await
}

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// The same, with `consolidate_extra` in consolidate's definition and `args`.
async fn start_with(consolidate_extra: &str, args: &[&str]) -> Served {
    let config = format!(
        "[[agents]]\nname = \"consolidate\"\nkind = \"consolidate\"\npause_ms = 100\n\
         {consolidate_extra}\n\n[[agents]]\nname = \"echo\"\nkind = \"echo\"\n\n\
         [[agents]]\nname = \"conformance\"\nkind = \"conformance\"\n"
    );
    let mut all = vec!["--memory"];
    all.extend_from_slice(args);
    process::serve_config(&config, &all).await
}

#[tokio::test]
async fn the_consolidate_story_end_to_end_in_text() {
    let server = start().await;
    let agent = server.agent("consolidate");

    // send: blocks until the agent asks; the ids, the state, the question and the
    // command that answers it are printed.
    let out = cli(&["send", &agent, STORY]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let task_id = field(&text, "Task ID");
    let context_id = field(&text, "Context ID");
    assert_eq!(field(&text, "State"), "input-required");
    assert!(
        field(&text, "Status Message").contains("contradict"),
        "{text}"
    );
    let resume = field(&text, "Resume");
    assert!(
        resume.contains(&format!("--task-id {task_id}"))
            && resume.contains(&format!("--context-id {context_id}"))
            && resume.contains(&agent),
        "{resume}"
    );
    assert!(
        stderr(&out).contains(&format!("Warning: task {task_id} waits: input-required")),
        "{}",
        stderr(&out)
    );
    assert!(!text.contains('\u{1b}'), "no control sequences on stdout");

    // answer: the task completes with its facts.
    let out = cli(&["answer", &agent, &task_id, "the user is vegetarian"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(field(&text, "Task ID"), task_id);
    assert_eq!(field(&text, "Context ID"), context_id);
    assert_eq!(field(&text, "State"), "completed");
    let block = text
        .split("Artifact facts:\n")
        .nth(1)
        .expect("the facts block");
    let facts: Vec<&str> = block.lines().take_while(|l| !l.is_empty()).collect();
    assert_eq!(facts, ["- the user is vegetarian", "- the user likes cats"]);

    // get, by the spec's shape (-a and `task get`) and the short one: the artifact.
    let out = cli(&["task", "get", "-a", &agent, &task_id, "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let task = json(&out);
    assert_eq!(task["id"], task_id.as_str());
    assert_eq!(task["contextId"], context_id.as_str());
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifacts"][0]["name"], "facts");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"],
        "- the user is vegetarian\n- the user likes cats"
    );
    let out = cli(&["get", &agent, &task_id, "--history", "10"]);
    let text = stdout(&out);
    assert_eq!(field(&text, "State"), "completed");
    assert!(
        text.contains("History:\n[user] the user is vegetarian\nthe user ordered"),
        "{text}"
    );
    assert!(
        text.contains("[user] the user is vegetarian\n[agent] applying your answer"),
        "{text}"
    );
}

#[tokio::test]
async fn json_output_is_the_protocol_objects() {
    let server = start().await;
    let agent = server.agent("consolidate");

    // card: the AgentCard as served, whichever way the agent is named.
    for args in [
        vec!["card", agent.as_str(), "--json"],
        vec!["card", "get", "-a", agent.as_str(), "-o", "json"],
    ] {
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let card = json(&out);
        assert_eq!(card["name"], "consolidate");
        assert!(card["supportedInterfaces"].as_array().unwrap().len() >= 3);
    }
    let out = cli(&["card", &agent]);
    let text = stdout(&out);
    assert_eq!(field(&text, "Name"), "consolidate");
    assert_eq!(field(&text, "Streaming"), "yes");
    assert!(
        field(&text, "Interface").starts_with("JSONRPC 1.0 http://"),
        "{text}"
    );

    // send: one SendMessageResponse document, the task in it.
    let out = cli(&["send", "-a", &agent, "--text", STORY, "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let response = json(&out);
    let task = &response["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert!(response.get("message").is_none() && response.as_object().unwrap().len() == 1);
    let task_id = task["id"].as_str().unwrap().to_owned();

    // --stream: JSON Lines of StreamResponse, the first the task, the last the status
    // that leaves it waiting.
    let out = cli(&[
        "send",
        &agent,
        "--stream",
        "--json",
        "--task-id",
        &task_id,
        "vegetarian",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 2, "{lines:?}");
    assert!(lines[0].get("task").is_some(), "{}", lines[0]);
    let last = &lines[lines.len() - 1]["statusUpdate"];
    assert_eq!(last["taskId"], task_id.as_str());
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(lines.iter().any(|l| l.get("artifactUpdate").is_some()));

    // --async: the task at once, with its ids.
    let long = (1..=30)
        .map(|i| format!("fact number {i}\n"))
        .collect::<String>();
    let out = cli(&["send", &agent, "--async", "-o", "json", &long]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let running = json(&out)["task"].clone();
    let running_id = running["id"].as_str().unwrap().to_owned();
    assert!(running["contextId"].as_str().is_some_and(|c| !c.is_empty()));
    assert!(
        !running["status"]["state"]
            .as_str()
            .unwrap()
            .contains("COMPLETED")
    );

    // subscribe --stream: its events until it completes.
    let out = cli(&[
        "task",
        "subscribe",
        &agent,
        &running_id,
        "--stream",
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{text}"
    );

    // In text, each event names its stream id; --last-event-id resumes after one.
    let ids = |out: &Output| -> Vec<u64> {
        stdout(out)
            .lines()
            .filter_map(|l| l.strip_prefix("Event ID: "))
            .map(|id| id.parse().unwrap())
            .collect()
    };
    let out = cli(&["send", &agent, "--async", "-o", "json", &long]);
    let resumed_id = json(&out)["task"]["id"].as_str().unwrap().to_owned();
    let out = cli(&["subscribe", &agent, &resumed_id, "--stream"]);
    let all = ids(&out);
    assert!(all.len() > 4, "{}", stdout(&out));
    let after = all[2].to_string();
    let out = cli(&[
        "subscribe",
        &agent,
        &resumed_id,
        "--stream",
        "--last-event-id",
        &after,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(ids(&out), all[3..], "{}", stdout(&out));
    let text = stdout(&out);
    let last_event = text.trim_end().rsplit("\n\n").next().unwrap();
    assert_eq!(field(last_event, "State"), "completed", "{text}");

    // Subscribing to a task that ended, from the start, is the server's refusal.
    let out = cli(&["subscribe", &agent, &resumed_id, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "UnsupportedOperationError");

    // list: a ListTasksResponse, filtered by state and by context.
    let out = cli(&["list", &agent, "--state", "completed", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = json(&out);
    let ids: Vec<&str> = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&task_id.as_str()) && ids.contains(&running_id.as_str()),
        "{page}"
    );
    assert!(
        page["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"]["state"] == "TASK_STATE_COMPLETED")
    );
    let context = running["contextId"].as_str().unwrap();
    let out = cli(&[
        "task",
        "list",
        "-a",
        &agent,
        "--context-id",
        context,
        "-o",
        "json",
    ]);
    let page = json(&out);
    assert_eq!(page["tasks"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["tasks"][0]["id"], running_id.as_str());
    // paging: one task a page, all pages read with --all.
    let out = cli(&["list", &agent, "--page-size", "1", "-o", "json"]);
    let first = json(&out);
    assert_eq!(first["tasks"].as_array().unwrap().len(), 1);
    assert!(!first["nextPageToken"].as_str().unwrap().is_empty());
    let out = cli(&["list", &agent, "--page-size", "1", "--all", "-o", "json"]);
    assert!(json(&out)["tasks"].as_array().unwrap().len() >= 2);
    let out = cli(&["list", &agent, "--page-size", "1"]);
    assert!(!field(&stdout(&out), "Next Page Token").is_empty());

    // cancel: the task as it is left.
    let out = cli(&["send", &agent, "--async", "-o", "json", &long]);
    let id = json(&out)["task"]["id"].as_str().unwrap().to_owned();
    let out = cli(&["cancel", &agent, &id, "-o", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["status"]["state"], "TASK_STATE_CANCELED");
    // Idempotent; a task that completed is not cancelable.
    let out = cli(&["task", "cancel", "-a", &agent, &id]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(field(&stdout(&out), "State"), "canceled");
    let out = cli(&["task", "cancel", "-a", &agent, &task_id]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("(TaskNotCancelableError)"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn exit_statuses_are_the_documented_ones() {
    let server = start().await;
    let agent = server.agent("consolidate");

    // 2: usage, in text and as the JSON envelope.
    let out = cli(&["send"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("A2ACLI_ERR_USAGE"),
        "{}",
        stderr(&out)
    );
    let out = cli(&["send", &agent, "--no-such-flag", "-o", "json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json(&out)["error"]["code"], "A2ACLI_ERR_USAGE");
    let out = cli(&["send", &agent, "--media-type", "text/plain", "hi"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a --media-type with no part before it"
    );

    // 3: nothing listens there; no card at that path.
    let nowhere = format!("http://127.0.0.1:{}", process::free_port());
    let out = cli(&["send", &nowhere, "hi", "-o", "json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json(&out)["error"]["code"], "A2ACLI_ERR_UNREACHABLE");
    let out = cli(&["card", &server.agent("ghost"), "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json(&out)["error"]["code"], "A2ACLI_ERR_CARD_NOT_FOUND");

    // 1: a protocol error, by its A2A name; continuing an unknown task creates none.
    let out = cli(&["get", &agent, "no-such-task", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let error = &json(&out)["error"];
    assert_eq!(error["code"], "TaskNotFoundError");
    assert_eq!(error["a2aCode"], -32001);
    assert!(error["hint"].as_str().is_some());
    let out = cli(&["send", &agent, "--task-id", "no-such-task", "hello"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("Error: "), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("(TaskNotFoundError)\nHint: "),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());

    // 0 for any outcome the command reported; --exit-status: 7 waiting, 6 rejected.
    let out = cli(&["send", &agent, STORY, "--exit-status"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let out = cli(&["send", &agent, "   "]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(field(&stdout(&out), "State"), "rejected");
    assert!(stderr(&out).contains("ended rejected"), "{}", stderr(&out));
    let out = cli(&["send", &agent, "   ", "--exit-status", "--json"]);
    assert_eq!(out.status.code(), Some(6));
    assert_eq!(json(&out)["task"]["status"]["state"], "TASK_STATE_REJECTED");

    // The conformance agent: a task that fails (6), one that waits for auth (7), and a
    // direct reply with no task (0; one SendMessageResponse with `message`, or one
    // JSON line under --stream).
    let conformance = server.agent("conformance");
    let out = cli(&[
        "send",
        &conformance,
        "tck-task-failure now",
        "--exit-status",
    ]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(field(&stdout(&out), "State"), "failed");
    let out = cli(&[
        "send",
        &conformance,
        "tck-auth-required now",
        "--exit-status",
    ]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert_eq!(field(&stdout(&out), "State"), "auth-required");
    let out = cli(&["send", &conformance, "tck-message-response hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(field(&stdout(&out), "Role"), "agent");
    assert!(stdout(&out).contains("Message:\nDirect message response\n"));
    let out = cli(&["send", &conformance, "tck-message-response hi", "--json"]);
    assert_eq!(
        json(&out)["message"]["parts"][0]["text"],
        "Direct message response"
    );
    let out = cli(&[
        "send",
        &conformance,
        "tck-message-response hi",
        "--json",
        "--stream",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let streamed = stdout(&out);
    let lines: Vec<&str> = streamed.lines().collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line: Value = serde_json::from_str(lines[0]).unwrap();
    assert!(line.get("message").is_some(), "{line}");

    // 5: --timeout before the task ends (it goes on).
    let long = (1..=40).map(|i| format!("fact {i}\n")).collect::<String>();
    let out = cli(&["send", &agent, &long, "--timeout", "300ms", "-o", "json"]);
    assert_eq!(out.status.code(), Some(5), "{}", stdout(&out));
    assert_eq!(json(&out)["error"]["code"], "A2ACLI_ERR_TIMEOUT");

    // The table is in --help.
    let out = cli(&["--help"]);
    assert!(
        stdout(&out).contains("6  with --exit-status: the task ended failed, canceled or rejected")
    );
    // Completions: a script for the named shell, knowing the client commands.
    let out = cli(&["completion", "bash"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("complete") && stdout(&out).contains("subscribe"));
    assert_eq!(cli(&["completion", "tcsh"]).status.code(), Some(2));
    // And `health ADDR` is still the container check.
    let out = cli(&["health", server.base.trim_start_matches("http://")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[tokio::test]
async fn parts_keep_their_order_and_the_polling_path_waits() {
    let server = start().await;
    let echo = server.agent("echo");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("note.txt");
    std::fs::write(&file, "from a file").unwrap();
    let out = cli(&[
        "send",
        "-a",
        &echo,
        "--text",
        "first",
        "--data",
        r#"{"k": 1}"#,
        "--file",
        file.to_str().unwrap(),
        "--media-type",
        "text/x-note",
        "-o",
        "json",
        "--history",
        "1",
        "--metadata",
        r#"{"trace": "t1"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let task = &json(&out)["task"];
    let sent = &task["history"][0]["parts"];
    assert_eq!(sent[0]["text"], "first", "{task}");
    assert_eq!(sent[1]["data"]["k"], 1, "{task}");
    assert_eq!(sent[2]["filename"], "note.txt", "{task}");
    assert_eq!(sent[2]["mediaType"], "text/x-note", "{task}");
    // --verbose: every part with its kind, type and name, and the history.
    let id = task["id"].as_str().unwrap();
    let out = cli(&["get", &echo, id, "--verbose"]);
    let text = stdout(&out);
    assert!(
        text.contains("History:\n[user] [text]\nfirst\n[data]\n{"),
        "{text}"
    );
    assert!(
        text.contains(
            "[file (inline), text/x-note, note.txt]\n[file note.txt, text/x-note, 11 bytes]"
        ),
        "{text}"
    );

    // Every binding, by the caller's preference, and A2A 0.3 when asked for.
    for transport in [
        &["--transport", "GRPC"][..],
        &["--transport", "HTTP+JSON"],
        &["--transport", "JSONRPC"],
        &["--a2a-version", "0.3"],
    ] {
        let out = cli(&[&["send", &echo, "hello", "-o", "json"][..], transport].concat());
        assert_eq!(
            out.status.code(),
            Some(0),
            "{transport:?}: {}",
            stderr(&out)
        );
        assert_eq!(
            json(&out)["task"]["status"]["state"],
            "TASK_STATE_COMPLETED",
            "{transport:?}"
        );
    }
    let out = cli(&["send", &echo, "hello", "--transport", "SMOKE-SIGNALS"]);
    assert_eq!(out.status.code(), Some(2));
    let out = cli(&["-v"]);
    assert!(stdout(&out).starts_with("switchboard "), "{}", stdout(&out));

    // A card file (`file://` or a path) for an agent that does not stream: the task is
    // polled; --stream still gives JSON Lines, each a changed Task, the last completed.
    let out = cli(&["card", &server.agent("consolidate"), "-o", "json"]);
    let mut card = json(&out);
    card["capabilities"]["streaming"] = Value::Bool(false);
    let card_file = dir.path().join("card.json");
    std::fs::write(&card_file, card.to_string()).unwrap();
    let card_path = card_file.to_str().unwrap();
    let out = cli(&[
        "send",
        "-a",
        card_path,
        "--stream",
        "-o",
        "json",
        "--poll-interval",
        "50ms",
        "--text",
        "a\nb\nc",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not stream"), "{}", stderr(&out));
    let snapshots: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["task"].clone())
        .collect();
    assert!(snapshots.len() >= 2, "{snapshots:?}");
    assert!(
        snapshots.windows(2).all(|w| w[0] != w[1]),
        "each line a change"
    );
    let last = &snapshots[snapshots.len() - 1];
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED", "{last}");
    let file_url = format!("file://{card_path}");
    let out = cli(&["send", "-a", &file_url, "--poll-interval", "50ms", "x\ny"]);
    assert_eq!(
        field(&stdout(&out), "State"),
        "completed",
        "{}",
        stderr(&out)
    );

    // get --wait polls (any interval) until the task ends.
    let agent = server.agent("consolidate");
    let out = cli(&["send", &agent, "--async", "-o", "json", "a\nb\nc\nd\ne"]);
    let id = json(&out)["task"]["id"].as_str().unwrap().to_owned();
    let out = cli(&[
        "task",
        "get",
        &agent,
        &id,
        "--wait",
        "--poll-interval",
        "100ms",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(field(&stdout(&out), "State"), "completed");
}

#[tokio::test]
async fn push_configs_and_a_receiver_that_checks_signatures() {
    let secret_line = format!("webhook_secret = \"{SECRET}\"");
    let server = start_with(&secret_line, &["--webhook-allow", "127.0.0.1/32"]).await;
    let agent = server.agent("consolidate");
    let port = process::free_port();
    let port_text = port.to_string();
    let receiver = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["push", "receive", "--port", &port_text, "--secret", SECRET])
        .args(["--count", "2", "-o", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let long = (1..=20).map(|i| format!("fact {i}\n")).collect::<String>();
    let out = cli(&["send", &agent, "--async", "-o", "json", &long]);
    let task_id = json(&out)["task"]["id"].as_str().unwrap().to_owned();
    let url = format!("http://127.0.0.1:{port}/hook");
    let out = cli(&[
        "push", "create", &agent, &task_id, "--url", &url, "-o", "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let config = json(&out);
    assert_eq!(config["url"], url.as_str());
    let config_id = config["id"].as_str().unwrap().to_owned();

    // The receiver prints the first two deliveries (StreamResponse JSON lines), each
    // signature verified, then exits 0.
    let received = tokio::task::spawn_blocking(move || receiver.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(received.status.code(), Some(0), "{}", stderr(&received));
    let lines: Vec<Value> = stdout(&received)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines
            .iter()
            .all(|l| l["statusUpdate"]["taskId"] == task_id.as_str())
    );

    // get, list, delete (also as `task push-config`).
    let out = cli(&["push", "get", &agent, &task_id, &config_id, "-o", "json"]);
    assert_eq!(json(&out)["id"], config_id.as_str());
    let out = cli(&[
        "task",
        "push-config",
        "list",
        "-a",
        &agent,
        &task_id,
        "-o",
        "json",
    ]);
    assert_eq!(json(&out)["configs"].as_array().unwrap().len(), 1);
    let out = cli(&["push", "delete", &agent, &task_id, &config_id]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("Deleted: "));
    let out = cli(&["push", "list", &agent, &task_id]);
    assert_eq!(field(&stdout(&out), "Configs"), "0");

    // A delivery whose signature does not verify is refused, reported, and fails the
    // receiver.
    let port = process::free_port();
    let port_text = port.to_string();
    let receiver = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args([
            "push", "receive", "--port", &port_text, "--secret", SECRET, "--count", "1",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut refused = None;
    for _ in 0..100 {
        let forged = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{port}/hook"))
            .header("webhook-id", "forged-1")
            .header("webhook-timestamp", "1700000000")
            .header("webhook-signature", "v1,bm90IGEgc2lnbmF0dXJl")
            .body(r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}"#)
            .send()
            .await;
        if let Ok(response) = forged {
            refused = Some(response.status().as_u16());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(refused, Some(401));
    let received = tokio::task::spawn_blocking(move || receiver.wait_with_output().unwrap())
        .await
        .unwrap();
    assert_eq!(received.status.code(), Some(1));
    let text = stdout(&received);
    assert_eq!(field(&text, "Delivery"), "forged-1");
    assert_eq!(field(&text, "Signature"), "invalid");
}

#[tokio::test]
async fn the_switchboard_commands_agents_inbox_and_health() {
    const ADMIN: &str = "cli-admin-token-0123456789";
    let server = start_with("", &["--admin-token", ADMIN]).await;
    let url = ["--url", server.base.as_str()];
    let admin = ["--token", ADMIN];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("memo.toml");
    std::fs::write(
        &file,
        "[[agents]]\nname = \"memo\"\nkind = \"consolidate\"\n\
         description = \"Consolidates our support transcripts\"\npause_ms = 10\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();

    // register: refused without the admin token (exit 4), then created.
    let out = cli(&[&["agents", "register", file][..], &url].concat());
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("A2ACLI_ERR_CREDENTIALS_MISSING"));
    let out = cli(&[
        &["agents", "register", file, "-o", "json"][..],
        &url,
        &admin,
    ]
    .concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["name"], "memo");

    // list and search.
    let out = cli(&[&["agents", "list", "-o", "json"][..], &url].concat());
    let names: Vec<String> = json(&out)["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"memo".to_owned()) && names.contains(&"echo".to_owned()));
    let out = cli(&[&["agents", "list", "-q", "support transcripts"][..], &url].concat());
    let text = stdout(&out);
    assert_eq!(field(&text, "Name"), "memo", "{text}");
    assert_eq!(field(&text, "Agents"), "1");

    // The new agent asks; the inbox shows it and answers it.
    let memo = server.agent("memo");
    let out = cli(&["send", &memo, STORY, "-o", "json"]);
    let task_id = json(&out)["task"]["id"].as_str().unwrap().to_owned();
    let out = cli(&[&["inbox"][..], &url, &admin].concat());
    let text = stdout(&out);
    assert_eq!(field(&text, "Task ID"), task_id);
    assert_eq!(field(&text, "Agent"), "memo");
    assert!(field(&text, "Question").contains("contradict"), "{text}");
    let answer = [
        "inbox",
        "answer",
        &task_id,
        "the user is vegetarian",
        "--wait",
        "-o",
        "json",
    ];
    let out = cli(&[&answer[..], &url, &admin].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let task = json(&out);
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifacts"][0]["name"], "facts");
    let out = cli(&[&["inbox", "list", "-o", "json"][..], &url, &admin].concat());
    assert_eq!(json(&out)["tasks"].as_array().unwrap().len(), 0);

    // health URL: the fleet table (and the report in JSON).
    let out = cli(&["health", &server.base, "--token", ADMIN]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("Window: 1h\nAGENT"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("memo ")), "{text}");
    let out = cli(&[
        "health",
        &server.base,
        "--token",
        ADMIN,
        "--window",
        "1h",
        "--json",
    ]);
    assert!(json(&out)["windows"]["1h"]["agents"].is_array());

    // remove; a second time it is not found.
    let out = cli(&[&["agents", "remove", "memo"][..], &url, &admin].concat());
    assert_eq!(stdout(&out), "Removed: memo\n");
    let out = cli(&[&["agents", "remove", "memo", "--json"][..], &url, &admin].concat());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "SWITCHBOARD_NOT_FOUND");
}

#[tokio::test]
async fn credentials_by_flag_or_environment_placed_as_the_card_says() {
    const TOKEN: &str = "tok-alice-0123456789";
    const KEY: &str = "k-ci-0123456789";
    let keyed = format!(
        "[agents.auth]\napi_keys = {{ header = \"X-Key\", keys = [{{ principal = \"ci\", key = \"{KEY}\" }}] }}"
    );
    let server = start_with(&keyed, &["--auth-token", &format!("alice={TOKEN}")]).await;
    let echo = server.agent("echo");
    let consolidate = server.agent("consolidate");

    let out = cli_env(&["send", &echo, "hi", "--json"], &[]);
    assert_eq!(out.status.code(), Some(4), "{}", stdout(&out));
    assert_eq!(
        json(&out)["error"]["code"],
        "A2ACLI_ERR_CREDENTIALS_MISSING"
    );
    let out = cli_env(
        &[
            "send",
            &echo,
            "hi",
            "--json",
            "--bearer",
            "wrong-token-000000",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(4), "{}", stdout(&out));
    assert_eq!(json(&out)["error"]["code"], "A2ACLI_ERR_AUTH_FAILED");

    // The same token by flag (and its --token alias) or by either variable.
    for (args, envs) in [
        (vec!["--bearer", TOKEN], vec![]),
        (vec!["--token", TOKEN], vec![]),
        (vec![], vec![("A2ACLI_BEARER", TOKEN)]),
        (vec![], vec![("SWITCHBOARD_TOKEN", TOKEN)]),
    ] {
        let out = cli_env(
            &[&["send", &echo, "hi", "--json"][..], &args].concat(),
            &envs,
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?} {envs:?}: {}",
            stdout(&out)
        );
        assert_eq!(
            json(&out)["task"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
    }
    // An API key goes in the header the card's scheme names (X-Key).
    let out = cli_env(&["card", &consolidate], &[]);
    assert!(
        stdout(&out).contains("API key in header X-Key"),
        "{}",
        stdout(&out)
    );
    let out = cli_env(
        &["send", &consolidate, "a\nb", "--json"],
        &[("A2ACLI_API_KEY", KEY)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // Never printed: not by --debug, not by --help (which names the variables).
    let out = cli_env(
        &["send", &echo, "hi", "--debug"],
        &[("A2ACLI_BEARER", TOKEN)],
    );
    assert_eq!(out.status.code(), Some(0));
    let logged = stderr(&out);
    assert!(
        logged.contains("interface chosen") && logged.contains("authorization"),
        "{logged}"
    );
    assert!(
        !logged.contains(TOKEN) && !stdout(&out).contains(TOKEN),
        "{logged}"
    );
    let out = cli_env(&["send", "--help"], &[("A2ACLI_BEARER", TOKEN)]);
    let help = stdout(&out);
    assert!(
        help.contains("A2ACLI_BEARER") && !help.contains(TOKEN),
        "{help}"
    );
}
