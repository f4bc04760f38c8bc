//! The binary's command line: an invalid configuration is reported and exits with 64.

#![allow(clippy::unwrap_used)] // test harness

use std::process::Command;

fn switchboard(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn invalid_config_exits_64_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "default_agent = \"ghost\"\n").unwrap();
    let out = switchboard(&["serve", "--config", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("default_agent \"ghost\""), "{stderr}");

    let out = switchboard(&[
        "serve",
        "--config",
        dir.path().join("missing.toml").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read config file"));

    let out = switchboard(&["serve", "--max-body-bytes", "10"]);
    assert_eq!(out.status.code(), Some(64));
}

#[test]
fn check_accepts_a_good_config() {
    let out = switchboard(&["serve", "--check", "--memory"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("config ok: 3 agent(s)"));
}

#[test]
fn health_fails_when_nothing_listens() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = switchboard(&["health", &format!("127.0.0.1:{port}")]);
    assert!(!out.status.success());
}
