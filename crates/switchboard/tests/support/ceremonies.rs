//! The all-in-one serving ceremonies, for the ceremonies' tests: a server with two
//! agents holding keys of their own, a ceremonies directory and a notice secret; the
//! calls the tests make to the API; reading what a ceremony made.

#![allow(dead_code)] // each test binary uses its part
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::process::{self, Served};

pub(crate) const ADMIN: &str = "ceremonies-admin-token-0123456789";
pub(crate) const QUINN_KEY: &str = "quinn-own-key-0123456789";
pub(crate) const PEN_KEY: &str = "pen-own-key-0123456789ab";
pub(crate) const NOTICE_SECRET: &str = "a-ceremony-secret-of-32-characters";
/// Lets the test read the tasks a ceremony made: they belong to `ceremony:{id}`.
pub(crate) const CEREMONY_READER: &str = "ceremony-reader-token-0123456789";

pub(crate) struct Server {
    served: Served,
    dir: tempfile::TempDir,
    /// How it was started: again the same way by [`Server::restart_after`].
    args: Vec<String>,
}

impl std::ops::Deref for Server {
    type Target = Served;
    fn deref(&self) -> &Served {
        &self.served
    }
}

impl Server {
    pub(crate) fn ceremonies_dir(&self) -> PathBuf {
        self.dir.path().join("ceremonies")
    }

    /// Kills the process (SIGKILL: no drain), leaves it down for `down`, and starts it
    /// again as before, on a new port, over the same data directory.
    pub(crate) async fn restart_after(&mut self, down: Duration) {
        self.served.kill();
        tokio::time::sleep(down).await;
        self.served = process::serve(process::free_port(), &self.args).await;
    }
}

/// How a test's server is set up beyond the two agents.
#[derive(Default)]
pub(crate) struct Setup<'a> {
    /// Ceremonies whose tasks the test may read on `quinn` (as `ceremony:{id}`).
    pub(crate) readable: &'a [&'a str],
    /// Ceremony files in the directory from the start.
    pub(crate) files: &'a [(&'a str, &'a str)],
    /// More of `[fleet.ceremonies]`.
    pub(crate) ceremonies: &'a str,
    /// In the embedded store on disk (kept across [`Server::restart_after`]), not in memory.
    pub(crate) durable: bool,
}

/// Two agents with keys of their own (`quinn` and `pen`, both `bench`), a ceremonies
/// directory, notices signed with [`NOTICE_SECRET`].
pub(crate) async fn start(readable: &[&str], files: &[(&str, &str)]) -> Server {
    start_with(Setup {
        readable,
        files,
        ..Setup::default()
    })
    .await
}

pub(crate) async fn start_with(setup: Setup<'_>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let ceremonies = dir.path().join("ceremonies");
    std::fs::create_dir(&ceremonies).unwrap();
    for (name, text) in setup.files {
        std::fs::write(ceremonies.join(name), text).unwrap();
    }
    let readers: Vec<String> = setup
        .readable
        .iter()
        .map(|id| {
            format!("{{ principal = \"ceremony:{id}\", token = \"{CEREMONY_READER}-{id}\" }}")
        })
        .collect();
    let text = format!(
        r#"default_agent = ""
webhook_allow = ["127.0.0.1/32"]
[fleet.ceremonies]
dir = "{dir}"
webhook_secret = "{NOTICE_SECRET}"
webhook_token = "notice-token"
{more}
[[agents]]
name = "quinn"
kind = "bench"
api_keys = ["{QUINN_KEY}"]
auth = {{ bearer = [{readers}] }}
[[agents]]
name = "pen"
kind = "bench"
api_keys = ["{PEN_KEY}"]
"#,
        dir = ceremonies.display(),
        more = setup.ceremonies,
        readers = readers.join(", "),
    );
    let config = dir.path().join("switchboard.toml");
    std::fs::write(&config, text).unwrap();
    let mut args: Vec<String> = [
        "--config",
        &config.to_string_lossy(),
        "--admin-token",
        ADMIN,
    ]
    .map(str::to_owned)
    .to_vec();
    match setup.durable {
        true => args.extend([
            "--data-dir".to_owned(),
            dir.path().join("data").to_string_lossy().into_owned(),
        ]),
        false => args.push("--memory".to_owned()),
    }
    Server {
        served: process::serve(process::free_port(), &args).await,
        dir,
        args,
    }
}

/// A call to the ceremonies' API: its status and JSON body.
pub(crate) async fn call(
    base: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let client = reqwest::Client::new();
    let url = format!("{base}/api/ceremonies{path}");
    let mut request = match method {
        "GET" => client.get(url),
        _ => client.post(url),
    };
    if let Some(key) = key {
        request = request.header("X-API-Key", key);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

pub(crate) fn sweep(id: &str) -> Value {
    json!({
        "id": id, "name": "Hourly Sweep", "schedule": "0 * * * *",
        "skill": "qa_report", "targets": ["quinn"], "enabled": true
    })
}

/// The task `id` of `agent`, read as the ceremony's principal.
pub(crate) async fn ceremony_task(base: &str, agent: &str, ceremony: &str, id: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}});
    let reply: Value = reqwest::Client::new()
        .post(format!("{base}/agents/{agent}/a2a"))
        .header("A2A-Version", "1.0")
        .bearer_auth(format!("{CEREMONY_READER}-{ceremony}"))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(reply.get("error").is_none(), "{reply}");
    reply["result"].clone()
}

/// The runs of `id` once `done` holds for the newest (at most `secs`).
pub(crate) async fn runs_until(
    base: &str,
    id: &str,
    secs: u64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let (status, runs) = call(base, "GET", &format!("/{id}/runs"), Some(ADMIN), None).await;
        assert_eq!(status, 200, "{runs}");
        if runs["runs"].get(0).is_some_and(&done) {
            return runs;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting: {runs}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub(crate) fn check_signed(headers: &axum::http::HeaderMap, body: &str) {
    let header = |name: &str| headers[name].to_str().unwrap().to_owned();
    let expected = sb_webhooks::signing::sign(
        NOTICE_SECRET.as_bytes(),
        &header("webhook-id"),
        &header("webhook-timestamp"),
        body.as_bytes(),
    );
    assert_eq!(header("webhook-signature"), expected);
    assert_eq!(header("authorization"), "Bearer notice-token");
}

/// Writes the file whole at once (a reader never sees half of it).
pub(crate) fn write_file(dir: &Path, name: &str, text: &str) {
    let hidden = dir.join(format!(".{name}.tmp"));
    std::fs::write(&hidden, text).unwrap();
    std::fs::rename(hidden, dir.join(name)).unwrap();
}
