//! The embedded store is durable: kill -9 the real binary mid-task, start it again, and
//! every task is there with its history and artifacts; the one that was running ends
//! failed with a reason, the one waiting for input still waits and can be resumed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::zombie_processes)] // test harness; Drop reaps the child
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

#[path = "support/process.rs"]
mod process;

use process::Served;

/// The all-in-one over a data directory, with the calls the tests make to it.
struct Server(Served);

impl std::ops::Deref for Server {
    type Target = Served;
    fn deref(&self) -> &Served {
        &self.0
    }
}

impl Server {
    async fn start(data_dir: &Path) -> Server {
        Server::start_with(data_dir, &[]).await
    }

    async fn start_with(data_dir: &Path, extra: &[&str]) -> Server {
        let mut args = vec![std::ffi::OsStr::new("--data-dir"), data_dir.as_os_str()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        Server(process::serve(process::free_port(), &args).await)
    }

    fn kill_9(mut self) {
        self.0.kill();
    }

    async fn rpc(&self, agent: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let response: Value = reqwest::Client::new()
            .post(format!("{}/agents/{agent}/a2a", self.base))
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    async fn send(
        &self,
        agent: &str,
        text: &str,
        return_immediately: bool,
        task_id: Option<&str>,
    ) -> Value {
        let mut message =
            json!({"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": text}]});
        if let Some(id) = task_id {
            message["taskId"] = json!(id);
        }
        let params =
            json!({"message": message, "configuration": {"returnImmediately": return_immediately}});
        self.rpc(agent, "SendMessage", params).await["task"].clone()
    }

    async fn get(&self, agent: &str, id: &str) -> Value {
        self.rpc(agent, "GetTask", json!({"id": id})).await
    }
}

