//! Switchboard embedded in a program of its own, serving an agent written in Rust in
//! process (`switchboard::Switchboard`): real HTTP against the library's server.

#![allow(clippy::unwrap_used)] // test harness

use std::time::Duration;

use serde_json::{Value, json};
use switchboard::config::{self, Config, Overrides, Service};

#[path = "support/in_process.rs"]
mod in_process;

use in_process::InProcess;

/// The example's agent, so what the example shows is what is tested.
#[path = "../examples/embedded_agent.rs"]
#[allow(dead_code)] // its `main`
mod example;
use example::Shout;

fn memory_config(toml: Option<&str>) -> Config {
    let overrides = Overrides {
        memory: true,
        ..Overrides::default()
    };
    config::load(toml, overrides).unwrap()
}

/// Serves `shout` (and the configured agents) on a free port until dropped.
async fn start(config: Config) -> InProcess {
    in_process::serve(|_| switchboard::Switchboard::new(config).agent("shout", Shout)).await
}

async fn send(base: &str, text: &str, token: Option<&str>) -> reqwest::Response {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]}
    }});
    let mut request = reqwest::Client::new()
        .post(format!("{base}/agents/shout"))
        .header("A2A-Version", "1.0")
        .timeout(Duration::from_secs(10))
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// The agent card served under `base`.
async fn card(base: &str) -> Value {
    let url = format!("{base}/.well-known/agent-card.json");
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn an_agent_written_in_rust_is_served_in_process() {
    let server = start(memory_config(None)).await;
    let base = server.base.clone();
    let reply: Value = send(&base, "hello", None).await.json().await.unwrap();
    let task = &reply["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{reply}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "HELLO", "{reply}");
    let card = card(&format!("{base}/agents/shout")).await;
    assert_eq!(
        card["description"], "Answers with the text it was sent, in capitals.",
        "{card}"
    );
    // The configured agents are still there beside it.
    let echo = reqwest::get(format!("{base}/agents/echo/.well-known/agent-card.json"))
        .await
        .unwrap();
    assert_eq!(echo.status(), 200);
}

#[tokio::test]
async fn an_embedded_agent_takes_its_settings_from_its_config_entry() {
    let toml = r#"
        default_agent = "shout"
        [[agents]]
        name = "shout"
        kind = "embedded"
        description = "Capitals, with a password"
        [agents.auth]
        bearer = [{ principal = "alice", token = "s3cr3t-token-for-alice" }]
    "#;
    let server = start(memory_config(Some(toml))).await;
    let base = server.base.clone();
    assert_eq!(send(&base, "hi", None).await.status(), 401);
    let reply: Value = send(&base, "hi", Some("s3cr3t-token-for-alice"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        reply["result"]["task"]["artifacts"][0]["parts"][0]["text"], "HI",
        "{reply}"
    );
    let card = card(&base).await;
    assert_eq!(card["description"], "Capitals, with a password", "{card}");
}

#[tokio::test]
async fn an_embedded_entry_without_its_agent_is_refused_at_start() {
    let toml = "default_agent = \"ghost\"\n[[agents]]\nname = \"ghost\"\nkind = \"embedded\"\n";
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let served = switchboard::Switchboard::new(memory_config(Some(toml)))
        .serve(listener, std::future::pending())
        .await;
    let error = served.unwrap_err().to_string();
    assert!(
        error.contains("ghost") && error.contains("registered no agent"),
        "{error}"
    );
}

#[tokio::test]
async fn an_agent_under_a_name_the_paths_cannot_carry_is_refused() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let served = switchboard::Switchboard::new(memory_config(None))
        .agent("no spaces/please", Shout)
        .serve(listener, std::future::pending())
        .await;
    let error = served.unwrap_err().to_string();
    assert!(
        error.contains("must be 1 to 64 characters of letters, digits"),
        "{error}"
    );
}

#[tokio::test]
async fn a_split_deployment_points_agents_to_workers() {
    let mut config = memory_config(None);
    config.services = vec![Service::Gateway];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let served = switchboard::Switchboard::new(config)
        .agent("shout", Shout)
        .serve(listener, std::future::pending())
        .await;
    let error = served.unwrap_err().to_string();
    assert!(error.contains("run_worker"), "{error}");
}
