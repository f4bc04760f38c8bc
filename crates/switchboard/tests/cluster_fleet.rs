//! Fleet health of the split deployment (real processes, real Redis): outcomes committed
//! by two task-state replicas, from tasks sent through two gateways, reported the same by
//! both gateways and matching what the test counted; the metrics, summed over the
//! replicas that committed the outcomes, match too.

#![allow(clippy::unwrap_used)] // test harness

#[path = "support/cluster.rs"]
mod cluster;
#[path = "support/fleet_drill.rs"]
mod drill;

use cluster::{ADMIN_TOKEN, Cluster, ONE_AT_A_TIME};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_health_through_either_gateway_matches_the_outcomes_counted_by_the_test() {
    let _one = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let gateways = vec![cluster.gateway(0), cluster.gateway(1)];
    let plan = drill::plan();
    let expected = drill::run(&gateways, &plan, None).await;
    let total: u64 = expected.values().map(drill::Expected::count).sum();

    for gateway in &gateways {
        let seen = drill::report_counting(gateway, ADMIN_TOKEN, total).await;
        drill::check_report(&seen, &expected, gateway);
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
