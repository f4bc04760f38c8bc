//! Bridged agents (`kind = "a2a"`) against a real upstream: another Switchboard serving
//! the `bench` agent (echo, `hold`, `tick`), both as processes. What the bridge must do:
//! serve the upstream's card as its own, drive upstream tasks to their end (streamed),
//! forward cancels, fail a silent upstream, reject when the upstream is away, follow a
//! task again after kill -9 with each upstream event mirrored once, and follow the
//! upstream card's drift.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness

#[path = "support/metrics.rs"]
mod metrics;
#[path = "support/process.rs"]
mod process;

use std::time::Duration;

use process::{Reaped, Served, free_port, serve};
use serde_json::{Value, json};

const ADMIN: &str = "bridge-admin-token-0123456789";

/// The upstream: Switchboard serving `bench`, its registry writable with [`ADMIN`].
async fn upstream() -> (Served, String) {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/switchboard.toml");
    let args = ["--memory", "--config", config, "--admin-token", ADMIN];
    let served = serve(free_port(), &args).await;
    let base = served.base.clone();
    (served, base)
}

/// The bridge's configuration: `bridged` fronting `url`, with `upstream` settings.
fn bridge_config(dir: &tempfile::TempDir, url: &str, upstream: &str) -> String {
    let path = dir.path().join("bridge.toml");
    let toml = format!(
        "default_agent = \"bridged\"\n[[agents]]\nname = \"bridged\"\nkind = \"a2a\"\nurl = \"{url}\"\n[agents.upstream]\n{upstream}\n"
    );
    std::fs::write(&path, toml).unwrap();
    path.to_string_lossy().into_owned()
}

async fn bridge(port: u16, config: &str, data: &tempfile::TempDir) -> Served {
    let data = data.path().to_string_lossy().into_owned();
    serve(port, &["--config", config, "--data-dir", &data]).await
}

/// The bridged agent's JSON-RPC endpoint on the bridge at `base`.
fn bridged(base: &str) -> String {
    format!("{base}/agents/bridged/a2a")
}

