//! Card discovery against the official SDK servers (the benchmark's peers: a2a-sdk for
//! Python, @a2a-js/sdk, each serving its card the SDK's own way). They need
//! `bench/peers/setup.sh` first, so these run apart: `scripts/test.sh` sets the peers up,
//! then runs `cargo test -p sb-client --test sdk_peers -- --ignored`.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sb_client::discovery::discover;
use sb_client::interface::{Binding, Preferences, choose};

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

async fn discovers(name: &str) {
    let (_peer, base) = peer(name).await;
    let found = discover(&reqwest::Client::new(), &base, None)
        .await
        .unwrap();
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
}

#[tokio::test]
#[ignore = "needs bench/peers/setup.sh; scripts/test.sh runs it"]
async fn the_python_sdk_servers_card() {
    discovers("python").await;
}

#[tokio::test]
#[ignore = "needs bench/peers/setup.sh; scripts/test.sh runs it"]
async fn the_js_sdk_servers_card() {
    discovers("js").await;
}
