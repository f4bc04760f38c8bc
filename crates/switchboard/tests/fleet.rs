//! The fleet endpoints of the all-in-one over real HTTP. Fleet health: a drill of tasks with known outcomes,
//! then `/fleet/health` and `/metrics` compared with what the test counted itself; who
//! may see which agents; waits for a person past the threshold.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::time::Duration;

use serde_json::{Value, json};

#[path = "support/fleet_drill.rs"]
mod drill;
#[path = "support/process.rs"]
mod process;
#[path = "support/webhook_receiver.rs"]
mod webhook_receiver;

use process::Served;

const ADMIN: &str = "fleet-admin-token-0123456789";

async fn start(extra: &str) -> Served {
    let config = format!("default_agent = \"\"\n{extra}\n{}", drill::AGENTS);
    process::serve_config(&config, &["--memory", "--admin-token", ADMIN]).await
}

async fn health(base: &str, token: Option<&str>, query: &str) -> reqwest::Response {
    let mut request = reqwest::Client::new().get(format!("{base}/fleet/health{query}"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn fleet_health_and_metrics_match_the_outcomes_counted_by_the_test() {
    let server = start("").await;
    let plan = drill::plan();
    let expected = drill::run(std::slice::from_ref(&server.base), &plan, None).await;
    let total: u64 = expected.values().map(drill::Expected::count).sum();
    let report = drill::report_counting(&server.base, ADMIN, total).await;
    drill::check_report(&report, &expected, "all-in-one");
    let cost_per_success = report["windows"]["1h"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "summarizer")
        .unwrap()["costPerSuccessUsd"]
        .as_f64()
        .unwrap();
    let summarize = &expected[&("summarizer".to_owned(), "summarize".to_owned())];
    assert!((cost_per_success - summarize.cost_usd / summarize.completed as f64).abs() < 1e-9);
    // drafter fails half its tasks (below the 0.5 needed? no: exactly 0.5 is healthy).
    let healthy: Vec<(String, bool)> = report["windows"]["1h"]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["agent"].as_str().unwrap().to_owned(),
                a["healthy"].as_bool().unwrap(),
            )
        })
        .collect();
    assert!(healthy.iter().all(|(_, h)| *h), "{healthy:?}");

    let metrics = reqwest::get(format!("{}/metrics", server.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for ((agent, skill), wanted) in &expected {
        drill::check_metrics(std::slice::from_ref(&metrics), agent, skill, wanted);
    }
}

#[tokio::test]
async fn an_agent_failing_most_tasks_is_unhealthy_and_its_skill_unserved() {
    let server = start("[fleet.health]\nmin_outcomes = 3\nmin_success_rate = 0.75").await;
    let plan: Vec<drill::Planned> = drill::plan()
        .into_iter()
        .filter(|p| p.agent == "drafter")
        .collect();
    drill::run(std::slice::from_ref(&server.base), &plan, None).await;
    let report = drill::report_counting(&server.base, ADMIN, plan.len() as u64).await;
    let agents = report["windows"]["1h"]["agents"].as_array().unwrap();
    let drafter = agents.iter().find(|a| a["agent"] == "drafter").unwrap();
    assert_eq!(drafter["healthy"], false, "{drafter}");
    let summarizer = agents.iter().find(|a| a["agent"] == "summarizer").unwrap();
    assert_eq!(
        summarizer["healthy"], true,
        "no outcomes say nothing against it"
    );
    assert_eq!(report["policy"]["minSuccessRate"], 0.75, "{report}");
    // Both serve `bench` by their cards: one healthy agent is enough.
    assert_eq!(report["unservedSkills"], json!([]), "{report}");
}

#[tokio::test]
async fn each_caller_sees_the_agents_their_credentials_open() {
    let private = r#"
[[agents]]
name = "private"
kind = "bench"
[agents.auth]
bearer = [{ principal = "alice", token = "alice-token-0123456789" }]
"#;
    let server = start(private).await;
    let names = |report: &Value| -> Vec<String> {
        report["windows"]["1h"]["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["agent"].as_str().unwrap().to_owned())
            .collect()
    };
    let admin: Value = health(&server.base, Some(ADMIN), "")
        .await
        .json()
        .await
        .unwrap();
    assert!(names(&admin).contains(&"private".to_owned()), "{admin}");
    let anonymous: Value = health(&server.base, None, "").await.json().await.unwrap();
    assert!(
        !names(&anonymous).contains(&"private".to_owned()),
        "{anonymous}"
    );
    assert!(
        names(&anonymous).contains(&"summarizer".to_owned()),
        "open agents are seen"
    );
    let alice: Value = health(&server.base, Some("alice-token-0123456789"), "")
        .await
        .json()
        .await
        .unwrap();
    assert!(names(&alice).contains(&"private".to_owned()), "{alice}");

    let wrong = health(&server.base, None, "?window=7d").await;
    assert_eq!(wrong.status(), 400);
    let body: Value = wrong.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1h or 24h"),
        "{body}"
    );
    let day: Value = health(&server.base, Some(ADMIN), "?window=24h")
        .await
        .json()
        .await
        .unwrap();
    assert!(
        day["windows"].get("24h").is_some() && day["windows"].get("1h").is_none(),
        "{day}"
    );
}

#[tokio::test]
async fn a_task_waiting_for_a_person_too_long_is_reported() {
    let server = start("[fleet.health]\nwaiting_alert_secs = 1").await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "ask-1", "role": "ROLE_USER",
                    "parts": [{"text": "finish input-required 5 - which of the two is right?"}]}
    }});
    let reply: Value = reqwest::Client::new()
        .post(format!("{}/agents/drafter", server.base))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task = &reply["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{reply}"
    );
    let fresh: Value = health(&server.base, Some(ADMIN), "")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(fresh["waitingTooLong"], json!([]), "not yet: {fresh}");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let late: Value = health(&server.base, Some(ADMIN), "")
        .await
        .json()
        .await
        .unwrap();
    let waits = late["waitingTooLong"].as_array().unwrap();
    assert_eq!(waits.len(), 1, "{late}");
    assert_eq!(waits[0]["taskId"], task["id"]);
    assert_eq!(waits[0]["agent"], "drafter");
    assert!(waits[0]["waitingSecs"].as_u64().unwrap() >= 2, "{late}");
}

