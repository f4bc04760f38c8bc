//! The live registry of the split deployment, as real processes
//! (`scripts/local-cluster.sh`: Redis, 2 gateways, the registry service, …): an agent
//! registered through one gateway is served by the other within a second, survives a
//! restart of every process, is found by search, and is removed from both within a
//! second.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::zombie_processes)] // test harness; Drop reaps the children
#[path = "support/process.rs"]
mod process;
#[path = "support/cluster.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use process::Reaped;
use reqwest::StatusCode;
use serde_json::{Value, json};
use support::{ADMIN_TOKEN, Cluster, ONE_AT_A_TIME, message, raw_rpc, state, wait_for};

/// A definition whose card says everything, run by the echo kind's code.
fn notes() -> Value {
    json!({
        "kind": "echo",
        "description": "Keeps the team's notes",
        "skills": [
            {"id": "note.add", "name": "Add a note", "tags": ["notes"],
             "examples": ["remember to buy oat milk"]},
            {"id": "note.find", "name": "Find notes", "tags": ["search"]}
        ]
    })
}

async fn put(gateway: &str, name: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .put(format!("{gateway}/registry/agents/{name}"))
        .bearer_auth(ADMIN_TOKEN)
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn card_status(gateway: &str, agent: &str) -> StatusCode {
    reqwest::get(format!(
        "{gateway}/agents/{agent}/.well-known/agent-card.json"
    ))
    .await
    .unwrap()
    .status()
}

/// How long until `gateway` answers the card of `agent` with `wanted` (at most 10 s).
async fn until_card(gateway: &str, agent: &str, wanted: StatusCode) -> Duration {
    let started = Instant::now();
    while card_status(gateway, agent).await != wanted {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{gateway} never answered {wanted} for {agent}'s card"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.elapsed()
}

/// A `switchboard worker` serving the agents of `toml` for the cluster's task-state
/// service.
fn worker(cluster: &Cluster, toml: &str) -> Reaped {
    let config = cluster.dir.path().join("worker.toml");
    std::fs::write(&config, toml).unwrap();
    let tasks = format!("http://127.0.0.1:{}", cluster.ports("tasks")[0]);
    let child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["worker", "--tasks-url", &tasks])
        .arg("--config")
        .arg(&config)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Reaped(child)
}

fn names(found: &Value) -> Vec<String> {
    found["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_put_through_one_gateway_lives_on_every_gateway() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let (first, second) = (cluster.gateway(0), cluster.gateway(1));
    assert_eq!(card_status(&second, "notes").await, StatusCode::NOT_FOUND);

    assert_eq!(
        put(&first, "notes", &notes()).await.status(),
        StatusCode::CREATED
    );
    let seen = until_card(&second, "notes", StatusCode::OK).await;
    eprintln!("the other gateway served the new card after {seen:?}");
    assert!(
        seen < Duration::from_secs(1),
        "the other gateway served the card after {seen:?}"
    );
    let card: Value = reqwest::get(format!("{second}/agents/notes/.well-known/agent-card.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["description"], "Keeps the team's notes");
    assert_eq!(card["skills"].as_array().unwrap().len(), 2);
    assert!(
        !card["signatures"].as_array().unwrap().is_empty(),
        "signed by the registry service"
    );

    // The other gateway takes a message for it at once; a worker that runs it ends it.
    let params =
        json!({"message": message("hello notes"), "configuration": {"returnImmediately": true}});
    let sent = raw_rpc(&second, "notes", "SendMessage", params).await;
    let task_id = sent["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"))
        .to_owned();
    let mut runner = worker(
        &cluster,
        "default_agent = \"\"\n[[agents]]\nname = \"notes\"\nkind = \"echo\"\n",
    );
    let done = wait_for(&second, "notes", &task_id, 30, |t| {
        state(t) == "TASK_STATE_COMPLETED"
    })
    .await;
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "hello notes");
    runner.kill();

    // Search, on the other gateway: by skill, by tag, by a word of an example.
    for query in ["skill=note.find", "tag=notes", "q=oat"] {
        let found: Value = reqwest::get(format!("{second}/registry/agents?{query}"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(names(&found), ["notes"], "{query}");
    }

    // The registry service serves the same API on its own port.
    let registry = format!("http://127.0.0.1:{}", cluster.ports("registry")[0]);
    let entry: Value = reqwest::get(format!("{registry}/registry/agents/notes"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(entry["card"]["name"], "notes", "{entry}");
    assert_eq!(entry["source"], "api");

    // Invalid definitions are refused with the field named, through either gateway.
    let invalid = put(
        &second,
        "broken",
        &json!({"kind": "echo", "skills": [{"id": ""}]}),
    )
    .await;
    assert_eq!(invalid.status(), StatusCode::BAD_REQUEST);
    let error: Value = invalid.json().await.unwrap();
    assert_eq!(error["error"]["field"], "skills[0].id", "{error}");

    // Every process restarted, Redis from its AOF: still registered, with the same card.
    cluster.restart_all();
    let (first, second) = (cluster.gateway(0), cluster.gateway(1));
    for gateway in [&first, &second] {
        assert_eq!(card_status(gateway, "notes").await, StatusCode::OK);
    }

    // Removed through one gateway: gone from both within a second.
    let removed = reqwest::Client::new()
        .delete(format!("{second}/registry/agents/notes"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    for gateway in [&first, &second] {
        let gone = until_card(gateway, "notes", StatusCode::NOT_FOUND).await;
        eprintln!("{gateway} stopped serving the removed card after {gone:?}");
        assert!(gone < Duration::from_secs(1), "{gateway} after {gone:?}");
    }
    // Its task stays readable; new messages are refused.
    let task = raw_rpc(&first, "notes", "GetTask", json!({"id": task_id})).await;
    assert_eq!(task["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    let refused = raw_rpc(
        &first,
        "notes",
        "SendMessage",
        json!({"message": message("again")}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
}

/// A bridged agent registered through a gateway has its turns run: the cluster's worker
/// follows the registry service and starts a session for it (it is in no file). Its
/// upstream is another Switchboard's echo agent; removing the agent stops the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_agent_put_at_runtime_is_run_by_the_workers() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let gateway = cluster.gateway(0);
    let upstream_port = process::free_port();
    let mut upstream = process::serve(upstream_port, &["--memory"]).await;
    let url = format!("http://127.0.0.1:{upstream_port}/agents/echo");
    let definition = json!({"kind": "a2a", "url": url});
    assert_eq!(
        put(&gateway, "relay", &definition).await.status(),
        StatusCode::CREATED
    );
    until_card(&gateway, "relay", StatusCode::OK).await;

    let answer = raw_rpc(
        &gateway,
        "relay",
        "SendMessage",
        json!({"message": message("through the relay")}),
    )
    .await;
    let task = &answer["result"]["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["text"], "through the relay",
        "{answer}"
    );
    let worker_log = cluster.log("worker");
    assert!(
        worker_log.contains("bridged agent of the registry: worker session starts"),
        "{worker_log}"
    );

    let removed = reqwest::Client::new()
        .delete(format!("{gateway}/registry/agents/relay"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    let started = Instant::now();
    while !cluster.log("worker").contains("its worker session stops") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the worker kept the session of a removed agent"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    upstream.kill();
}
