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

/// The routing agent in the split deployment: its turns run in a worker session of
/// each gateway, so a routed task sent through one gateway is answered through the
/// other; the agent's task it made runs on the remote worker (where every agent of the
/// split deployment runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routed_task_runs_on_the_workers_and_is_answered_through_either_gateway() {
    use serde_json::json;
    let _one = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let (first, second) = (cluster.gateway(0), cluster.gateway(1));
    let mut message = cluster::message(
        "the user is vegetarian\nthe user lives in Paris\nthe user ordered a steak",
    );
    message["metadata"] = json!({"skillHint": "consolidate"});
    let asked = cluster::rpc(&first, "fleet", "SendMessage", json!({"message": message})).await;
    let task = &asked["task"];
    assert_eq!(cluster::state(task), "TASK_STATE_INPUT_REQUIRED", "{asked}");
    let routing = &task["metadata"]["switchboard.routing"];
    let attempt = &routing["attempts"][0];
    let agent = attempt["agent"].as_str().unwrap().to_owned();
    let made = cluster::get_task(&second, &agent, attempt["taskId"].as_str().unwrap()).await;
    assert_eq!(cluster::state(&made), "TASK_STATE_INPUT_REQUIRED", "{made}");

    let answer = json!({
        "messageId": format!("m-{}", cluster::uuid_like()), "role": "ROLE_USER",
        "taskId": task["id"], "contextId": task["contextId"],
        "parts": [{"text": "Yes, the user is vegetarian; the steak was ordered for a friend."}]
    });
    let done = cluster::rpc(&second, "fleet", "SendMessage", json!({"message": answer})).await;
    assert_eq!(
        cluster::state(&done["task"]),
        "TASK_STATE_COMPLETED",
        "{done}"
    );
    let made = cluster::get_task(&first, &agent, attempt["taskId"].as_str().unwrap()).await;
    assert_eq!(cluster::state(&made), "TASK_STATE_COMPLETED", "{made}");
}
