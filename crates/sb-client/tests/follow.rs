//! Following a task against a scripted A2A 0.3 JSON-RPC server that answers as
//! @a2a-js/sdk does: a subscription to a task that has ended is an SSE stream whose
//! only event is the JSON-RPC error.

#![allow(clippy::unwrap_used)] // test harness

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use sb_client::follow::{FollowError, FollowSettings, Follower};
use sb_client::interface::{Binding, Chosen};
use sb_client::{CallError, Placement, connect};
use sb_protocol::{ErrorKind, StreamResponse, TaskState};
use serde_json::{Value, json};

/// Calls of each method the server saw.
#[derive(Default)]
struct Calls {
    resubscribe: AtomicUsize,
    get: AtomicUsize,
}

/// The server; `known` says whether it has the task (a completed one) at all.
async fn server(known: bool) -> (String, Arc<Calls>) {
    use axum::http::header::CONTENT_TYPE;
    use axum::routing::post;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let calls = Arc::new(Calls::default());
    let seen = calls.clone();
    let app = axum::Router::new().route(
        "/rpc",
        post(move |axum::Json(request): axum::Json<Value>| {
            let seen = seen.clone();
            async move {
                let id = request["id"].clone();
                let error = |code: i64, message: &str| {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
                };
                match request["method"].as_str() {
                    Some("tasks/resubscribe") => {
                        seen.resubscribe.fetch_add(1, Ordering::SeqCst);
                        let refused = match known {
                            true => error(-32004, "Task t1 is in a terminal state and cannot be subscribed to"),
                            false => error(-32001, "Task not found: t1"),
                        };
                        let body = format!("data: {refused}\n\n");
                        ([(CONTENT_TYPE, "text/event-stream")], body)
                    }
                    Some("tasks/get") => {
                        seen.get.fetch_add(1, Ordering::SeqCst);
                        let task = json!({"jsonrpc": "2.0", "id": id, "result": {
                            "kind": "task", "id": "t1", "contextId": "c1",
                            "status": {"state": "completed"}}});
                        let body = match known {
                            true => task,
                            false => error(-32001, "Task not found: t1"),
                        };
                        ([(CONTENT_TYPE, "application/json")], body.to_string())
                    }
                    _ => (
                        [(CONTENT_TYPE, "application/json")],
                        error(-32601, "no such method").to_string(),
                    ),
                }
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("{base}/rpc"), calls)
}

fn settings() -> FollowSettings {
    FollowSettings {
        idle_timeout: Duration::from_secs(5),
        streaming: true,
        resumable: false,
        call_timeout: Duration::from_secs(2),
    }
}

fn legacy(url: String) -> Arc<dyn sb_client::Transport> {
    let chosen = Chosen {
        binding: Binding::JsonRpc,
        version: "0.3".into(),
        url,
        tenant: None,
    };
    connect(reqwest::Client::new(), &chosen, Placement::default()).unwrap()
}

/// A refusal inside the stream is a refused subscription: the follower reads the task
/// instead of subscribing again and again (which would stall it).
#[tokio::test]
async fn a_subscription_refused_inside_its_stream_falls_back_to_reading_the_task() {
    let (url, calls) = server(true).await;
    let transport = legacy(url);
    let mut follower = Follower::new(&*transport, "t1", settings());
    let news = follower.next().await.unwrap();
    let StreamResponse::Task(task) = news else {
        panic!("the task as read, not {news:?}");
    };
    assert_eq!(task.status.state, TaskState::Completed);
    let count = |c: &AtomicUsize| c.load(Ordering::SeqCst);
    assert_eq!((count(&calls.resubscribe), count(&calls.get)), (1, 1));
}

/// A task the server does not know is lost, whether the stream or a read says so.
#[tokio::test]
async fn a_task_not_found_inside_the_stream_is_lost() {
    let (url, calls) = server(false).await;
    let transport = legacy(url);
    let mut follower = Follower::new(&*transport, "t1", settings());
    let error = follower.next().await.unwrap_err();
    assert!(
        matches!(&error, FollowError::Lost(CallError::A2A(e)) if e.kind == ErrorKind::TaskNotFound),
        "{error:?}"
    );
    assert_eq!(calls.resubscribe.load(Ordering::SeqCst), 1);
}

/// A server whose subscription streams the task, completed, and ends its stream a
/// moment later (as servers do once a task has ended); it records the client port of
/// each request, one per connection.
async fn ending_server() -> (String, Arc<std::sync::Mutex<Vec<u16>>>) {
    use axum::extract::ConnectInfo;
    use axum::http::header::CONTENT_TYPE;
    use axum::routing::post;
    use std::net::SocketAddr;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let ports: Arc<std::sync::Mutex<Vec<u16>>> = Arc::default();
    let seen = ports.clone();
    let app = axum::Router::new().route(
        "/rpc",
        post(
            move |ConnectInfo(peer): ConnectInfo<SocketAddr>,
                  axum::Json(request): axum::Json<Value>| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push(peer.port());
                    let task = json!({"jsonrpc": "2.0", "id": request["id"], "result": {
                        "kind": "task", "id": "t1", "contextId": "c1",
                        "status": {"state": "completed"}}});
                    let frames = futures::stream::iter([Ok::<_, std::io::Error>(format!(
                        "data: {task}\n\n"
                    ))])
                    .chain(futures::stream::once(async {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        Ok(String::new())
                    }));
                    (
                        [(CONTENT_TYPE, "text/event-stream")],
                        axum::body::Body::from_stream(frames),
                    )
                }
            },
        ),
    );
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await.unwrap() });
    (format!("{base}/rpc"), ports)
}

/// A finished follower lets its stream end instead of dropping it mid-body, so the
/// next call goes over the same connection (for a server on the Python SDK, a new
/// connection costs about as much as half a request).
#[tokio::test]
async fn a_finished_follower_leaves_its_connection_to_the_next_call() {
    let (url, ports) = ending_server().await;
    let transport = legacy(url);
    for _ in 0..3 {
        let mut follower = Follower::new(&*transport, "t1", settings());
        let news = follower.next().await.unwrap();
        assert!(matches!(news, StreamResponse::Task(_)), "{news:?}");
        follower.finish();
        // The server ends the stream 100 ms after its last event.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let ports = ports.lock().unwrap().clone();
    assert_eq!(ports.len(), 3, "{ports:?}");
    assert!(
        ports.iter().all(|p| *p == ports[0]),
        "one connection each: {ports:?}"
    );
}