const TRANSCRIPTS: &str =
    "the user is vegetarian\nthe user lives in Paris\nthe user ordered a steak";

const PRIVATE_CONSOLIDATE: &str = r#"
[[agents]]
name = "memory"
kind = "consolidate"
pause_ms = 10
[agents.auth]
bearer = [
  { principal = "alice", token = "alice-token-0123456789" },
  { principal = "bob", token = "bob-token-0123456789abc" },
]
"#;

/// A blocking first message to `agent`, as `token`'s principal.
async fn ask(base: &str, agent: &str, text: &str, token: Option<&str>) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": format!("m-{}", text.len()), "role": "ROLE_USER", "parts": [{"text": text}]}
    }});
    let mut request = reqwest::Client::new()
        .post(format!("{base}/agents/{agent}"))
        .header("A2A-Version", "1.0")
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap().json().await.unwrap()
}

async fn inbox(base: &str, token: Option<&str>) -> Value {
    let mut request = reqwest::Client::new().get(format!("{base}/fleet/inbox"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap().json().await.unwrap()
}

async fn answer(base: &str, task_id: &str, body: Value, token: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("{base}/fleet/inbox/{task_id}/answer"))
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

fn listed_ids(inbox: &Value) -> Vec<String> {
    inbox["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{inbox}"))
        .iter()
        .map(|t| t["taskId"].as_str().unwrap().to_owned())
        .collect()
}

const INBOX_SECRET: &str = "an-inbox-secret-of-32-characters";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_lists_a_task_waiting_on_a_contradiction_and_its_answer_completes_it() {
    let (hook, received) = webhook_receiver::receiver().await;
    let inbox_hook = format!(
        "webhook_allow = [\"127.0.0.1/32\"]\n[fleet.inbox]\nwebhook_url = \"{hook}\"\nwebhook_secret = \"{INBOX_SECRET}\"\nwebhook_token = \"pager-token\"\n"
    );
    let server = start(&format!("{inbox_hook}{PRIVATE_CONSOLIDATE}")).await;
    let alice = Some("alice-token-0123456789");
    let reply = ask(&server.base, "memory", TRANSCRIPTS, alice).await;
    let task = &reply["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{reply}"
    );
    let task_id = task["id"].as_str().unwrap();

    let listed = inbox(&server.base, alice).await;
    assert_eq!(listed_ids(&listed), [task_id], "{listed}");
    let entry = &listed["tasks"][0];
    assert_eq!(entry["agent"], "memory");
    assert_eq!(entry["owner"], "alice");
    assert_eq!(entry["contextId"], task["contextId"]);
    assert_eq!(entry["state"], "TASK_STATE_INPUT_REQUIRED");
    assert!(
        entry["question"].as_str().unwrap().contains("vegetarian"),
        "{entry}"
    );
    let since = chrono::DateTime::parse_from_rfc3339(entry["since"].as_str().unwrap()).unwrap();
    let deadline =
        chrono::DateTime::parse_from_rfc3339(entry["deadline"].as_str().unwrap()).unwrap();
    assert_eq!(
        (deadline - since).num_seconds(),
        600,
        "the input timeout: {entry}"
    );
    assert_eq!(
        listed_ids(&inbox(&server.base, Some(ADMIN)).await),
        [task_id]
    );
    assert_eq!(
        listed_ids(&inbox(&server.base, Some("bob-token-0123456789abc")).await),
        Vec::<String>::new(),
        "bob sees only his own"
    );

    // The notification webhook announced the wait, signed.
    let (headers, body) = webhook_receiver::wait_for(&received, 1).await.remove(0);
    let header = |name: &str| headers[name].to_str().unwrap().to_owned();
    let expected = sb_webhooks::signing::sign(
        INBOX_SECRET.as_bytes(),
        &header("webhook-id"),
        &header("webhook-timestamp"),
        body.as_bytes(),
    );
    assert_eq!(header("webhook-signature"), expected);
    assert_eq!(header("authorization"), "Bearer pager-token");
    let notice: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(notice["type"], "inbox.waiting", "{notice}");
    assert_eq!(notice["taskId"], task_id);
    assert_eq!(notice["agent"], "memory");
    assert_eq!(notice["owner"], "alice");
    assert!(
        notice["question"].as_str().unwrap().contains("vegetarian"),
        "{notice}"
    );
    let answer_url = format!("{}/fleet/inbox/{task_id}/answer", server.base);
    assert_eq!(notice["answerUrl"], answer_url.as_str());

    let from_bob = answer(
        &server.base,
        task_id,
        json!({"text": "vegetarian"}),
        Some("bob-token-0123456789abc"),
    )
    .await;
    assert_eq!(from_bob.status(), 404, "not bob's to answer");
    let empty = answer(&server.base, task_id, json!({"text": "  "}), alice).await;
    assert_eq!(empty.status(), 400);
    let body: Value = empty.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"text\""),
        "{body}"
    );
    let unknown = answer(&server.base, task_id, json!({"txt": "x"}), alice).await;
    assert_eq!(unknown.status(), 400);

    let answered = answer(
        &server.base,
        task_id,
        json!({"text": "Yes, the user is vegetarian; the steak was ordered for a friend.", "wait": true}),
        alice,
    )
    .await;
    assert_eq!(answered.status(), 200);
    let answered: Value = answered.json().await.unwrap();
    assert_eq!(
        answered["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answered}"
    );
    let history = answered["task"]["history"].as_array().unwrap();
    let last_user = history
        .iter()
        .rev()
        .find(|m| m["role"] == "ROLE_USER")
        .unwrap();
    assert!(
        last_user["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("ordered for a friend")
    );

    assert_eq!(
        listed_ids(&inbox(&server.base, alice).await),
        Vec::<String>::new()
    );
    let again = answer(&server.base, task_id, json!({"text": "again"}), alice).await;
    assert_eq!(again.status(), 404, "answered already");
    assert_eq!(received.lock().unwrap().len(), 1, "one wait, one notice");
}

#[tokio::test]
async fn the_admin_answers_for_the_owner_without_credentials_of_the_agent() {
    let server = start(PRIVATE_CONSOLIDATE).await;
    let reply = ask(
        &server.base,
        "memory",
        TRANSCRIPTS,
        Some("bob-token-0123456789abc"),
    )
    .await;
    let task_id = reply["result"]["task"]["id"].as_str().unwrap().to_owned();
    let anonymous = reqwest::get(format!("{}/fleet/inbox", server.base))
        .await
        .unwrap();
    let body: Value = anonymous.json().await.unwrap();
    assert_eq!(
        listed_ids(&body),
        Vec::<String>::new(),
        "open agents only: {body}"
    );
    let answered = answer(
        &server.base,
        &task_id,
        json!({"data": {"choice": "vegetarian"}, "text": "the user is vegetarian", "wait": true}),
        Some(ADMIN),
    )
    .await;
    let answered: Value = answered.json().await.unwrap();
    assert_eq!(
        answered["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answered}"
    );
    // Still bob's task: he reads it, as its owner.
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}});
    let read: Value = reqwest::Client::new()
        .post(format!("{}/agents/memory", server.base))
        .header("A2A-Version", "1.0")
        .bearer_auth("bob-token-0123456789abc")
        .json(&get)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        read["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{read}"
    );
}