/// Serves `app` on a free loopback port; returns its base URL.
async fn serve_locally(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// Writes a configuration file into `dir`; returns its path.
fn write_config(dir: &Path, toml: &str) -> std::path::PathBuf {
    let path = dir.join("switchboard.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

fn uuid() -> String {
    format!(
        "m-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_task_then_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).await;

    let done = server
        .send("echo", "kept across restarts", false, None)
        .await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
    let waiting = server
        .send(
            "consolidate",
            "the user is vegetarian\nthe user ordered a steak",
            false,
            None,
        )
        .await;
    assert_eq!(waiting["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let transcripts: Vec<String> = (1..=40)
        .map(|i| format!("the user mentioned topic {i}"))
        .collect();
    let running = server
        .send("consolidate", &transcripts.join("\n"), true, None)
        .await;
    let running_id = running["id"].as_str().unwrap().to_owned();

    // Wait until the agent is visibly mid-task, then kill the process without warning.
    let mut progress = String::new();
    for _ in 0..200 {
        let task = server.get("consolidate", &running_id).await;
        progress = task["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if progress.starts_with("transcript 3/") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        progress.starts_with("transcript 3/"),
        "agent never got going: {progress:?}"
    );
    server.kill_9();

    let server = Server::start(dir.path()).await;
    let failed = server.get("consolidate", &running_id).await;
    assert_eq!(failed["status"]["state"], "TASK_STATE_FAILED");
    let reason = failed["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(reason.contains("server stopped"), "{reason}");
    assert_eq!(
        failed["history"][0]["parts"][0]["text"],
        transcripts.join("\n")
    );
    assert!(
        failed["history"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["parts"][0]["text"] == "transcript 2/40")
    );

    let echo = server.get("echo", done["id"].as_str().unwrap()).await;
    assert_eq!(echo["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        echo["artifacts"][0]["parts"][0]["text"],
        "kept across restarts"
    );

    let waiting_id = waiting["id"].as_str().unwrap();
    assert_eq!(
        server.get("consolidate", waiting_id).await["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let resumed = server
        .send(
            "consolidate",
            "the user is vegetarian",
            false,
            Some(waiting_id),
        )
        .await;
    assert_eq!(resumed["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        resumed["artifacts"][0]["parts"][0]["text"],
        "- the user is vegetarian"
    );
    assert_eq!(resumed["contextId"], waiting["contextId"]);
}

/// SIGTERM ends open streams (clients resume elsewhere), lets agent runs finish within
/// the grace period, and exits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_streams_and_exits() {
    use futures::StreamExt;

    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).await;
    let message = json!({"message": {"messageId": uuid(), "role": "ROLE_USER",
        "parts": [{"text": "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight"}]}});
    let response = reqwest::Client::new()
        .post(format!("{}/agents/consolidate/message:stream", server.base))
        .header("A2A-Version", "1.0")
        .json(&message)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("TASK_STATE_SUBMITTED"));

    server.process.sigterm();
    let mut relayed = String::from_utf8_lossy(&first).into_owned();
    let drained = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(chunk)) = body.next().await {
            relayed.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    assert!(drained.is_ok(), "the stream did not end after SIGTERM");
    // Ended by the shutdown, not by the task: the run (eight transcripts, 200 ms
    // each) was still going.
    assert!(
        !relayed.contains("TASK_STATE_COMPLETED"),
        "the stream ran to the task's end: {relayed}"
    );

    let mut server = server;
    let mut exit = None;
    for _ in 0..150 {
        if let Some(status) = server.0.process.0.try_wait().unwrap() {
            exit = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let exit = exit.expect("switchboard exits within 15 s of SIGTERM");
    assert!(exit.success(), "{exit:?}");
    // A graceful stop leaves the store checkpointed: the redb file alone holds
    // everything, so a start without the journal's files finds the task as it ended.
    let task_id = first_task_id(&first);
    let ended = {
        let server = Server::start(dir.path()).await;
        let task = server.get("consolidate", &task_id).await;
        let state = task["status"]["state"].clone();
        // The run finished within the grace period (one cut short would be failed
        // by this start).
        assert_eq!(state, "TASK_STATE_COMPLETED", "{task}");
        state
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    for name in ["switchboard.redb.journal", "switchboard.redb.journal.1"] {
        let _ = std::fs::remove_file(dir.path().join(name));
    }
    let server = Server::start(dir.path()).await;
    let task = server.get("consolidate", &task_id).await;
    assert_eq!(
        task["status"]["state"], ended,
        "the task without the journal: {task}"
    );
}

/// The task id in the first event of a stream (`data: {"task": {"id": …}}`).
fn first_task_id(chunk: &[u8]) -> String {
    let text = String::from_utf8_lossy(chunk);
    let data = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .expect("an SSE data line");
    let event: Value = serde_json::from_str(data.trim()).unwrap();
    event["task"]["id"].as_str().expect("a task id").to_owned()
}

/// Resume across a crash: read part of a stream, lose the connection, kill -9 the
/// server, start it again, and resume with Last-Event-ID: the events continue exactly
/// after the cursor, with no gap and no duplicate, ending with the failure the restart
/// recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_kill_9_has_no_gap() {
    use futures::StreamExt;

    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).await;
    let transcripts: Vec<String> = (1..=40)
        .map(|i| format!("the user said thing {i}"))
        .collect();
    let message = json!({"message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": transcripts.join("\n")}]}});
    let response = reqwest::Client::new()
        .post(format!("{}/agents/consolidate/message:stream", server.base))
        .header("A2A-Version", "1.0")
        .json(&message)
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    let mut task_id = String::new();
    while !seen.contains("\nid: 5\n") && !seen.contains("\nid:5\n") {
        let chunk = body.next().await.unwrap().unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if task_id.is_empty()
            && let Some(start) = seen.find("\"id\":\"")
        {
            task_id = seen[start + 6..].split('"').next().unwrap().to_owned();
        }
    }
    drop(body);
    server.kill_9();

    let server = Server::start(dir.path()).await;
    let resumed = reqwest::Client::new()
        .get(format!(
            "{}/agents/consolidate/tasks/{task_id}:subscribe",
            server.base
        ))
        .header("A2A-Version", "1.0")
        .header("Last-Event-ID", "5")
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let text = tokio::time::timeout(Duration::from_secs(10), resumed.text())
        .await
        .unwrap()
        .unwrap();
    let ids: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|i| i.trim().parse().unwrap())
        .collect();
    assert!(!ids.is_empty(), "{text}");
    let expected: Vec<u64> = (6..6 + ids.len() as u64).collect();
    assert_eq!(ids, expected, "contiguous after the cursor");
    let last = text.lines().rfind(|l| l.starts_with("data:")).unwrap();
    assert!(last.contains("TASK_STATE_FAILED"), "{last}");
}

/// A task left waiting for input past its deadline is canceled with the reason, and the
/// cancel reaches the task's webhook like any other transition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_deadline_cancels_and_notifies() {
    use axum::routing::post;
    use std::sync::{Arc, Mutex};

    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(move |axum::Json(body): axum::Json<Value>| {
            let sink = sink.clone();
            async move {
                sink.lock().unwrap().push(body);
                "ok"
            }
        }),
    );
    let hook = format!("{}/hook", serve_locally(app).await);

    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "input_timeout_secs = 1\ndefault_agent = \"consolidate\"\n[[agents]]\nname = \"consolidate\"\nkind = \"consolidate\"\npause_ms = 1\n",
    );
    let server = Server::start_with(
        dir.path(),
        &[
            "--config",
            config.to_str().unwrap(),
            "--webhook-allow",
            "127.0.0.1/32",
        ],
    )
    .await;
    let waiting = server
        .send(
            "consolidate",
            "the user is vegan\nthe user ordered bacon",
            false,
            None,
        )
        .await;
    assert_eq!(waiting["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let id = waiting["id"].as_str().unwrap();
    server
        .rpc(
            "consolidate",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": hook}),
        )
        .await;

    let mut canceled = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        canceled = received
            .lock()
            .unwrap()
            .iter()
            .find(|b| b["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED")
            .cloned();
        if canceled.is_some() {
            break;
        }
    }
    let canceled = canceled.expect("the cancel reached the webhook");
    let reason = canceled["statusUpdate"]["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(reason.contains("no answer arrived"), "{reason}");
    assert_eq!(
        server.get("consolidate", id).await["status"]["state"],
        "TASK_STATE_CANCELED"
    );
}

/// A restart in the middle of a delivery loses nothing: the webhook was failing and
/// waiting to retry when the server was killed; after the restart every event owed is
/// delivered, in order, exactly once accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_deliveries_survive_kill_9() {
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::post;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    let accepting = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicUsize::new(0));
    let accepted: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let (flag, refusals, sink) = (accepting.clone(), refused.clone(), accepted.clone());
    let app = axum::Router::new().route(
        "/hook",
        post(
            move |headers: HeaderMap, axum::Json(body): axum::Json<Value>| {
                let (flag, refusals, sink) = (flag.clone(), refusals.clone(), sink.clone());
                async move {
                    if !flag.load(Ordering::SeqCst) {
                        refusals.fetch_add(1, Ordering::SeqCst);
                        return StatusCode::SERVICE_UNAVAILABLE;
                    }
                    let id = headers["webhook-id"].to_str().unwrap().to_owned();
                    sink.lock().unwrap().push((id, body));
                    StatusCode::OK
                }
            },
        ),
    );
    let hook = format!("{}/hook", serve_locally(app).await);

    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "webhook_retry_delays_ms = [60000]\ndefault_agent = \"echo\"\n[[agents]]\nname = \"echo\"\nkind = \"echo\"\n",
    );
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--webhook-allow",
        "127.0.0.1/32",
    ];
    let server = Server::start_with(dir.path(), &args).await;
    let message = json!({"message": {"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": "deliver me"}]},
        "configuration": {"taskPushNotificationConfig": {"url": hook}}});
    let task = server.rpc("echo", "SendMessage", message).await["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    let task_id = task["id"].as_str().unwrap().to_owned();
    // Once the first delivery has been refused (it now waits a minute to retry), kill
    // the server.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while refused.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no delivery attempt reached the receiver before the kill"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill_9();

    accepting.store(true, Ordering::SeqCst);
    let _server = Server::start_with(dir.path(), &args).await;
    let mut ids = Vec::new();
    for _ in 0..100 {
        ids = accepted
            .lock()
            .unwrap()
            .iter()
            .map(|(id, _)| id.clone())
            .collect();
        if ids.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let expected: Vec<String> = (2..=4).map(|seq| format!("{task_id}:{seq}")).collect();
    assert_eq!(
        ids, expected,
        "working, the artifact and completed, in order, once each"
    );
    let last = accepted.lock().unwrap()[2].1.clone();
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

/// JWT bearer auth from a JWKS file: a signed token is accepted and names the principal,
/// anything else gets 401, and the card declares the scheme.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwt_from_a_jwks_file() {
    use base64::Engine;
    use jsonwebtoken::{EncodingKey, Header, encode};

    let secret = b"jwt-test-key-of-thirty-two-bytes";
    let dir = tempfile::tempdir().unwrap();
    let k = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
    let jwks = dir.path().join("jwks.json");
    std::fs::write(
        &jwks,
        json!({"keys": [{"kty": "oct", "kid": "main", "alg": "HS256", "k": k}]}).to_string(),
    )
    .unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "default_agent = \"echo\"\n[[agents]]\nname = \"echo\"\nkind = \"echo\"\n[agents.auth.jwt]\njwks_file = {:?}\nissuer = \"https://idp.test\"\n",
            jwks.to_str().unwrap()
        ),
    );
    let server = Server::start_with(dir.path(), &["--config", config.to_str().unwrap()]).await;
    let card: Value = reqwest::get(format!(
        "{}/agents/echo/.well-known/agent-card.json",
        server.base
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        card["securitySchemes"]["jwt"]["httpAuthSecurityScheme"]["bearerFormat"],
        "JWT"
    );

    let claims = json!({"sub": "carol", "iss": "https://idp.test", "exp": jsonwebtoken::get_current_timestamp() + 600});
    let header = Header {
        kid: Some("main".into()),
        ..Header::new(jsonwebtoken::Algorithm::HS256)
    };
    let token = encode(&header, &claims, &EncodingKey::from_secret(secret)).unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}});
    let call = |bearer: Option<String>| {
        let mut request = reqwest::Client::new()
            .post(format!("{}/agents/echo/a2a", server.base))
            .header("A2A-Version", "1.0")
            .json(&body);
        if let Some(b) = bearer {
            request = request.bearer_auth(b);
        }
        request.send()
    };
    assert_eq!(call(Some(token)).await.unwrap().status(), 200);
    assert_eq!(call(None).await.unwrap().status(), 401);
    let forged = encode(
        &header,
        &claims,
        &EncodingKey::from_secret(b"some-other-key-some-other-key-!!"),
    )
    .unwrap();
    assert_eq!(call(Some(forged)).await.unwrap().status(), 401);
}

