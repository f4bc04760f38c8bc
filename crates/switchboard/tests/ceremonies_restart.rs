//! Ceremonies across a restart of the all-in-one (kill -9, the embedded store on disk):
//! a firing that came while the process was down, found past the catch-up grace, is
//! recorded as missed and announced, nothing is sent for it, and nothing fired before
//! the restart fires again.
//!
//! It waits for firings a minute apart, so a plain `cargo test` skips it and
//! `scripts/test.sh` runs it (`-- --ignored`) in the background while the interop
//! stages run.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

#[path = "support/ceremonies.rs"]
mod ceremonies;
#[path = "support/process.rs"]
mod process;
#[path = "support/webhook_receiver.rs"]
mod webhook_receiver;

use ceremonies::{ADMIN, Setup, call, check_signed, runs_until, start_with};

fn at(run: &Value) -> DateTime<Utc> {
    let at = DateTime::parse_from_rfc3339(run["scheduledFor"].as_str().unwrap()).unwrap();
    at.with_timezone(&Utc)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes of waiting for cron: scripts/test.sh runs it alongside the interop stages"]
async fn a_firing_missed_while_down_past_the_grace_is_recorded_as_missed_and_none_fires_twice() {
    let (hook, received) = webhook_receiver::receiver().await;
    let mut server = start_with(Setup {
        ceremonies: "catch_up_grace_secs = 5",
        durable: true,
        ..Setup::default()
    })
    .await;
    let tick = json!({
        "id": "tick", "name": "Tick", "schedule": "* * * * *", "skill": "summarize",
        "targets": ["quinn"], "message": "finish completed 10", "notifyChannel": hook
    });
    let (status, made) = call(&server.base, "POST", "/create", Some(ADMIN), Some(tick)).await;
    assert_eq!(status, 201, "{made}");

    // The first firing, on time; then down until well past the next one and its grace.
    let runs = runs_until(&server.base, "tick", 75, |run| {
        run["tasks"][0]["state"] == "TASK_STATE_COMPLETED"
    })
    .await;
    let first = at(&runs["runs"][0]);
    webhook_receiver::wait_for(&received, 1).await;
    let down_until = first + chrono::Duration::seconds(60 + 12);
    let wait = (down_until - Utc::now()).to_std().unwrap_or_default();
    server.restart_after(wait).await;

    let runs = runs_until(&server.base, "tick", 10, |run| run["trigger"] == "missed").await;
    let runs = runs["runs"].as_array().unwrap();
    let kinds: Vec<(DateTime<Utc>, &str)> = runs
        .iter()
        .map(|r| (at(r), r["trigger"].as_str().unwrap()))
        .collect();
    let next = first + chrono::Duration::minutes(1);
    assert_eq!(
        kinds,
        [(next, "missed"), (first, "schedule")],
        "the firing while down is missed (12 s late, grace 5 s); the one before is not fired again"
    );
    assert!(
        runs[0]["tasks"].as_array().unwrap().is_empty(),
        "nothing sent for it"
    );
    assert!(runs[0].get("firedAt").is_none(), "{}", runs[0]);

    let arrived = webhook_receiver::wait_for(&received, 2).await;
    let (headers, body) = &arrived[1];
    check_signed(headers, body);
    let notice: Value = serde_json::from_str(body).unwrap();
    assert_eq!(notice["type"], "ceremony.missed", "{notice}");
    assert_eq!(notice["ceremony"], "tick");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(received.lock().unwrap().len(), 2, "one notice each");
}
