//! The split deployment as real processes (`scripts/local-cluster.sh`) for the cluster
//! tests: starting and stopping it, its processes and logs, and the calls the tests make.

#![allow(dead_code)] // each test binary uses its part
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

/// Clusters are ten processes each: one at a time on a small machine.
pub(crate) static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub(crate) const CONFIG: &str = r#"
default_agent = "echo"
webhook_retry_delays_ms = [60000]
[[agents]]
name = "echo"
kind = "echo"
[[agents]]
name = "consolidate"
kind = "consolidate"
pause_ms = 100
[[agents]]
name = "slow-fail"
kind = "consolidate"
pause_ms = 200
on_worker_lost = "fail"
[[agents]]
name = "slow-reassign"
kind = "consolidate"
pause_ms = 200
on_worker_lost = "reassign"
[[agents]]
name = "bench"
kind = "bench"
[[agents]]
name = "summarizer"
kind = "bench"
[[agents]]
name = "drafter"
kind = "bench"
"#;

pub(crate) const ADMIN_TOKEN: &str = "cluster-admin-token-0123456789";

pub(crate) struct Cluster {
    pub(crate) dir: tempfile::TempDir,
}

pub(crate) fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/local-cluster.sh")
}

impl Cluster {
    pub(crate) fn up() -> Cluster {
        Cluster::up_with(&[])
    }

    pub(crate) fn up_with(env: &[(&str, &str)]) -> Cluster {
        Cluster::up_configured("", env)
    }

    /// A cluster whose configuration is [`CONFIG`] and `extra` after it.
    pub(crate) fn up_configured(extra: &str, env: &[(&str, &str)]) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("switchboard.toml");
        std::fs::write(&config, format!("{CONFIG}{extra}")).unwrap();
        let cluster = Cluster { dir };
        cluster.start_all(env);
        cluster
    }

    /// `local-cluster.sh up` with the cluster's settings and `env`.
    fn start_all(&self, env: &[(&str, &str)]) {
        let status = self
            .script(&["up"])
            .env("SWITCHBOARD_BIN", env!("CARGO_BIN_EXE_switchboard"))
            .env(
                "SWITCHBOARD_CONFIG",
                self.dir.path().join("switchboard.toml"),
            )
            .env("SWITCHBOARD_WEBHOOK_ALLOW", "127.0.0.1/32")
            .env("RUST_LOG", "info")
            .env("SWITCHBOARD_ADMIN_TOKEN", ADMIN_TOKEN)
            .envs(env.iter().copied())
            .status()
            .unwrap();
        assert!(status.success(), "local-cluster.sh up failed");
    }

    /// Stops every process, Redis too, and starts them all again (Redis from its AOF;
    /// the services on new ports).
    pub(crate) fn restart_all(&self) {
        self.run(&["down"]);
        self.start_all(&[]);
    }

    pub(crate) fn script(&self, args: &[&str]) -> Command {
        let mut command = Command::new("bash");
        command
            .arg(script())
            .args(args)
            .env("CLUSTER_DIR", self.dir.path().join("cluster"));
        command
    }

    pub(crate) fn run(&self, args: &[&str]) {
        assert!(self.script(args).status().unwrap().success(), "{args:?}");
    }

    /// `(role, pid, port)` of every process started so far.
    pub(crate) fn processes(&self) -> Vec<(String, u32, String)> {
        let text = std::fs::read_to_string(self.dir.path().join("cluster/processes")).unwrap();
        text.lines()
            .map(|line| {
                let mut parts = line.split_whitespace();
                let role = parts.next().unwrap().to_owned();
                let pid = parts.next().unwrap().parse().unwrap();
                (role, pid, parts.next().unwrap().to_owned())
            })
            .collect()
    }

    pub(crate) fn ports(&self, role: &str) -> Vec<String> {
        let all = self.processes().into_iter();
        all.filter(|(r, pid, _)| r == role && alive(*pid))
            .map(|(_, _, port)| port)
            .collect()
    }

    pub(crate) fn pids(&self, role: &str) -> Vec<u32> {
        let all = self.processes().into_iter();
        all.filter(|(r, pid, _)| r == role && alive(*pid))
            .map(|(_, pid, _)| pid)
            .collect()
    }

    pub(crate) fn gateway(&self, index: usize) -> String {
        format!("http://127.0.0.1:{}", self.ports("gateway")[index])
    }

    pub(crate) fn log(&self, role: &str) -> String {
        let mut all = String::new();
        for entry in std::fs::read_dir(self.dir.path().join("cluster/logs")).unwrap() {
            let path = entry.unwrap().path();
            if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(role)
            {
                all.push_str(&std::fs::read_to_string(path).unwrap_or_default());
            }
        }
        all
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.script(&["down"]).status();
        // The cluster's directory goes with it: a failed test shows what its processes
        // warned about, or CI leaves nothing to diagnose.
        if std::thread::panicking() {
            eprintln!("{}", self.warnings());
        }
    }
}

impl Cluster {
    /// Every log line at WARN or above, by process.
    pub(crate) fn warnings(&self) -> String {
        let Ok(logs) = std::fs::read_dir(self.dir.path().join("cluster/logs")) else {
            return "no cluster logs".to_owned();
        };
        let mut out = String::new();
        for path in logs.filter_map(|e| e.ok()).map(|e| e.path()) {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let lines = text
                .lines()
                .filter(|l| l.contains("WARN") || l.contains("ERROR") || l.contains("panicked"));
            for line in lines {
                out.push_str(&format!("{}: {line}\n", path.display()));
            }
        }
        out
    }
}

pub(crate) fn alive(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success()
}

pub(crate) fn kill_9(pid: u32) {
    assert!(
        Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    while alive(pid) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn message(text: &str) -> Value {
    json!({"messageId": format!("m-{}", uuid_like()), "role": "ROLE_USER", "parts": [{"text": text}]})
}

pub(crate) fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The whole JSON-RPC response, error or not.
pub(crate) async fn raw_rpc(base: &str, agent: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    reqwest::Client::new()
        .post(format!("{base}/agents/{agent}/a2a"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The result of a JSON-RPC call that must succeed.
pub(crate) async fn rpc(base: &str, agent: &str, method: &str, params: Value) -> Value {
    let response = raw_rpc(base, agent, method, params).await;
    assert!(response.get("error").is_none(), "{method}: {response}");
    response["result"].clone()
}

pub(crate) async fn get_task(base: &str, agent: &str, id: &str) -> Value {
    rpc(base, agent, "GetTask", json!({"id": id})).await
}

/// Polls the task until `done` holds for it (at most `secs`); returns it.
pub(crate) async fn wait_for(
    base: &str,
    agent: &str,
    id: &str,
    secs: u64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let task = get_task(base, agent, id).await;
        if done(&task) {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting: {task}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(crate) fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

/// SSE `id`s and `data` lines of a stream body read so far.
pub(crate) fn sse_ids(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|i| i.trim().parse().unwrap())
        .collect()
}

/// The value of the metric line starting with `prefix` on one process (0 if absent).
pub(crate) async fn metric(port: &str, prefix: &str) -> i64 {
    let text = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(|v| v.trim().parse::<i64>().unwrap())
        .unwrap_or(0)
}

/// The sum of that metric over every live process of `role`.
pub(crate) async fn metric_sum(cluster: &Cluster, role: &str, prefix: &str) -> i64 {
    let mut sum = 0;
    for port in cluster.ports(role) {
        sum += metric(&port, prefix).await;
    }
    sum
}
