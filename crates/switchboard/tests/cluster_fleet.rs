//! Fleet health of the split deployment (real processes, real Redis): outcomes committed
//! by two task-state replicas, from tasks sent through two gateways, reported the same by
//! both gateways and matching what the test counted; the metrics, summed over the
//! replicas that committed the outcomes, match too.

#![allow(clippy::unwrap_used)] // test harness

use std::time::Duration;

use serde_json::Value;

#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/fleet_drill.rs"]
mod drill;

use cluster::{ADMIN_TOKEN, Cluster, ONE_AT_A_TIME};

async fn report(gateway: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{gateway}/fleet/health"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn counted(report: &Value) -> u64 {
    report["windows"]["1h"]["agents"]
        .as_array()
        .map(|agents| {
            agents
                .iter()
                .map(|a| a["count"].as_u64().unwrap_or(0))
                .sum()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_health_through_either_gateway_matches_the_outcomes_counted_by_the_test() {
    let _one = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let gateways = vec![cluster.gateway(0), cluster.gateway(1)];
    let plan = drill::plan();
    let expected = drill::run(&gateways, &plan, None).await;
    let total: u64 = expected.values().map(drill::Expected::count).sum();

    for gateway in &gateways {
        let mut seen = report(gateway).await;
        for _ in 0..50 {
            if counted(&seen) >= total {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            seen = report(gateway).await;
        }
        for window in ["1h", "24h"] {
            let agents = seen["windows"][window]["agents"].as_array().unwrap();
            for ((agent, skill), wanted) in &expected {
                let entry = agents
                    .iter()
                    .find(|a| a["agent"] == agent.as_str())
                    .unwrap();
                drill::check_stats(entry, wanted, &format!("{gateway} {window} {agent}"));
                let skills = entry["skills"].as_array().unwrap();
                let by_skill = skills
                    .iter()
                    .find(|s| s["skill"] == skill.as_str())
                    .unwrap();
                drill::check_stats(
                    by_skill,
                    wanted,
                    &format!("{gateway} {window} {agent}/{skill}"),
                );
            }
        }
    }

    let mut texts = Vec::new();
    for port in cluster.ports("tasks") {
        let url = format!("http://127.0.0.1:{port}/metrics");
        texts.push(reqwest::get(url).await.unwrap().text().await.unwrap());
    }
    assert_eq!(texts.len(), 2, "two task-state replicas");
    for ((agent, skill), wanted) in &expected {
        drill::check_metrics(&texts, agent, skill, wanted);
    }
}
