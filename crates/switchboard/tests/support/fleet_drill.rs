//! A fleet-health drill: tasks of known outcomes (the `bench` agent's `finish` command)
//! sent through one or more gateways, and what fleet health must then say, counted here
//! independently of Switchboard.

#![allow(dead_code)] // each test binary uses its part
use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

/// The agents a drill needs: `summarizer` and `drafter`, both `bench`.
pub(crate) const AGENTS: &str = r#"
[[agents]]
name = "summarizer"
kind = "bench"
[[agents]]
name = "drafter"
kind = "bench"
"#;

/// One planned task: agent, skill (and the metadata key naming it), `bench` command.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    pub(crate) agent: &'static str,
    pub(crate) skill: &'static str,
    pub(crate) skill_key: &'static str,
    pub(crate) command: String,
    /// Canceled by the drill while it holds (`hold`), instead of finishing by itself.
    pub(crate) cancel: bool,
}

/// What fleet health must report for one agent and skill.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Expected {
    pub(crate) completed: u64,
    pub(crate) failed: u64,
    pub(crate) canceled: u64,
    pub(crate) rejected: u64,
    /// What the completed tasks were told to take (each took at least that)…
    pub(crate) completed_ms: Vec<u64>,
    /// …and how long their blocking sends took (each took at most that).
    pub(crate) completed_wall_ms: Vec<u64>,
    pub(crate) cost_usd: f64,
    pub(crate) reasons: BTreeMap<(String, String), u64>,
}

impl Expected {
    pub(crate) fn count(&self) -> u64 {
        self.completed + self.failed + self.canceled + self.rejected
    }

    /// The `q` quantile of the completed durations at least (`upper` false) or at most.
    pub(crate) fn quantile_ms(&self, q: f64, upper: bool) -> u64 {
        let mut sorted = match upper {
            false => self.completed_ms.clone(),
            true => self.completed_wall_ms.clone(),
        };
        sorted.sort_unstable();
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }
}

/// The plan: 28 `summarize` tasks for `summarizer` (20 completed at five durations, half
/// with a cost; 4 failed with a cost; 2 rejected; 2 canceled) and 12 `draft` tasks for
/// `drafter` (6 completed; 6 failed for two reasons).
pub(crate) fn plan() -> Vec<Planned> {
    let summarize = |command: String, cancel: bool| Planned {
        agent: "summarizer",
        skill: "summarize",
        skill_key: "skillHint",
        command,
        cancel,
    };
    let draft = |command: String| Planned {
        agent: "drafter",
        skill: "draft",
        skill_key: "skill",
        command,
        cancel: false,
    };
    let mut plan = Vec::new();
    // Mid-bucket durations: a task takes a little longer than it is told to.
    for (i, ms) in [60, 130, 300, 600, 1100]
        .iter()
        .cycle()
        .take(20)
        .enumerate()
    {
        let cost = if i % 2 == 0 { "0.01" } else { "-" };
        plan.push(summarize(
            format!("finish completed {ms} {cost} done"),
            false,
        ));
    }
    for _ in 0..4 {
        plan.push(summarize(
            "finish failed 35 0.002 the model timed out".into(),
            false,
        ));
    }
    for _ in 0..2 {
        plan.push(summarize(
            "finish rejected 5 - input too long".into(),
            false,
        ));
    }
    for _ in 0..2 {
        plan.push(summarize("hold".into(), true));
    }
    for _ in 0..6 {
        plan.push(draft("finish completed 130 -".into()));
    }
    for _ in 0..4 {
        plan.push(draft("finish failed 5 - quota exceeded".into()));
    }
    for _ in 0..2 {
        plan.push(draft("finish failed 5 - bad prompt".into()));
    }
    plan
}

/// What the plan must produce, by (agent, skill).
pub(crate) fn expected(plan: &[Planned]) -> BTreeMap<(String, String), Expected> {
    let mut all: BTreeMap<(String, String), Expected> = BTreeMap::new();
    for task in plan {
        let e = all
            .entry((task.agent.to_owned(), task.skill.to_owned()))
            .or_default();
        if task.cancel {
            e.canceled += 1;
            *e.reasons
                .entry(("canceled".into(), "canceled at the client's request".into()))
                .or_default() += 1;
            continue;
        }
        let words: Vec<&str> = task.command.split_whitespace().collect();
        let ms: u64 = words[2].parse().unwrap();
        if let Some(usd) = words.get(3).and_then(|w| w.parse::<f64>().ok()) {
            e.cost_usd += usd;
        }
        let reason = words.get(4..).map(|w| w.join(" ")).unwrap_or_default();
        match words[1] {
            "completed" => {
                e.completed += 1;
                e.completed_ms.push(ms);
            }
            state => {
                match state {
                    "failed" => e.failed += 1,
                    _ => e.rejected += 1,
                }
                *e.reasons.entry((state.into(), reason)).or_default() += 1;
            }
        }
    }
    all
}