/// A request head over `max_header_bytes` (8 KiB by default) is refused with 431, one
/// just under it is served; `max_header_bytes` raises the limit.
#[tokio::test]
async fn request_heads_are_limited_to_max_header_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("switchboard.toml");
    let status = |base: String, header_bytes: usize| async move {
        reqwest::Client::new()
            .get(format!("{base}/.well-known/agent-card.json"))
            .header("x-padding", "a".repeat(header_bytes))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    let server = Server::start(&dir.path().join("default")).await;
    assert_eq!(status(server.base.clone(), 7 * 1024).await, 200);
    assert_eq!(status(server.base.clone(), 9 * 1024).await, 431);
    drop(server);
    std::fs::write(&config, "max_header_bytes = 32768\n").unwrap();
    let config = config.to_str().unwrap();
    let raised = Server::start_with(&dir.path().join("raised"), &["--config", config]).await;
    assert_eq!(status(raised.base.clone(), 20 * 1024).await, 200);
}

/// `/metrics` counts requests by operation and outcome, task events by state, and open
/// streams, in the Prometheus text format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_scraped() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).await;
    server.send("echo", "count me", false, None).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "missing"}});
    reqwest::Client::new()
        .post(format!("{}/agents/echo/a2a", server.base))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    let response = reqwest::get(format!("{}/metrics", server.base))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    for expected in [
        r#"switchboard_requests_total{binding="jsonrpc",operation="SendMessage",outcome="ok"} 1"#,
        r#"switchboard_requests_total{binding="jsonrpc",operation="GetTask",outcome="TASK_NOT_FOUND"} 1"#,
        r#"switchboard_task_events_total{state="TASK_STATE_COMPLETED"} 1"#,
        r#"switchboard_task_events_total{state="ARTIFACT_UPDATE"} 1"#,
        "switchboard_open_streams 0",
    ] {
        assert!(text.contains(expected), "missing {expected} in:\n{text}");
    }
}

