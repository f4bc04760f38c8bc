//! Child processes of a test: `switchboard serve` on a port of its own ([`Served`]), and
//! the guard that kills and reaps any child when the test lets go of it, a failed
//! assertion included ([`Reaped`]).

#![allow(dead_code)] // each test binary uses its part
use std::ffi::OsStr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// A loopback port nothing listens on now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A child process, killed (SIGKILL) and reaped when dropped, so no test leaves one
/// behind.
pub(crate) struct Reaped(pub(crate) Child);

impl Reaped {
    /// SIGKILL (no drain, the way a crash ends it), then reaps it.
    pub(crate) fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }

    /// Sends SIGTERM (the way an orchestrator stops it); does not wait.
    pub(crate) fn sigterm(&self) {
        let pid = self.0.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(sent.success(), "kill -TERM {pid} failed");
    }

    /// SIGTERM, then waits for its exit.
    pub(crate) fn terminate(&mut self) -> ExitStatus {
        self.sigterm();
        self.0.wait().unwrap()
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `switchboard serve` on `127.0.0.1:{port}`, healthy, killed when dropped.
pub(crate) struct Served {
    pub(crate) base: String,
    pub(crate) port: u16,
    pub(crate) process: Reaped,
    /// The directory of the configuration file [`serve_config`] wrote, removed with it.
    config_dir: Option<tempfile::TempDir>,
}

impl Served {
    /// The base URL of agent `name`.
    pub(crate) fn agent(&self, name: &str) -> String {
        format!("{}/agents/{name}", self.base)
    }

    /// SIGKILL: no drain.
    pub(crate) fn kill(&mut self) {
        self.process.kill();
    }
}

/// `switchboard serve --listen 127.0.0.1:{port}` with `args`, once `/healthz` answers
/// (its logs at WARN on the test's stderr).
pub(crate) async fn serve<S: AsRef<OsStr>>(port: u16, args: &[S]) -> Served {
    spawn_healthy(port, args, "warn", Stdio::inherit()).await
}

/// As [`serve`], its logs (errors only) dropped: for a test that makes it fail on
/// purpose, again and again.
pub(crate) async fn serve_quiet<S: AsRef<OsStr>>(port: u16, args: &[S]) -> Served {
    spawn_healthy(port, args, "error", Stdio::null()).await
}

/// As [`serve`] on a free port, with `--config` naming a file holding `toml` (in a
/// directory of its own) ahead of `args`.
pub(crate) async fn serve_config(toml: &str, args: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("switchboard.toml");
    std::fs::write(&config, toml).unwrap();
    let config = config.to_string_lossy().into_owned();
    let mut all = vec!["--config", config.as_str()];
    all.extend_from_slice(args);
    let mut served = serve(free_port(), &all).await;
    served.config_dir = Some(dir);
    served
}

async fn spawn_healthy<S: AsRef<OsStr>>(port: u16, args: &[S], log: &str, stderr: Stdio) -> Served {
    let child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(args)
        .env("RUST_LOG", log)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let served = Served {
        base: format!("http://127.0.0.1:{port}"),
        port,
        process: Reaped(child),
        config_dir: None,
    };
    for _ in 0..400 {
        if reqwest::get(format!("{}/healthz", served.base))
            .await
            .is_ok()
        {
            return served;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("switchboard did not become healthy on port {port}");
}