fn send_body(task: &Planned, id: usize) -> Value {
    let mut metadata = json!({});
    metadata[task.skill_key] = json!(task.skill);
    json!({"jsonrpc": "2.0", "id": id, "method": "SendMessage", "params": {
        "message": {"messageId": format!("drill-{id}"), "role": "ROLE_USER",
                    "parts": [{"text": task.command}]},
        "metadata": metadata,
        "configuration": {"returnImmediately": task.cancel},
    }})
}

/// Runs `plan`, task `i` through `gateways[i % len]`, eight at a time; each task ends
/// (or is canceled) before this returns. What the plan must then produce, with how long
/// each completed task's send took.
pub(crate) async fn run(
    gateways: &[String],
    plan: &[Planned],
    token: Option<&str>,
) -> BTreeMap<(String, String), Expected> {
    let client = reqwest::Client::new();
    let mut expected = expected(plan);
    for (batch_index, batch) in plan.chunks(8).enumerate() {
        let mut calls = Vec::new();
        for (offset, task) in batch.iter().enumerate() {
            let id = batch_index * 8 + offset;
            let base = gateways[id % gateways.len()].clone();
            let client = client.clone();
            let task = task.clone();
            let token = token.map(str::to_owned);
            calls.push(tokio::spawn(async move {
                let url = format!("{base}/agents/{}", task.agent);
                let mut request = client
                    .post(&url)
                    .header("A2A-Version", "1.0")
                    .timeout(Duration::from_secs(20))
                    .json(&send_body(&task, id));
                if let Some(token) = &token {
                    request = request.bearer_auth(token);
                }
                let started = std::time::Instant::now();
                let reply: Value = request.send().await.unwrap().json().await.unwrap();
                let wall_ms = started.elapsed().as_millis() as u64;
                let state = reply["result"]["task"]["status"]["state"].clone();
                if !task.cancel {
                    assert!(
                        state.as_str().is_some_and(|s| s != "TASK_STATE_WORKING" && s != "TASK_STATE_SUBMITTED"),
                        "{reply}"
                    );
                    let completed = state == "TASK_STATE_COMPLETED";
                    return completed.then(|| ((task.agent.to_owned(), task.skill.to_owned()), wall_ms));
                }
                let task_id = reply["result"]["task"]["id"].as_str().unwrap().to_owned();
                // Canceled once it holds, so it ends canceled, not before it started.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let cancel = json!({"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": task_id}});
                let mut request = client.post(&url).header("A2A-Version", "1.0").json(&cancel);
                if let Some(token) = &token {
                    request = request.bearer_auth(token);
                }
                let reply: Value = request.send().await.unwrap().json().await.unwrap();
                assert_eq!(reply["result"]["status"]["state"], "TASK_STATE_CANCELED", "{reply}");
                None
            }));
        }
        for call in calls {
            if let Some((pair, wall_ms)) = call.await.unwrap() {
                expected
                    .get_mut(&pair)
                    .unwrap()
                    .completed_wall_ms
                    .push(wall_ms);
            }
        }
    }
    expected
}

/// The upper bound of the fleet-health histogram bucket of `ms` (as `sb_fleet` buckets).
pub(crate) fn bucket_of(ms: f64) -> u64 {
    const BOUNDS: [u64; 16] = [
        5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000,
        900_000, 3_600_000,
    ];
    BOUNDS
        .iter()
        .copied()
        .find(|b| ms <= *b as f64)
        .unwrap_or(u64::MAX)
}

/// Checks one window's report of (agent, skill) against what the drill expects.
pub(crate) fn check_stats(stats: &Value, expected: &Expected, what: &str) {
    assert_eq!(stats["count"], expected.count(), "{what}: {stats}");
    assert_eq!(stats["completed"], expected.completed, "{what}: {stats}");
    assert_eq!(stats["failed"], expected.failed, "{what}: {stats}");
    assert_eq!(stats["canceled"], expected.canceled, "{what}: {stats}");
    assert_eq!(stats["rejected"], expected.rejected, "{what}: {stats}");
    let rate = expected.completed as f64 / expected.count() as f64;
    assert!(
        (stats["successRate"].as_f64().unwrap() - rate).abs() < 1e-9,
        "{what}: {stats}"
    );
    assert!(
        (stats["costUsd"].as_f64().unwrap() - expected.cost_usd).abs() < 1e-6,
        "{what}: {stats}"
    );
    for (q, field) in [(0.5, "p50Ms"), (0.95, "p95Ms")] {
        let reported = bucket_of(stats[field].as_f64().unwrap());
        let (least, most) = (
            expected.quantile_ms(q, false),
            expected.quantile_ms(q, true),
        );
        assert!(
            bucket_of(least as f64) <= reported && reported <= bucket_of(most as f64),
            "{what} {field}: {stats} (the true value lies between {least} and {most} ms)"
        );
    }
    let reasons: BTreeMap<(String, String), u64> = stats["topFailureReasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = (
                r["state"].as_str().unwrap().to_owned(),
                r["reason"].as_str().unwrap().to_owned(),
            );
            (key, r["count"].as_u64().unwrap())
        })
        .collect();
    let state_names: BTreeMap<(String, String), u64> = expected
        .reasons
        .iter()
        .map(|((state, reason), n)| ((state_name(state), reason.clone()), *n))
        .collect();
    assert_eq!(reasons, state_names, "{what}");
}

