//! The split deployment under failure, as real processes started by
//! `scripts/local-cluster.sh` (Redis with AOF, 2 gateways, 2 task-state, 2 fan-outs,
//! 1 dispatcher, 1 registry, 1 worker): kill -9 a fan-out node mid-stream, the
//! dispatcher mid-delivery, the worker mid-task, restart Redis; and two task-state
//! replicas racing cancel against completion; and more held streams than one HTTP/2
//! connection between services allowed by default.
//!
//! A few minutes in all, one deployment at a time, mostly waiting on processes: so it is
//! ignored by a plain `cargo test`, and `scripts/test.sh` runs it (`-- --ignored`) in the
//! background while the interop stages run.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test harness
#[path = "support/cluster.rs"]
mod support;

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real processes killed and restarted, minutes in all: scripts/test.sh runs it alongside the interop stages"]
async fn fanout_node_killed_mid_stream_resumes_on_the_other_without_a_gap() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let lines: Vec<String> = (1..=60)
        .map(|i| format!("the user said thing {i}"))
        .collect();
    let response = reqwest::Client::new()
        .post(format!(
            "{}/agents/consolidate/message:stream",
            cluster.gateway(0)
        ))
        .header("A2A-Version", "1.0")
        .json(&json!({"message": message(&lines.join("\n"))}))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    while sse_ids(&seen).last().copied().unwrap_or(0) < 5 {
        let chunk = body.next().await;
        let chunk = chunk.unwrap_or_else(|| panic!("the stream ended early: {seen}"));
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let task_id = seen[seen.find("\"id\":\"").unwrap() + 6..]
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    let mut serving = None;
    for (port, pid) in cluster
        .ports("fanout")
        .into_iter()
        .zip(cluster.pids("fanout"))
    {
        if metric(&port, "switchboard_fanout_subscriptions ").await > 0 {
            serving = Some(pid);
        }
    }
    kill_9(serving.expect("one fan-out node serves the stream"));
    // The stream ends (the gateway lost its node); keep what arrived before.
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(chunk)) = body.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    assert!(
        rest.is_ok(),
        "the stream must end when its fan-out node dies"
    );
    let ids = sse_ids(&seen);
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "{seen}");
    let last = *ids.last().unwrap();

    // Resume on the other gateway, which can only reach the surviving fan-out node.
    let resumed = reqwest::Client::new()
        .get(format!(
            "{}/agents/consolidate/tasks/{task_id}:subscribe",
            cluster.gateway(1)
        ))
        .header("A2A-Version", "1.0")
        .header("Last-Event-ID", last.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let text = tokio::time::timeout(Duration::from_secs(30), resumed.text())
        .await
        .unwrap()
        .unwrap();
    let after = sse_ids(&text);
    assert!(!after.is_empty(), "{text}");
    let expected: Vec<u64> = (last + 1..last + 1 + after.len() as u64).collect();
    assert_eq!(after, expected, "contiguous after the cursor");
    let final_event = text.lines().rfind(|l| l.starts_with("data:")).unwrap();
    assert!(
        final_event.contains("TASK_STATE_COMPLETED"),
        "{final_event}"
    );
    // The resume was served from the log on the surviving node, then live.
    let replayed = "switchboard_fanout_events_total{source=\"log\"} ";
    assert!(metric_sum(&cluster, "fanout", replayed).await >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real processes killed and restarted, minutes in all: scripts/test.sh runs it alongside the interop stages"]
async fn dispatcher_killed_mid_delivery_still_delivers() {
    use axum::http::{HeaderMap, StatusCode};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    let _serial = ONE_AT_A_TIME.lock().await;
    let accepting = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let accepted: Arc<Mutex<Vec<String>>> = Arc::default();
    let (flag, refusals, sink) = (accepting.clone(), refused.clone(), accepted.clone());
    let app = axum::Router::new()
        .route(
            "/gone",
            axum::routing::post(|| async { StatusCode::NOT_FOUND }),
        )
        .route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap| {
                let (flag, refusals, sink) = (flag.clone(), refusals.clone(), sink.clone());
                async move {
                    if !flag.load(Ordering::SeqCst) {
                        refusals.fetch_add(1, Ordering::SeqCst);
                        return StatusCode::SERVICE_UNAVAILABLE;
                    }
                    let id = headers["webhook-id"].to_str().unwrap().to_owned();
                    sink.lock().unwrap().push(id);
                    StatusCode::OK
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let receiver = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let hook = format!("{receiver}/hook");
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let cluster = Cluster::up();
    let params = json!({"message": message("deliver me"),
        "configuration": {"taskPushNotificationConfig": {"url": hook}}});
    let task = rpc(&cluster.gateway(0), "echo", "SendMessage", params).await["task"].clone();
    assert_eq!(state(&task), "TASK_STATE_COMPLETED");
    let task_id = task["id"].as_str().unwrap().to_owned();
    // The first attempt is refused; the retry waits a minute. Kill the dispatcher then.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !cluster.log("dispatcher").contains("webhook attempt") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no delivery attempt"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    kill_9(cluster.pids("dispatcher")[0]);
    // The attempt the log reported reached the receiver, and was refused.
    assert!(
        refused.load(Ordering::SeqCst) >= 1,
        "no attempt reached the receiver"
    );

    accepting.store(true, Ordering::SeqCst);
    cluster.run(&["start", "dispatcher"]);
    let mut ids = Vec::new();
    for _ in 0..200 {
        ids = accepted.lock().unwrap().clone();
        if ids.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let expected: Vec<String> = (2..=4).map(|seq| format!("{task_id}:{seq}")).collect();
    assert_eq!(
        ids, expected,
        "every event after the cursor, in order, once each"
    );

    // Where the task's deliveries stand, through a gateway: all served.
    let status: Value = reqwest::Client::new()
        .get(format!("{}/admin/deliveries/{task_id}", cluster.gateway(1)))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["configs"][0]["deliveredThrough"], 4, "{status}");
    assert_eq!(status["configs"][0]["taskSeq"], 4, "{status}");

    // A refused delivery is a dead letter, listed and re-driven through a gateway
    // although the dispatcher runs elsewhere.
    let params = json!({"message": message("nobody home"),
        "configuration": {"taskPushNotificationConfig": {"url": format!("{receiver}/gone")}}});
    let gone = rpc(&cluster.gateway(1), "echo", "SendMessage", params).await["task"]["id"].clone();
    let admin = |path: &str| format!("{}/admin/dead-letters{path}", cluster.gateway(1));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let letter = loop {
        let listed: Value = reqwest::Client::new()
            .get(admin(""))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let letters = listed["deadLetters"].as_array();
        let found = letters
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .find(|l| l["task_id"] == gone)
            .cloned();
        if let Some(letter) = found {
            break letter;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no dead letter: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let id = letter["id"].as_str().unwrap();
    let redrive = reqwest::Client::new()
        .post(admin(&format!("/{id}/redrive")))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(redrive.status(), 202);
    let anonymous = reqwest::get(admin("")).await.unwrap();
    assert_eq!(anonymous.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real processes killed and restarted, minutes in all: scripts/test.sh runs it alongside the interop stages"]
async fn worker_killed_mid_task_fails_or_reassigns_by_policy() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let base = cluster.gateway(0);
    // Long enough (20 s) to outlast the metric refresh (6 s) and the kill.
    let lines: Vec<String> = (1..=100).map(|i| format!("fact number {i}")).collect();
    let mut ids = Vec::new();
    for agent in ["slow-fail", "slow-reassign"] {
        let params = json!({"message": message(&lines.join("\n")),
            "configuration": {"returnImmediately": true}});
        let task = rpc(&base, agent, "SendMessage", params).await["task"].clone();
        ids.push(task["id"].as_str().unwrap().to_owned());
    }
    for (agent, id) in ["slow-fail", "slow-reassign"].iter().zip(&ids) {
        wait_for(&base, agent, id, 20, |t| state(t) == "TASK_STATE_WORKING").await;
    }
    // The scaling signals, summed over the task-state replicas: the worker, and each
    // of the two gateways' sessions for the routing agent.
    assert_eq!(
        metric_sum(&cluster, "tasks", "switchboard_workers_attached ").await,
        3
    );
    assert_eq!(
        metric_sum(&cluster, "tasks", "switchboard_worker_leases ").await,
        2
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while metric_sum(
        &cluster,
        "tasks",
        "switchboard_queue_depth{agent=\"slow-fail\"} ",
    )
    .await
        < 1
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "queue depth never reported"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    kill_9(cluster.pids("worker")[0]);
    cluster.run(&["start", "worker"]);

    let failed = wait_for(&base, "slow-fail", &ids[0], 30, |t| {
        state(t) != "TASK_STATE_WORKING"
    })
    .await;
    assert_eq!(state(&failed), "TASK_STATE_FAILED", "{failed}");
    let reason = failed["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("worker running this task was lost"),
        "{reason}"
    );

    let done = wait_for(&base, "slow-reassign", &ids[1], 60, |t| {
        state(t) != "TASK_STATE_WORKING" && state(t) != "TASK_STATE_SUBMITTED"
    })
    .await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");

    // A worker cut off from the cluster cannot write into a task that moved on: an
    // update naming a turn that is no longer leased is refused.
    use sb_tasks::TaskService;
    let port = &cluster.ports("tasks")[0];
    let channel = sb_rpc::wire::connect(&format!("http://127.0.0.1:{port}")).unwrap();
    let client = sb_rpc::tasks::TaskStateClient::new(channel, Default::default());
    let zombie = client.for_turn("slow-reassign/1-0", "slow-reassign");
    let update = sb_tasks::TaskUpdate::Status {
        state: sb_protocol::TaskState::Working,
        message: None,
        metadata: None,
    };
    let refused = zombie.update(&ids[1], update).await.unwrap_err();
    assert!(refused.message.contains("no longer leased"), "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real processes killed and restarted, minutes in all: scripts/test.sh runs it alongside the interop stages"]
async fn tasks_survive_a_redis_restart_from_its_aof() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let base = cluster.gateway(0);
    let mut ids = Vec::new();
    for i in 0..20 {
        let params = json!({"message": message(&format!("keep me {i}"))});
        let task = rpc(&base, "echo", "SendMessage", params).await["task"].clone();
        assert_eq!(state(&task), "TASK_STATE_COMPLETED");
        ids.push(task["id"].as_str().unwrap().to_owned());
    }
    // Each task-state replica counts the events it committed: together, every one.
    let completed = r#"switchboard_task_events_total{state="TASK_STATE_COMPLETED"} "#;
    assert_eq!(metric_sum(&cluster, "tasks", completed).await, 20);
    // appendfsync everysec: what was acknowledged more than a second ago is on disk.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cluster.run(&["restart-redis"]);
    for id in &ids {
        // The first command on a connection Redis dropped fails once (retryable);
        // the client reconnects and the task is there.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let task = loop {
            let response = raw_rpc(&base, "echo", "GetTask", json!({"id": id})).await;
            if response.get("result").is_some() {
                break response["result"].clone();
            }
            assert_eq!(response["error"]["code"], -32603, "{response}");
            assert!(tokio::time::Instant::now() < deadline, "{response}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(state(&task), "TASK_STATE_COMPLETED");
        assert_eq!(
            task["artifacts"][0]["parts"][0]["text"],
            task["history"][0]["parts"][0]["text"]
        );
    }
    let after = rpc(
        &base,
        "echo",
        "SendMessage",
        json!({"message": message("after")}),
    )
    .await;
    assert_eq!(state(&after["task"]), "TASK_STATE_COMPLETED", "{after}");
}

/// Two task-state replicas, each reached over gRPC, racing a cancel against a
/// completion on the same task 1,000 times, both sent at once: exactly one wins each
/// race, the loser is refused with the reason, the task every replica reads (and its one
/// terminal event) is the winner's, and each side won some races (or they never raced).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real processes killed and restarted, minutes in all: scripts/test.sh runs it alongside the interop stages"]
async fn two_task_state_replicas_racing_cancel_against_completion() {
    use sb_protocol::{ErrorKind, Message, Role, TaskState};
    use sb_rpc::tasks::TaskStateClient;
    use sb_tasks::{NewTask, Scope, TaskService, TaskUpdate};
    use std::sync::Arc;

    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let replicas: Vec<TaskStateClient> = cluster
        .ports("tasks")
        .iter()
        .map(|port| {
            let channel = sb_rpc::wire::connect(&format!("http://127.0.0.1:{port}")).unwrap();
            TaskStateClient::new(channel, Default::default())
        })
        .collect();
    assert_eq!(replicas.len(), 2);
    let scope = Scope {
        agent: "echo".into(),
        owner: String::new(),
    };
    let new_task = |text: &str| NewTask {
        scope: scope.clone(),
        message: Message {
            role: Role::User,
            ..Message::agent_text(text)
        },
        metadata: None,
    };
    let status = |state| TaskUpdate::Status {
        state,
        message: None,
        metadata: None,
    };
    const ROUNDS: usize = 1000;
    let (mut completions, mut cancels) = (0, 0);
    for _ in 0..ROUNDS {
        let id = replicas[0].create(new_task("race")).await.unwrap().task.id;
        // Each side on a task of its own, let go together: neither is sent first by
        // construction.
        let start = Arc::new(tokio::sync::Barrier::new(2));
        let complete = tokio::spawn({
            let (replica, id, start) = (replicas[0].clone(), id.clone(), start.clone());
            async move {
                start.wait().await;
                replica.update(&id, status(TaskState::Completed)).await
            }
        });
        let cancel = tokio::spawn({
            let (replica, id, scope) = (replicas[1].clone(), id.clone(), scope.clone());
            async move {
                start.wait().await;
                replica.cancel(&scope, &id).await
            }
        });
        let (completed, canceled) = (complete.await.unwrap(), cancel.await.unwrap());
        let winner = match (completed, canceled) {
            (Ok(winner), Err(refused)) => {
                completions += 1;
                assert_eq!(winner.state(), TaskState::Completed);
                assert_eq!(refused.kind, ErrorKind::TaskNotCancelable, "{refused:?}");
                assert!(refused.message.contains("already completed"), "{refused:?}");
                winner
            }
            (Err(refused), Ok(winner)) => {
                cancels += 1;
                assert_eq!(winner.state(), TaskState::Canceled);
                assert_eq!(refused.kind, ErrorKind::UnsupportedOperation, "{refused:?}");
                assert!(
                    refused.message.contains("from canceled to completed"),
                    "{refused:?}"
                );
                winner
            }
            (completed, canceled) => panic!(
                "{id}: not exactly one winner: completion {completed:?}, cancel {canceled:?}"
            ),
        };
        assert_eq!(winner.seq, 2, "one write after the creation");
        for replica in &replicas {
            let stored = replica.get(&scope, &id).await.unwrap();
            assert_eq!(
                (stored.seq, stored.state()),
                (2, winner.state()),
                "the stored task is the winner's"
            );
        }
        let events = replicas[0].events_after(&id, 0, 10).await.unwrap();
        let states: Vec<_> = events.iter().map(|e| (e.seq, e.event.state())).collect();
        assert_eq!(
            states,
            [(1, Some(TaskState::Submitted)), (2, Some(winner.state()))],
            "exactly one terminal event, the winner's"
        );
    }
    eprintln!("two replicas: completion won {completions} races, cancel won {cancels}");
    assert!(
        completions > 0 && cancels > 0,
        "one side won all {ROUNDS} races (completion {completions}, cancel {cancels}): \
         the two never ran concurrently"
    );

    // Several updates in one call are one commit over the wire too: all or none.
    let id = replicas[0].create(new_task("batch")).await.unwrap().task.id;
    let illegal = vec![status(TaskState::Completed), status(TaskState::Working)];
    let refused = replicas[1].update_all(&id, &illegal).await.unwrap_err();
    assert!(refused.message.contains("cannot move"), "{refused:?}");
    assert_eq!(replicas[0].events_after(&id, 0, 10).await.unwrap().len(), 1);
    let legal = vec![status(TaskState::Working), status(TaskState::Completed)];
    let done = replicas[1].update_all(&id, &legal).await.unwrap();
    assert_eq!((done.seq, done.state()), (3, TaskState::Completed));
}

/// One trace from the client's request through gateway, task-state, worker, fan-out and
/// dispatcher to the webhook POST, exported by OTLP to a real receiver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real processes killed and restarted, minutes in all: scripts/test.sh runs it alongside the interop stages"]
async fn one_connected_trace_across_the_services() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message as _;
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::{Arc, Mutex};

    let _serial = ONE_AT_A_TIME.lock().await;
    // (service, trace id, span id, parent span id, name) of every span received.
    type Span = (String, String, String, String, String);
    let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
    let webhooks: Arc<Mutex<Vec<String>>> = Arc::default();
    let (sink, hooks) = (spans.clone(), webhooks.clone());
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let sink = sink.clone();
                async move {
                    let request = ExportTraceServiceRequest::decode(body).unwrap();
                    for resource in request.resource_spans {
                        let service = resource
                            .resource
                            .iter()
                            .flat_map(|r| &r.attributes)
                            .find(|a| a.key == "service.name")
                            .and_then(|a| a.value.as_ref())
                            .map(|v| format!("{:?}", v.value))
                            .unwrap_or_default();
                        for scope in resource.scope_spans {
                            for span in scope.spans {
                                sink.lock().unwrap().push((
                                    service.clone(),
                                    hex(&span.trace_id),
                                    hex(&span.span_id),
                                    hex(&span.parent_span_id),
                                    span.name,
                                ));
                            }
                        }
                    }
                    axum::http::StatusCode::OK
                }
            }),
        )
        .route(
            "/hook",
            axum::routing::post(move |headers: axum::http::HeaderMap| {
                let hooks = hooks.clone();
                async move {
                    let parent = headers
                        .get("traceparent")
                        .map(|v| v.to_str().unwrap().to_owned());
                    hooks.lock().unwrap().push(parent.unwrap_or_default());
                    axum::http::StatusCode::OK
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let cluster = Cluster::up_with(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &base),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
    ]);
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    // Streamed, so the fan-out service is on the path too (a blocking send waits for
    // the turn's end from the task-state service alone).
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {
        "message": message("trace me"),
        "configuration": {"taskPushNotificationConfig": {"url": format!("{base}/hook")}}}});
    let stream = reqwest::Client::new()
        .post(format!("{}/agents/echo/a2a", cluster.gateway(0)))
        .header("A2A-Version", "1.0")
        .header("traceparent", format!("00-{trace_id}-{client_span}-01"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(stream.contains("TASK_STATE_COMPLETED"), "{stream}");

    let wanted = ["gateway", "tasks", "fanout", "worker", "dispatcher"];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let ours: Vec<Span> = spans
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.1 == trace_id)
            .cloned()
            .collect();
        let services: BTreeSet<&str> = ours.iter().map(|s| s.0.as_str()).collect();
        let complete = wanted.iter().all(|w| {
            services
                .iter()
                .any(|s| s.contains(&format!("switchboard-{w}")))
        });
        // Connected: every span hangs off the client's span or another span of the trace.
        // Each service exports in its own batches, so a parent may arrive after its child.
        let ids: BTreeMap<&str, &Span> = ours.iter().map(|s| (s.2.as_str(), s)).collect();
        let orphans: Vec<&Span> = ours
            .iter()
            .filter(|s| s.3 != client_span && !ids.contains_key(s.3.as_str()))
            .collect();
        if complete && orphans.is_empty() && webhooks.lock().unwrap().len() >= 3 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "spans with a parent outside the trace: {orphans:#?}\nspans of the trace so far: {ours:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for parent in webhooks.lock().unwrap().iter() {
        assert!(parent.contains(trace_id), "webhook traceparent {parent:?}");
    }
}

/// A gateway reaches each service replica over one HTTP/2 connection, on which every
/// held stream is a turn waited for (to the task-state service) and an event stream
/// relayed (from the fan-out node). hyper caps a connection at 200 concurrent streams by
/// default: the 201st stream then never got its first event. 300 held streams through one
/// gateway, one task-state replica and one fan-out node must all open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real processes killed and restarted, minutes in all: scripts/test.sh runs it alongside the interop stages"]
async fn more_held_streams_than_one_connection_allowed_by_default() {
    let _serial = ONE_AT_A_TIME.lock().await;
    const HELD: usize = 300;
    let cluster = Cluster::up_with(&[
        ("GATEWAYS", "1"),
        ("TASKS", "1"),
        ("FANOUTS", "1"),
        ("SWITCHBOARD_WORKER_CAPACITY", "1000"),
        // Readiness must not depend on the log level (local-cluster.sh).
        ("RUST_LOG", "warn"),
    ]);
    let gateway = cluster.gateway(0);
    let open = |i: usize| {
        let gateway = gateway.clone();
        async move {
            // A connection of its own per stream, as separate clients would have.
            let response = reqwest::Client::new()
                .post(format!("{gateway}/agents/bench/message:stream"))
                .header("A2A-Version", "1.0")
                .json(&json!({"message": message(&format!("hold {i}"))}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            let mut body = response.bytes_stream();
            let mut seen = String::new();
            while !seen.contains("data:") {
                match body.next().await {
                    Some(Ok(chunk)) => seen.push_str(&String::from_utf8_lossy(&chunk)),
                    _ => return None,
                }
            }
            // Kept open until every stream is: all of them are held at once.
            Some(body)
        }
    };
    // A guard against a hang, not a measurement: a stream that cannot open never does.
    let opened = tokio::time::timeout(
        Duration::from_secs(120),
        futures::future::join_all((0..HELD).map(open)),
    )
    .await;
    let held = opened.map_or(0, |streams| streams.iter().flatten().count());
    assert_eq!(held, HELD, "held streams that got their first event");
}

/// A 0.3 blocking `message/send` to `agent`: the task once its turn is over.
async fn send_v03(base: &str, agent: &str, text: &str) -> Value {
    let message = json!({
        "kind": "message",
        "messageId": format!("m-{}", uuid_like()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}});
    let response: Value = reqwest::Client::new()
        .post(format!("{base}/agents/{agent}/"))
        .timeout(Duration::from_secs(60))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    response["result"].clone()
}

/// Turns of two agents queued in the same millisecond get the same queue entry id (each
/// agent has a queue of its own) and may go to the same worker: each turn's end must end
/// that turn only. Were they mixed up, the fast echo turn's end would end the
/// consolidate turn early (a 0.3 blocking send answered with the task still working)
/// and leave the echo turn leased until its lease ran out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real processes killed and restarted, minutes in all: scripts/test.sh runs it alongside the interop stages"]
async fn turns_of_two_agents_queued_at_once_end_apart() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let base = cluster.gateway(0);
    for round in 0..30 {
        let (slow, fast) = tokio::join!(
            send_v03(&base, "consolidate", "the user lives in Paris"),
            send_v03(&base, "echo", "hello"),
        );
        assert_eq!(
            slow["status"]["state"], "completed",
            "round {round}: {slow}"
        );
        assert_eq!(
            fast["status"]["state"], "completed",
            "round {round}: {fast}"
        );
    }
    let warnings = cluster.warnings();
    assert!(!warnings.contains("lease expired"), "{warnings}");
}

/// A gateway checks a send's inline push config with the task-state service (whose
/// webhook policy decides) before the task is made: a refused target leaves no task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real processes killed and restarted, minutes in all: scripts/test.sh runs it alongside the interop stages"]
async fn a_refused_inline_push_target_leaves_no_task_in_the_split_deployment() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let cluster = Cluster::up();
    let gateway = cluster.gateway(0);
    let mut sent = message("hi");
    sent["contextId"] = json!("ctx-refused-push");
    let params = json!({"message": sent,
        "configuration": {"taskPushNotificationConfig": {"url": "http://10.1.2.3/hook"}}});
    let refused = raw_rpc(&gateway, "echo", "SendMessage", params).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let reason = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(reason.contains("10.1.2.3"), "{refused}");
    let listed = rpc(
        &gateway,
        "echo",
        "ListTasks",
        json!({"contextId": "ctx-refused-push"}),
    )
    .await;
    assert_eq!(listed["tasks"], json!([]), "{listed}");
}
