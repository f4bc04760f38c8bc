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
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("max_body_bytes must be at least 1024"),
        "{stderr}"
    );
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
    // Exit 1 with the probe's reason: not a usage error (2) or a panic (101).
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("switchboard at 127.0.0.1:{port} did not answer")),
        "{stderr}"
    );
}

/// `serve --check --memory ARGS` with `envs` set (and none of those inherited).
fn check(args: &[&str], envs: &[(&str, &str)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(["serve", "--check", "--memory"])
        .args(args)
        .env_remove("SWITCHBOARD_LISTEN")
        .env_remove("SWITCHBOARD_SERVICES")
        .envs(envs.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn flags_win_over_the_environment_which_wins_over_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("listen.toml");
    std::fs::write(&file, "listen = \"127.0.0.1:9000\"\n").unwrap();
    let file = file.to_str().unwrap();
    let listening = |out: std::process::Output| {
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        stdout.trim().rsplit(' ').next().unwrap().to_owned()
    };
    assert_eq!(listening(check(&[], &[])), "127.0.0.1:8080");
    assert_eq!(listening(check(&["--config", file], &[])), "127.0.0.1:9000");
    let env = [("SWITCHBOARD_LISTEN", "127.0.0.1:9001")];
    assert_eq!(
        listening(check(&["--config", file], &env)),
        "127.0.0.1:9001"
    );
    let flag = ["--config", file, "--listen", "127.0.0.1:9002"];
    assert_eq!(listening(check(&flag, &env)), "127.0.0.1:9002");
}

#[test]
fn services_are_named_by_flag_or_environment() {
    let redis = ["--backend", "redis://127.0.0.1:6379"];
    let out = check(&[&redis[..], &["--services", "fanout,tasks"]].concat(), &[]);
    assert!(out.status.success(), "{out:?}");
    let out = check(&redis, &[("SWITCHBOARD_SERVICES", "fanout,dispatcher")]);
    assert!(out.status.success(), "{out:?}");

    // A wrong name is a configuration error, whichever way it came.
    for out in [
        check(
            &[&redis[..], &["--services", "fanout,worker"]].concat(),
            &[],
        ),
        check(&redis, &[("SWITCHBOARD_SERVICES", "worker")]),
    ] {
        assert_eq!(out.status.code(), Some(64), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(
                "unknown variant `worker`, expected one of `gateway`, `tasks`, `fanout`, `dispatcher`, `registry`"
            ) && stderr.contains("services"),
            "{stderr}"
        );
    }
}
