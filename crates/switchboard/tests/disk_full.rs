//! A full disk under the embedded store, on the real binary: writes fail with a clear,
//! retryable error (never a hang or a crash), and once the store can take no more writes
//! until it is reopened, `/healthz` answers 503 with the reason and `switchboard health`
//! fails, so a supervisor restarts the process instead of leaving it up and refusing
//! every write. The disk is a small tmpfs, which needs root to mount; where it cannot be
//! mounted the test says so and does not run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::zombie_processes)] // test harness; Drop reaps the child
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

#[path = "support/process.rs"]
mod process;

use process::Served;

/// A tmpfs of a few megabytes, unmounted on drop.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap().keep();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if mounted {
            Some(SmallDisk(dir))
        } else {
            let _ = std::fs::remove_dir(&dir);
            None
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

async fn start(data_dir: &Path) -> Served {
    let args = [OsStr::new("--data-dir"), data_dir.as_os_str()];
    process::serve_quiet(process::free_port(), &args).await
}

async fn send(server: &Served, text: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"role": "ROLE_USER", "messageId": uuid(), "parts": [{"text": text}]}}});
    let response = tokio::time::timeout(
        Duration::from_secs(10),
        reqwest::Client::new()
            .post(format!("{}/agents/echo/a2a", server.base))
            .header("A2A-Version", "1.0")
            .json(&body)
            .send(),
    )
    .await
    .expect("an answer, not a hang")
    .unwrap();
    response.json().await.unwrap()
}

fn uuid() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("m-{nanos}")
}

async fn health(server: &Served) -> (u16, String) {
    let response = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_writes_clearly_and_health_reports_it() {
    let Some(disk) = SmallDisk::mount("4m") else {
        eprintln!(
            "a_full_disk_fails_writes_clearly_and_health_reports_it: not run (cannot mount a tmpfs; needs root)"
        );
        return;
    };
    let server = start(&disk.0).await;
    assert_eq!(health(&server).await.0, 200);
    // Each task stores its text twice (message and artifact): a few hundred fill 4 MB.
    let text = "x".repeat(32 * 1024);
    let mut refused = None;
    for _ in 0..2000 {
        let response = send(&server, &text).await;
        if let Some(error) = response.get("error") {
            refused = Some(error.clone());
            break;
        }
        // Tasks complete until the disk fills. One whose last report met the full disk
        // is failed with the reason, or, when that cannot be stored either, answered
        // with the error: never as the store last had it (still working).
        let status = &response["result"]["task"]["status"];
        let state = status["state"].as_str().unwrap_or_default();
        assert!(
            matches!(state, "TASK_STATE_COMPLETED" | "TASK_STATE_FAILED"),
            "{state}: {}",
            status["message"]
        );
    }
    let error = refused.expect("a 4 MB disk refuses writes at some point");
    assert_eq!(error["code"], -32603, "an internal error: {error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("store"), "says what failed: {error}");

    // Once the store cannot take writes until it is reopened, health says so. Until
    // then writes keep coming (a checkpoint may free some room), and each is answered.
    let mut reported = None;
    for _ in 0..200 {
        let (status, body) = health(&server).await;
        if status == 503 {
            reported = Some(body);
            break;
        }
        send(&server, &text).await;
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let body = reported.expect("/healthz reports the broken store");
    assert!(body.contains("disk full"), "{body}");
    let probe = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["health", &format!("127.0.0.1:{}", server.port)])
        .output()
        .unwrap();
    // Fails because the server answered unhealthy: not because it is gone (a crash),
    // nor for a usage error.
    let said = String::from_utf8_lossy(&probe.stderr);
    assert_eq!(
        probe.status.code(),
        Some(1),
        "the container health check fails too: {said}"
    );
    assert!(said.contains("is not healthy"), "{said}");
}