/// The 1.0 name of a state as the report serialises it.
fn state_name(short: &str) -> String {
    format!("TASK_STATE_{}", short.to_uppercase().replace('-', "_"))
}

/// The value of the Prometheus sample `name{labels}` in `text`, summed over `texts`
/// (one per process).
pub(crate) fn sample(texts: &[String], name: &str, labels: &str) -> f64 {
    let prefix = format!("{name}{{{labels}}} ");
    texts
        .iter()
        .flat_map(|t| t.lines())
        .filter_map(|line| line.strip_prefix(&prefix))
        .map(|v| v.trim().parse::<f64>().unwrap())
        .sum()
}

/// Checks the outcome metrics, summed over the processes that counted them.
pub(crate) fn check_metrics(texts: &[String], agent: &str, skill: &str, expected: &Expected) {
    for (outcome, count) in [
        ("completed", expected.completed),
        ("failed", expected.failed),
        ("canceled", expected.canceled),
        ("rejected", expected.rejected),
    ] {
        let labels = format!("agent=\"{agent}\",skill=\"{skill}\",outcome=\"{outcome}\"");
        assert_eq!(
            sample(texts, "switchboard_fleet_outcomes_total", &labels),
            count as f64,
            "{labels}"
        );
        assert_eq!(
            sample(
                texts,
                "switchboard_fleet_task_duration_seconds_count",
                &labels
            ),
            count as f64,
            "{labels}"
        );
    }
    let labels = format!("agent=\"{agent}\",skill=\"{skill}\"");
    let cost = sample(texts, "switchboard_fleet_cost_usd_total", &labels);
    assert!(
        (cost - expected.cost_usd).abs() < 1e-6,
        "cost {cost} vs {}",
        expected.cost_usd
    );
}

/// `GET {base}/fleet/health` with the admin token, once it counts `total` outcomes in
/// the last hour (flushes are about a second apart).
pub(crate) async fn report_counting(base: &str, admin_token: &str, total: u64) -> Value {
    let mut last = Value::Null;
    for _ in 0..50 {
        last = reqwest::Client::new()
            .get(format!("{base}/fleet/health"))
            .bearer_auth(admin_token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let counted: u64 = last["windows"]["1h"]["agents"]
            .as_array()
            .map(|agents| {
                agents
                    .iter()
                    .map(|a| a["count"].as_u64().unwrap_or(0))
                    .sum()
            })
            .unwrap_or(0);
        if counted >= total {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("fleet health never counted {total} outcomes: {last}");
}

/// Checks both windows of `report` against what the drill expects: each agent, each of
/// its skills, and each skill across the fleet.
pub(crate) fn check_report(
    report: &Value,
    expected: &BTreeMap<(String, String), Expected>,
    label: &str,
) {
    for window in ["1h", "24h"] {
        let found = |list: &Value, key: &str, name: &str| -> Value {
            let entries = list
                .as_array()
                .unwrap_or_else(|| panic!("{label} {window}: {report}"));
            let entry = entries.iter().find(|e| e[key] == name);
            entry
                .cloned()
                .unwrap_or_else(|| panic!("{label} {window}: no {key} {name}"))
        };
        let windowed = &report["windows"][window];
        for ((agent, skill), wanted) in expected {
            let entry = found(&windowed["agents"], "agent", agent);
            check_stats(&entry, wanted, &format!("{label} {window} {agent}"));
            let by_skill = found(&entry["skills"], "skill", skill);
            check_stats(
                &by_skill,
                wanted,
                &format!("{label} {window} {agent}/{skill}"),
            );
            let fleet_skill = found(&windowed["skills"], "skill", skill);
            check_stats(
                &fleet_skill,
                wanted,
                &format!("{label} {window} skill {skill}"),
            );
        }
    }
}