/// Calls of `operation` the Switchboard at `base` answered, by its metrics.
async fn upstream_calls(base: &str, operation: &str) -> u64 {
    let text = metrics::text(base).await;
    let label = format!("operation=\"{operation}\"");
    text.lines()
        .filter(|l| l.starts_with("switchboard_requests_total{") && l.contains(&label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

async fn rpc(base: &str, method: &str, params: Value) -> Value {
    rpc_at(&bridged(base), method, params).await
}

/// A JSON-RPC 1.0 call to the agent endpoint `url`.
async fn rpc_at(url: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    reqwest::Client::new()
        .post(url)
        .header("A2A-Version", "1.0")
        .timeout(Duration::from_secs(30))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn message(text: &str, id: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

async fn send(base: &str, text: &str, id: &str, blocking: bool) -> Value {
    let params =
        json!({"message": message(text, id), "configuration": {"returnImmediately": !blocking}});
    let reply = rpc(base, "SendMessage", params).await;
    reply["result"]["task"].clone()
}

async fn get(url: &str, id: &str) -> Value {
    rpc_at(url, "GetTask", json!({"id": id})).await["result"].clone()
}

/// The JSON document at `url`.
async fn get_json(url: String) -> Value {
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

/// The text of a task's status message (a progress note, a question, a reason).
fn status_text(task: &Value) -> &str {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// Sends `text` without waiting, then waits (at most `secs`) for its task to be `state`.
async fn sent_until(base: &str, text: &str, id: &str, state: &str, secs: u64) -> Value {
    let task = send(base, text, id, false).await;
    until_state(base, task["id"].as_str().unwrap(), state, secs).await
}

/// The bridged agent's task once its state is `state` (at most `secs` seconds).
async fn until_state(base: &str, id: &str, state: &str, secs: u64) -> Value {
    until_state_at(&bridged(base), id, state, secs).await
}

/// The task of the agent at `url` once its state is `state` (at most `secs` seconds).
async fn until_state_at(url: &str, id: &str, state: &str, secs: u64) -> Value {
    for _ in 0..secs * 10 {
        let task = get(url, id).await;
        if task["status"]["state"] == state {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {id} never reached {state}: {}", get(url, id).await);
}

fn texts(task: &Value) -> Vec<String> {
    task["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["parts"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn a_bridged_agent_runs_upstream_tasks_to_their_end() {
    let (mut upstream, up) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let config = bridge_config(
        &dir,
        &format!("{up}/agents/bench"),
        "stall_timeout_secs = 2",
    );
    let port = free_port();
    let _bridge = bridge(port, &config, &dir).await;
    let base = format!("http://127.0.0.1:{port}");

    // The card is the upstream's description and skills, with Switchboard's interfaces.
    let upstream_card: Value =
        get_json(format!("{up}/agents/bench/.well-known/agent-card.json")).await;
    let card: Value = get_json(format!("{base}/agents/bridged/.well-known/agent-card.json")).await;
    assert_eq!(card["description"], upstream_card["description"], "{card}");
    assert_eq!(card["skills"], upstream_card["skills"], "{card}");
    assert!(
        card["supportedInterfaces"][0]["url"]
            .as_str()
            .unwrap()
            .starts_with(&base),
        "{card}"
    );

    // A blocking send: the upstream task's artifact and status, and the link. It goes
    // upstream as a blocking send too (one plain request), where a caller who follows
    // the task has it streamed.
    let (sends, streams) = (
        upstream_calls(&up, "SendMessage").await,
        upstream_calls(&up, "SendStreamingMessage").await,
    );
    let task = send(&base, "hello upstream", "m-echo", true).await;
    assert_eq!(upstream_calls(&up, "SendMessage").await, sends + 1);
    assert_eq!(upstream_calls(&up, "SendStreamingMessage").await, streams);
    let followed = sent_until(&base, "hello again", "m-echo-2", "TASK_STATE_COMPLETED", 10).await;
    assert_eq!(
        upstream_calls(&up, "SendStreamingMessage").await,
        streams + 1
    );
    assert_eq!(upstream_calls(&up, "SendMessage").await, sends + 1);
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "hello upstream",
        "{task}"
    );
    let link = &task["metadata"]["switchboard.bridge"];
    let upstream_id = link["upstreamTaskId"].as_str().unwrap();
    assert_eq!(link["outcome"], "completed", "{link}");
    assert_eq!(link["cardHash"].as_str().unwrap().len(), 64, "{link}");
    let bench = format!("{up}/agents/bench");

    // The next task of the same conversation is in the same conversation upstream; a
    // new conversation is a new one there.
    let in_context = json!({"message": {"messageId": "m-echo-ctx", "role": "ROLE_USER",
        "contextId": task["contextId"], "parts": [{"text": "same conversation"}]}});
    let next = rpc(&base, "SendMessage", in_context).await["result"]["task"].clone();
    assert_eq!(next["contextId"], task["contextId"], "{next}");
    let next_link = &next["metadata"]["switchboard.bridge"];
    let upstream_context = &link["upstreamContextId"];
    assert_eq!(&next_link["upstreamContextId"], upstream_context, "{next}");
    assert_ne!(next_link["upstreamTaskId"], link["upstreamTaskId"]);
    let upstream_next = get(&bench, next_link["upstreamTaskId"].as_str().unwrap()).await;
    assert_eq!(
        &upstream_next["contextId"], upstream_context,
        "{upstream_next}"
    );
    let other = &followed["metadata"]["switchboard.bridge"]["upstreamContextId"];
    assert!(other.is_string() && other != upstream_context, "{followed}");

    let upstream_task = get(&bench, upstream_id).await;
    assert_eq!(
        upstream_task["status"]["state"], "TASK_STATE_COMPLETED",
        "{upstream_task}"
    );

    // Progress mirrored in order: every tick once.
    let task = send(&base, "tick 5 50 0", "m-tick", true).await;
    let said = texts(
        &until_state(
            &base,
            task["id"].as_str().unwrap(),
            "TASK_STATE_COMPLETED",
            10,
        )
        .await,
    );
    assert_eq!(said.len(), 6, "{said:?}");
    assert!(said[1..].iter().all(|t| t.starts_with("t=")), "{said:?}");

    // A cancel here cancels upstream.
    let held = send(&base, "hold", "m-hold", false).await;
    let held_id = held["id"].as_str().unwrap();
    let working = until_state(&base, held_id, "TASK_STATE_WORKING", 10).await;
    let held_upstream = working["metadata"]["switchboard.bridge"]["upstreamTaskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let canceled = rpc(&base, "CancelTask", json!({"id": held_id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    until_state_at(&bench, &held_upstream, "TASK_STATE_CANCELED", 5).await;

    // An upstream silent past the stall timeout: canceled there, failed here.
    let failed = sent_until(&base, "hold", "m-silent", "TASK_STATE_FAILED", 15).await;
    let reason = status_text(&failed);
    assert!(
        reason.contains("no news") && reason.contains("it was canceled there"),
        "{reason}"
    );

    // The upstream killed mid-task: the stream breaks, nothing answers any more, and the
    // task fails once the stall timeout has passed with no news.
    let orphan = send(&base, "hold", "m-orphan", false).await;
    let orphan_id = orphan["id"].as_str().unwrap();
    until_state(&base, orphan_id, "TASK_STATE_WORKING", 10).await;
    upstream.kill();
    let failed = until_state(&base, orphan_id, "TASK_STATE_FAILED", 15).await;
    let reason = status_text(&failed);
    assert!(
        reason.contains("no news") && reason.contains("canceling it there failed too"),
        "{reason}"
    );
}

/// An upstream that answers a first message with a message only (the `conformance`
/// agent's `tck-message-response`): the caller gets that message, and no task is made;
/// an upstream that asks for input (`consolidate`): the question is the task's, and the
/// answer goes upstream to the same task, which completes.
#[tokio::test]
async fn a_message_reply_stays_a_message_and_an_input_request_round_trips() {
    let port = free_port();
    let _upstream = serve(port, &["--memory"]).await;
    let up = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bridge.toml");
    std::fs::write(
        &config,
        format!(
            "default_agent = \"says\"\n[[agents]]\nname = \"says\"\nkind = \"a2a\"\nurl = \"{up}/agents/conformance\"\n\
             [[agents]]\nname = \"asks\"\nkind = \"a2a\"\nurl = \"{up}/agents/consolidate\"\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let _bridge = bridge(port, config.to_str().unwrap(), &dir).await;
    let base = format!("http://127.0.0.1:{port}");

    let says = format!("{base}/agents/says/a2a");
    let params = json!({"message": message("hello", "tck-message-response-1")});
    let reply = rpc_at(&says, "SendMessage", params).await;
    let said = &reply["result"]["message"];
    assert_eq!(said["role"], "ROLE_AGENT", "{reply}");
    assert!(said["contextId"].is_string(), "{reply}");
    assert!(reply["result"].get("task").is_none(), "{reply}");
    let listed = rpc_at(&says, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");

    let asks = format!("{base}/agents/asks/a2a");
    let question = "the user is vegetarian\nthe user lives in Paris\nthe user ordered a steak";
    let params = json!({"message": message(question, "m-ask")});
    let asked = rpc_at(&asks, "SendMessage", params).await["result"]["task"].clone();
    assert_eq!(
        asked["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    let prompt = status_text(&asked);
    assert!(prompt.to_lowercase().contains("vegetarian"), "{prompt}");
    let upstream_id = asked["metadata"]["switchboard.bridge"]["upstreamTaskId"]
        .as_str()
        .unwrap()
        .to_owned();

    let answer = json!({
        "messageId": "m-answer",
        "role": "ROLE_USER",
        "taskId": asked["id"],
        "parts": [{"text": "Yes, the user is vegetarian; the steak was ordered for a friend."}],
    });
    let done =
        rpc_at(&asks, "SendMessage", json!({"message": answer})).await["result"]["task"].clone();
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let facts = done["artifacts"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(facts.to_lowercase().contains("paris"), "{facts}");
    // The answer went to the same upstream task, with its id.
    let upstream_task = get(&format!("{up}/agents/consolidate/a2a"), &upstream_id).await;
    assert_eq!(
        upstream_task["status"]["state"], "TASK_STATE_COMPLETED",
        "{upstream_task}"
    );
    let ids: Vec<&str> = upstream_task["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_USER")
        .map(|m| m["messageId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m-ask", "m-answer"], "{upstream_task}");
}

#[tokio::test]
async fn an_upstream_that_is_away_gets_messages_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let away = format!("http://127.0.0.1:{}", free_port());
    let config = bridge_config(&dir, &away, "call_timeout_secs = 2");
    let port = free_port();
    let _bridge = bridge(port, &config, &dir).await;
    let base = format!("http://127.0.0.1:{port}");
    let task = send(&base, "anyone?", "m-away", true).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED", "{task}");
    let reason = status_text(&task);
    assert!(reason.contains("a retry may help"), "{reason}");
    // The registry entry says why the card is not in use.
    let entry: Value = get_json(format!("{base}/registry/agents/bridged")).await;
    assert!(
        entry["upstream"]["refused"]
            .as_str()
            .is_some_and(|r| r.contains("cannot reach")),
        "{entry}"
    );
}

#[tokio::test]
async fn after_kill_9_a_bridged_task_is_followed_again_and_each_event_mirrored_once() {
    let (_upstream, up) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let config = bridge_config(&dir, &format!("{up}/agents/bench"), "");
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut first = bridge(port, &config, &dir).await;
    let task = send(&base, "tick 12 250 0", "m-long", false).await;
    let id = task["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    first.kill(); // SIGKILL
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let _second = bridge(port, &config, &dir).await;
    let done = until_state(&base, &id, "TASK_STATE_COMPLETED", 20).await;
    let said = texts(&done);
    let ticks: Vec<&String> = said.iter().filter(|t| t.starts_with("t=")).collect();
    assert_eq!(ticks.len(), 12, "every tick, once: {said:?}");
    let unique: std::collections::BTreeSet<&String> = ticks.iter().copied().collect();
    assert_eq!(unique.len(), 12, "{said:?}");
}

#[tokio::test]
async fn the_bridged_card_follows_the_upstream_card_and_its_drift_is_kept() {
    let (_upstream, up) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let config = bridge_config(&dir, &format!("{up}/agents/bench"), "card_refresh_secs = 1");
    let port = free_port();
    let _bridge = bridge(port, &config, &dir).await;
    let base = format!("http://127.0.0.1:{port}");
    let changed = json!({"name": "bench", "kind": "bench", "max_queued": 100000,
        "description": "The bench agent, redeployed",
        "skills": [{"id": "bench.v2", "name": "Bench v2", "description": "the new one"}]});
    let put = reqwest::Client::new()
        .put(format!("{up}/registry/agents/bench"))
        .bearer_auth(ADMIN)
        .json(&changed)
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "{}", put.text().await.unwrap());
    let mut card = Value::Null;
    for _ in 0..50 {
        card = get_json(format!("{base}/agents/bridged/.well-known/agent-card.json")).await;
        if card["description"] == "The bench agent, redeployed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(card["description"], "The bench agent, redeployed", "{card}");
    assert_eq!(card["skills"][0]["id"], "bench.v2", "{card}");
    let entry: Value = get_json(format!("{base}/registry/agents/bridged")).await;
    let last = entry["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["source"], "upstream", "{entry}");
    let note = last["note"].as_str().unwrap();
    assert!(
        note.contains("skills added") && note.contains("bench.v2"),
        "{note}"
    );
    let text = metrics::text(&base).await;
    let drift = metrics::value(
        &text,
        r#"switchboard_bridge_card_drift_total{agent="bridged"}"#,
    );
    assert_eq!(drift, 1.0, "{text}");
}

/// `bench/peers/run-{name}.sh` (an official SDK server running the bench agent's
/// contract) on a free port, once its card answers.
async fn sdk_peer(name: &str, args: &[&str]) -> (Reaped, String) {
    let port = free_port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/peers");
    let child = std::process::Command::new("bash")
        .arg(format!("{script}/run-{name}.sh"))
        .arg(port.to_string())
        .args(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let peer = Reaped(child);
    let base = format!("http://127.0.0.1:{port}");
    for _ in 0..300 {
        if reqwest::get(format!("{base}/.well-known/agent-card.json"))
            .await
            .is_ok()
        {
            return (peer, base);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the {name} peer did not answer (run bench/peers/setup.sh first)");
}

async fn bridges_an_sdk_server(name: &str) {
    let (_peer, up) = sdk_peer(name, &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = bridge_config(&dir, &up, "");
    let port = free_port();
    let _bridge = bridge(port, &config, &dir).await;
    let base = format!("http://127.0.0.1:{port}");
    let card: Value = get_json(format!("{base}/agents/bridged/.well-known/agent-card.json")).await;
    assert!(
        card["description"]
            .as_str()
            .unwrap()
            .contains("Benchmark peer"),
        "{name}: {card}"
    );

    let task = send(&base, "hello sdk", "m-sdk-echo", true).await;
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "{name}: {task}"
    );
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "hello sdk",
        "{name}: {task}"
    );

    let done = sent_until(
        &base,
        "tick 4 50 0",
        "m-sdk-tick",
        "TASK_STATE_COMPLETED",
        15,
    )
    .await;
    let ticks = texts(&done).iter().filter(|t| t.starts_with("t=")).count();
    assert_eq!(ticks, 4, "{name}: {done}");

    let held = send(&base, "hold", "m-sdk-hold", false).await;
    let held_id = held["id"].as_str().unwrap();
    until_state(&base, held_id, "TASK_STATE_WORKING", 10).await;
    let canceled = rpc(&base, "CancelTask", json!({"id": held_id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{name}: {canceled}"
    );
}

#[tokio::test]
#[ignore = "needs bench/peers/setup.sh; scripts/test.sh runs it"]
async fn the_python_sdk_server_is_bridged() {
    bridges_an_sdk_server("python").await;
}

#[tokio::test]
#[ignore = "needs bench/peers/setup.sh; scripts/test.sh runs it"]
async fn the_js_sdk_server_is_bridged() {
    bridges_an_sdk_server("js").await;
}

/// An upstream that does not stream but pushes (the Python SDK server with
/// `streaming: false`): the bridge registers a push config of its own on each upstream
/// task, and the notifications, with the task's token, wake the reads that mirror it.
#[tokio::test]
#[ignore = "needs bench/peers/setup.sh; scripts/test.sh runs it"]
async fn an_upstream_that_does_not_stream_is_followed_by_its_push_notifications() {
    let (_peer, up) = sdk_peer("python", &["--no-streaming"]).await;
    let dir = tempfile::tempdir().unwrap();
    let config = bridge_config(&dir, &up, "");
    let port = free_port();
    let _bridge = bridge(port, &config, &dir).await;
    let base = format!("http://127.0.0.1:{port}");

    let done = sent_until(
        &base,
        "tick 3 300 300",
        "m-push-tick",
        "TASK_STATE_COMPLETED",
        30,
    )
    .await;
    let link = &done["metadata"]["switchboard.bridge"];
    assert_eq!(link["followedBy"], "push", "{done}");
    assert_eq!(link["outcome"], "completed", "{done}");
    let text = metrics::text(&base).await;
    let received = metrics::value(
        &text,
        r#"switchboard_bridge_pushes_total{outcome="received"}"#,
    );
    assert!(received >= 3.0, "pushes received: {received}\n{text}");
    // A notification without the task's token wakes nothing.
    let forged = reqwest::Client::new()
        .post(format!("{base}/bridge/push/unknown"))
        .header("X-A2A-Notification-Token", "guess")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 404);
}

/// The upstream's card is signed (every Switchboard signs its cards), but not with the
/// keys the bridge was told to trust (another Switchboard's): the card is refused, the
/// reason in the registry entry, and messages are rejected; with the upstream's own keys
/// it is accepted and the entry names the key that signed it.
#[tokio::test]
async fn an_upstream_card_whose_signature_does_not_verify_is_refused() {
    let (_upstream, up) = upstream().await;
    let (_other, other) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let untrusted = format!("jwks_url = \"{other}/.well-known/jwks.json\"");
    let config = bridge_config(&dir, &format!("{up}/agents/bench"), &untrusted);
    let port = free_port();
    let bridge_process = bridge(port, &config, &dir).await;
    let base = format!("http://127.0.0.1:{port}");
    let entry: Value = get_json(format!("{base}/registry/agents/bridged")).await;
    let refused = entry["upstream"]["refused"].as_str().unwrap_or_default();
    assert!(refused.contains("does not verify"), "{entry}");
    let task = send(&base, "hello", "m-unverified", true).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED", "{task}");
    drop(bridge_process);

    let trusted = format!("jwks_url = \"{up}/.well-known/jwks.json\"");
    let config = bridge_config(&dir, &format!("{up}/agents/bench"), &trusted);
    let port = free_port();
    let data = tempfile::tempdir().unwrap();
    let _bridge = bridge(port, &config, &data).await;
    let base = format!("http://127.0.0.1:{port}");
    let entry: Value = get_json(format!("{base}/registry/agents/bridged")).await;
    assert!(entry["upstream"]["refused"].is_null(), "{entry}");
    assert!(entry["upstream"]["signedBy"].is_string(), "{entry}");
    let task = send(&base, "hello", "m-verified", true).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
}

/// A message the upstream took, whose task here is then refused (the caller is at its
/// limit of tasks in flight): the caller gets the refusal, and the upstream task the
/// open started is canceled rather than left running for nobody.
#[tokio::test]
async fn an_upstream_task_whose_task_here_was_refused_is_canceled() {
    let (_upstream, up) = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("limited.toml");
    let toml = format!(
        "max_tasks_in_flight_per_principal = 1\ndefault_agent = \"bridged\"\n[[agents]]\nname = \"bridged\"\nkind = \"a2a\"\nurl = \"{up}/agents/bench\"\n"
    );
    std::fs::write(&path, toml).unwrap();
    let port = free_port();
    let _bridge = bridge(port, path.to_str().unwrap(), &dir).await;
    let base = format!("http://127.0.0.1:{port}");
    let held = send(&base, "hold", "m-held", false).await;
    until_state(
        &base,
        held["id"].as_str().unwrap(),
        "TASK_STATE_WORKING",
        10,
    )
    .await;
    let params =
        json!({"message": message("hold", "m-over"), "configuration": {"returnImmediately": true}});
    let refused = rpc(&base, "SendMessage", params).await;
    assert!(refused.get("error").is_some(), "{refused}");

    let bench = format!("{up}/agents/bench");
    let mut states = Vec::new();
    for _ in 0..50 {
        let listed = rpc_at(&bench, "ListTasks", json!({})).await;
        states = listed["result"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["status"]["state"].as_str().unwrap().to_owned())
            .collect();
        if states.iter().any(|s| s == "TASK_STATE_CANCELED") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    states.sort();
    assert_eq!(
        states,
        ["TASK_STATE_CANCELED", "TASK_STATE_WORKING"],
        "the upstream's tasks"
    );
}

/// A bridged agent whose upstream is itself: every hop through the bridge adds one to
/// the message's delegation depth, so the loop ends at the cap, the innermost task
/// rejected with the reason and every outer one with it, instead of running forever.
#[tokio::test]
async fn a_loop_of_bridged_agents_ends_at_the_delegation_cap() {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loop.toml");
    let toml = format!(
        "max_delegation_depth = 3\ndefault_agent = \"bridged\"\n[[agents]]\nname = \"bridged\"\nkind = \"a2a\"\nurl = \"{base}/agents/bridged\"\n[agents.upstream]\ncard_refresh_secs = 1\ncall_timeout_secs = 2\n"
    );
    std::fs::write(&path, toml).unwrap();
    let _bridge = bridge(port, path.to_str().unwrap(), &dir).await;
    // Its own card is accepted once it serves (the first fetch, before it served, came
    // to nothing within the call timeout).
    let mut entry = Value::Null;
    for _ in 0..50 {
        entry = get_json(format!("{base}/registry/agents/bridged")).await;
        if entry["upstream"]["refused"].is_null() && entry["upstream"]["hash"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(entry["upstream"]["refused"].is_null(), "{entry}");

    let task = send(&base, "round and round", "m-loop", true).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED", "{task}");
    assert!(status_text(&task).contains("cap of 3"), "{task}");
    // The outermost task and the three it led to, depths 0 to 3; the fifth was refused.
    let listed = rpc(&base, "ListTasks", json!({})).await;
    let mut depths: Vec<u64> = listed["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["history"][0]["metadata"]["delegationDepth"]
                .as_u64()
                .unwrap_or(0)
        })
        .collect();
    depths.sort_unstable();
    assert_eq!(depths, [0, 1, 2, 3, 4], "{listed}");
}

/// An upstream that takes connections but never answers (its card fetch would wait for
/// the whole call timeout, 30 s by default) does not hold the start: the process serves
/// after a few seconds, and its card follows once the upstream answers.
#[tokio::test]
async fn an_upstream_that_never_answers_does_not_hold_the_start() {
    // Bound, never accepted from: connections queue in the backlog and get no answer.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let dir = tempfile::tempdir().unwrap();
    // A call timeout of two minutes: without the bound on the first fetch, the start
    // would wait for all of it.
    let config = bridge_config(&dir, &url, "call_timeout_secs = 120");
    let port = free_port();
    let started = std::time::Instant::now();
    let _bridge = bridge(port, &config, &dir).await;
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(60),
        "the start waited {waited:?}"
    );
    drop(silent);
}