/// The binary turns transparent huge pages off for itself: with them, each held
/// connection cost ~35% more memory (mimalloc's arenas backed by 2 MiB pages).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn transparent_huge_pages_are_off() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path()).await;
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", server.process.0.id())).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["THP_enabled:", "0"]),
        "{status}"
    );
}

/// A routed task outlives kill -9: its attempt's run died with the process (and is
/// failed at the start), the routing agent's turn is run again, sees that and sends the
/// task on to the other agent with the skill; a cancel then reaches that attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routed_task_is_sent_on_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "default_agent = \"\"\n[[agents]]\nname = \"first\"\nkind = \"bench\"\n[[agents]]\nname = \"second\"\nkind = \"bench\"\n",
    );
    let args = ["--config", config.to_str().unwrap()];
    let server = Server::start_with(dir.path(), &args).await;
    let message = json!({"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": "hold"}],
        "metadata": {"skill": "bench"}});
    let params = json!({"message": message, "configuration": {"returnImmediately": true}});
    let id = server.rpc("fleet", "SendMessage", params).await["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut routed = Value::Null;
    for _ in 0..100 {
        routed = server.get("fleet", &id).await;
        if routed["metadata"]["switchboard.routing"]["attempts"][0]["taskId"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let first = routed["metadata"]["switchboard.routing"]["attempts"][0].clone();
    assert!(
        first["taskId"].is_string(),
        "routed before the kill: {routed}"
    );
    server.kill_9();

    let server = Server::start_with(dir.path(), &args).await;
    let mut attempts = Vec::new();
    for _ in 0..200 {
        let routed = server.get("fleet", &id).await;
        attempts = routed["metadata"]["switchboard.routing"]["attempts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if attempts.len() == 2 && attempts[1]["taskId"].is_string() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(attempts.len(), 2, "sent on after the restart: {attempts:?}");
    assert_eq!(attempts[0]["agent"], first["agent"]);
    assert_eq!(attempts[0]["outcome"], "failed", "{attempts:?}");
    assert_ne!(attempts[1]["agent"], first["agent"], "to the other agent");
    let cut_off = server
        .get(
            first["agent"].as_str().unwrap(),
            first["taskId"].as_str().unwrap(),
        )
        .await;
    assert_eq!(cut_off["status"]["state"], "TASK_STATE_FAILED", "{cut_off}");

    let canceled = server.rpc("fleet", "CancelTask", json!({"id": id})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let (agent, task) = (
        attempts[1]["agent"].as_str().unwrap(),
        attempts[1]["taskId"].as_str().unwrap(),
    );
    let mut state = Value::Null;
    for _ in 0..100 {
        state = server.get(agent, task).await["status"]["state"].clone();
        if state == "TASK_STATE_CANCELED" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        state, "TASK_STATE_CANCELED",
        "the cancel reached the second attempt"
    );
}
