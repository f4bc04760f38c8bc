//! `switchboard serve` as a child process of a test, on a port of its own.

use std::ffi::OsStr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A loopback port nothing listens on now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `switchboard serve --listen 127.0.0.1:{port}` with `args`, once `/healthz` answers
/// (its logs at WARN on the test's stderr).
pub(crate) async fn serve<S: AsRef<OsStr>>(port: u16, args: &[S]) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    for _ in 0..400 {
        if reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
            .await
            .is_ok()
        {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("switchboard did not become healthy on port {port}");
}
