//! The CLI's progress display, checked in a real terminal: `switchboard send` runs in a
//! tmux pane against a slow agent; the pane shows the spinner and the status line (the
//! state and the agent's latest progress message) while the task runs, and only the
//! result once it is done. Skipped, saying so, where tmux is not installed
//! (scripts/test.sh installs it).

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::process::Command;
use std::time::{Duration, Instant};

#[path = "support/process.rs"]
mod process;

/// The tmux server of the test, killed when the test ends, passed or failed.
struct TmuxServer(String);

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = tmux(&self.0, &["kill-server"]);
    }
}

fn tmux(socket: &str, args: &[&str]) -> std::io::Result<std::process::Output> {
    Command::new("tmux")
        .arg("-L")
        .arg(socket)
        .args(args)
        .output()
}

fn capture(socket: &str) -> String {
    let out = tmux(socket, &["capture-pane", "-p", "-t", "cli"]).unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn send_shows_a_spinner_and_status_line_then_only_the_result() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("SKIPPED: tmux is not installed (scripts/test.sh installs it)");
        return;
    }
    let server = process::serve_config(
        "default_agent = \"consolidate\"\n[[agents]]\nname = \"consolidate\"\nkind = \"consolidate\"\npause_ms = 700\n",
        &["--memory"],
    )
    .await;
    let port = server.port;
    let socket = format!("sb-cli-test-{}", std::process::id());
    let _tmux = TmuxServer(socket.clone());
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("run.sh");
    std::fs::write(
        &script,
        format!(
            "{} send http://127.0.0.1:{port}/agents/consolidate $'a\\nb\\nc\\nd\\ne'\necho \"EXIT=$?\"\nsleep 60\n",
            env!("CARGO_BIN_EXE_switchboard")
        ),
    )
    .unwrap();
    let script = script.to_string_lossy().into_owned();
    let started = tmux(
        &socket,
        &[
            "new-session",
            "-d",
            "-s",
            "cli",
            "-x",
            "160",
            "-y",
            "40",
            "bash",
            &script,
        ],
    )
    .unwrap();
    assert!(started.status.success(), "{started:?}");

    // While it runs: the spinner, the task, the elapsed time, the state and the
    // agent's latest progress message, on one line.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut seen = None;
    while Instant::now() < deadline {
        let screen = capture(&socket);
        if let Some(line) = screen.lines().find(|l| l.contains("working: transcript")) {
            seen = Some(line.to_owned());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let line = seen.expect("the status line while the task runs");
    assert!(
        line.contains("task ") && line.contains("s] working: transcript"),
        "{line}"
    );
    let spinner = line.trim_start().chars().next().unwrap();
    assert!(!spinner.is_ascii_alphanumeric(), "a spinner first: {line}");

    // Done: the result alone, the status line cleared.
    let mut screen = String::new();
    while Instant::now() < deadline + Duration::from_secs(15) {
        screen = capture(&socket);
        if screen.contains("EXIT=") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(screen.contains("State: completed"), "{screen}");
    assert!(screen.contains("Artifact facts:\n- a\n- b"), "{screen}");
    assert!(!screen.contains("working: transcript"), "{screen}");
    let first = screen.lines().find(|l| !l.trim().is_empty()).unwrap();
    assert!(first.starts_with("Task ID: "), "the result first: {screen}");
}
