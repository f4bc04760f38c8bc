//! Card discovery and the JSON-RPC calls against the official SDK servers (the benchmark's peers: a2a-sdk for
//! Python, @a2a-js/sdk, each serving its card the SDK's own way). They need
//! `bench/peers/setup.sh` first, so these run apart: `scripts/test.sh` sets the peers up,
//! then runs `cargo test -p sb-client --test sdk_peers -- --ignored`.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sb_client::discovery::discover;
use sb_client::follow::{FollowSettings, Follower};
use sb_client::interface::{Binding, Preferences, choose};
use sb_client::{CallError, Placement, connect};
use sb_protocol::requests::SendMessageRequest;
use sb_protocol::{ErrorKind, SendMessageResponse, StreamResponse, TaskState};
use serde_json::json;

struct Peer(Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `bench/peers/run-{name}.sh` on a free port; its base URL once it answers.
async fn peer(name: &str) -> (Peer, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../bench/peers/run-{name}.sh"));
    let child = Command::new("bash")
        .arg(script)
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let peer = Peer(child);
    let base = format!("http://127.0.0.1:{port}");
    for _ in 0..300 {
        if reqwest::get(format!("{base}/.well-known/agent-card.json"))
            .await
            .is_ok()
        {
            return (peer, base);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the {name} peer did not answer on {base} (run bench/peers/setup.sh first)");
}

async fn discovers_and_calls(name: &str) {
    let (_peer, base) = peer(name).await;
    let http = reqwest::Client::new();
    let found = discover(&http, &base, None).await.unwrap();
    assert_eq!(found.card.name, "bench", "{name}");
    assert_eq!(found.card.skills[0].id, "bench", "{name}");
    assert_eq!(found.card.capabilities.streaming, Some(true), "{name}");
    let chosen = choose(&found.card, &Preferences::default()).unwrap();
    assert_eq!(
        (chosen.binding, chosen.version.as_str()),
        (Binding::JsonRpc, "1.0"),
        "{name}"
    );
    assert!(chosen.url.starts_with(&base), "{name}: {}", chosen.url);

    // The calls, on the interface chosen.
    let client = connect(http, &chosen, Placement::default()).unwrap();
    let request: SendMessageRequest = serde_json::from_value(json!({
        "message": {"messageId": format!("m-{name}"), "role": "ROLE_USER", "parts": [{"text": "hello peer"}]}
    }))
    .unwrap();
    let SendMessageResponse::Task(task) = client.send(&request).await.unwrap() else {
        panic!("{name}: the echo peer answers with a task");
    };
    assert_eq!(task.status.state, TaskState::Completed, "{name}: {task:?}");
    let read = client.get_task(&task.id, None).await.unwrap();
    assert_eq!(
        (read.id.as_str(), read.status.state),
        (task.id.as_str(), TaskState::Completed)
    );
    let missing = client.get_task("no-such-task", None).await.unwrap_err();
    assert!(
        matches!(&missing, CallError::A2A(e) if e.kind == ErrorKind::TaskNotFound),
        "{name}: {missing:?}"
    );
    let done = client.cancel_task(&task.id).await.unwrap_err();
    assert!(
        matches!(&done, CallError::A2A(e) if e.kind == ErrorKind::TaskNotCancelable),
        "{name}: {done:?}"
    );

    // Following the task once it has ended: a subscription is refused (the JS SDK
    // answers with an SSE stream whose only event is the error), so the follower reads
    // the task instead.
    let settings = FollowSettings {
        idle_timeout: Duration::from_secs(10),
        streaming: true,
        resumable: false,
        call_timeout: Duration::from_secs(5),
    };
    let mut follower = Follower::new(&*client, &task.id, settings);
    // A follower that kept subscribing would be stalled after the idle timeout.
    let news = follower.next().await.unwrap();
    let StreamResponse::Task(read) = news else {
        panic!("{name}: the task as read, not {news:?}");
    };
    assert_eq!(read.status.state, TaskState::Completed, "{name}");
}

#[tokio::test]
#[ignore = "needs bench/peers/setup.sh; scripts/test.sh runs it"]
async fn the_python_sdk_server_is_discovered_and_called() {
    discovers_and_calls("python").await;
}

#[tokio::test]
#[ignore = "needs bench/peers/setup.sh; scripts/test.sh runs it"]
async fn the_js_sdk_server_is_discovered_and_called() {
    discovers_and_calls("js").await;
}
