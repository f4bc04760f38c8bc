//! Ceremonies in the split deployment (real processes, real Redis): a ceremony every
//! minute fires exactly once a minute for five minutes across two gateway replicas,
//! one of them killed (kill -9) after the first firing and started again a minute
//! later. Counted on the target agent (its tasks owned by `ceremony:tick`, by the
//! firing they say they are for) and in the ceremony's runs, which must agree: a double
//! fire, a lost minute or a run kept without its task fails it.
//!
//! Long (about six minutes: it waits for five minutes of cron), and the only slow
//! thing in it; so it is ignored by a plain `cargo test`, and `scripts/test.sh` runs it
//! (`-- --ignored`) in the background while the interop stages run.

#![allow(clippy::unwrap_used)] // test harness

#[path = "support/cluster.rs"]
mod cluster;

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Duration as Span, DurationRound, Utc};
use cluster::{ADMIN_TOKEN, Cluster, ONE_AT_A_TIME};
use serde_json::{Value, json};

/// The target, readable by the test as the ceremony's principal.
const TICKER: &str = r#"
[[agents]]
name = "ticker"
kind = "bench"
auth = { bearer = [{ principal = "ceremony:tick", token = "tick-reader-token-0123456789" }] }
"#;

const FIRINGS: i32 = 5;

async fn api(base: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let client = reqwest::Client::new();
    let url = format!("{base}/api/ceremonies{path}");
    let mut request = match method {
        "GET" => client.get(url),
        _ => client.post(url),
    };
    request = request.header("X-API-Key", ADMIN_TOKEN);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn sleep_until(at: DateTime<Utc>) {
    let left = (at - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(left).await;
}

/// The tasks on `ticker` of the ceremony, by the firing each says it is for.
async fn tasks_by_firing(base: &str) -> BTreeMap<String, Vec<Value>> {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 100}});
    let reply: Value = reqwest::Client::new()
        .post(format!("{base}/agents/ticker/a2a"))
        .header("A2A-Version", "1.0")
        .bearer_auth("tick-reader-token-0123456789")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(reply.get("error").is_none(), "{reply}");
    let mut by_firing: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for task in reply["result"]["tasks"].as_array().unwrap() {
        assert_eq!(task["metadata"]["ceremony"], "tick", "{task}");
        assert_eq!(task["metadata"]["skillHint"], "tick.report", "{task}");
        let firing = task["metadata"]["scheduledFor"].as_str().unwrap();
        let firing = DateTime::parse_from_rfc3339(firing)
            .unwrap()
            .with_timezone(&Utc);
        by_firing
            .entry(firing.to_rfc3339())
            .or_default()
            .push(task.clone());
    }
    by_firing
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes of waiting for cron: scripts/test.sh runs it alongside the interop stages"]
async fn a_ceremony_every_minute_fires_once_a_minute_across_two_gateways_one_killed_and_restarted()
{
    let _one = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up_configured(TICKER, &[]);
    let gateways = cluster.pids("gateway");
    assert_eq!(gateways.len(), 2, "two gateway replicas");

    // Made away from a minute's turn, so the first firing is the next minute's.
    if Utc::now().timestamp() % 60 >= 55 {
        tokio::time::sleep(Duration::from_secs(7)).await;
    }
    let tick = json!({
        "id": "tick", "name": "Tick", "schedule": "* * * * *", "skill": "tick.report",
        "targets": ["ticker"], "message": "finish completed 10"
    });
    let (status, made) = api(&cluster.gateway(0), "POST", "/create", Some(tick)).await;
    assert_eq!(status, 201, "{made}");
    let made_at = Utc::now();
    let (status, read) = api(&cluster.gateway(1), "GET", "/tick", None).await;
    assert_eq!(
        status, 200,
        "the other replica reads it from the shared store: {read}"
    );
    let first = made_at.duration_trunc(Span::minutes(1)).unwrap() + Span::minutes(1);
    let minutes: Vec<DateTime<Utc>> = (0..FIRINGS)
        .map(|i| first + Span::minutes(i.into()))
        .collect();

    // One replica dies 20 s after the second firing and is back 20 s after the third:
    // the survivor fires the third alone, the returned one must not fire anything again.
    sleep_until(minutes[1] + Span::seconds(20)).await;
    cluster::kill_9(gateways[0]);
    sleep_until(minutes[2] + Span::seconds(20)).await;
    cluster.run(&["start", "gateway"]);
    assert_eq!(cluster.pids("gateway").len(), 2, "restarted");

    // Past the last firing, long enough for its task to complete and be noted.
    sleep_until(minutes[4] + Span::seconds(15)).await;
    let base = cluster.gateway(0);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let runs = loop {
        let (status, runs) = api(&base, "GET", "/tick/runs", None).await;
        assert_eq!(status, 200, "{runs}");
        let runs: Vec<Value> = runs["runs"].as_array().unwrap().clone();
        let settled = runs
            .iter()
            .all(|r| r["tasks"][0]["state"] == "TASK_STATE_COMPLETED");
        if settled || tokio::time::Instant::now() > deadline {
            break runs;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };

    let wanted: Vec<String> = minutes.iter().map(DateTime::to_rfc3339).collect();
    let mut fired: Vec<String> = runs
        .iter()
        .map(|r| {
            let at = DateTime::parse_from_rfc3339(r["scheduledFor"].as_str().unwrap()).unwrap();
            at.with_timezone(&Utc).to_rfc3339()
        })
        .collect();
    fired.reverse();
    assert_eq!(
        fired, wanted,
        "one run a minute, none missed, none twice: {runs:#?}"
    );
    for run in &runs {
        assert_eq!(run["trigger"], "schedule", "{run}");
        let tasks = run["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), 1, "{run}");
        assert_eq!(tasks[0]["state"], "TASK_STATE_COMPLETED", "{run}");
    }

    let on_target = tasks_by_firing(&base).await;
    let counted: Vec<(&String, usize)> = on_target.iter().map(|(at, t)| (at, t.len())).collect();
    let once: Vec<(&String, usize)> = wanted.iter().map(|at| (at, 1)).collect();
    assert_eq!(counted, once, "exactly one task a minute on the target");
    for run in &runs {
        let at = DateTime::parse_from_rfc3339(run["scheduledFor"].as_str().unwrap()).unwrap();
        let task = &on_target[&at.with_timezone(&Utc).to_rfc3339()][0];
        assert_eq!(
            run["tasks"][0]["taskId"], task["id"],
            "the run keeps the task made"
        );
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    }
}
