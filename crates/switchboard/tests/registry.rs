//! The live registry of the all-in-one, over real HTTP: agents registered, replaced and
//! removed at runtime with the admin token, each described by its own definition, found
//! by search, kept across a restart, and served with signed cards.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use std::ffi::OsString;

#[path = "support/process.rs"]
mod process;
#[path = "support/webhook_receiver.rs"]
mod webhook_receiver;

use process::Served;

const ADMIN: &str = "registry-admin-token-0123456789";

/// The all-in-one, with the calls the tests make to its registry.
struct Server(Served);

impl std::ops::Deref for Server {
    type Target = Served;
    fn deref(&self) -> &Served {
        &self.0
    }
}

impl Server {
    /// The binary, all-in-one, on a free port with its store in `data_dir` (memory
    /// without one).
    async fn start(data_dir: Option<&Path>, admin: bool) -> Server {
        Server::start_on(process::free_port(), data_dir, admin).await
    }

    /// As [`Server::start`], on `port` (a restart serves the same URLs).
    async fn start_on(port: u16, data_dir: Option<&Path>, admin: bool) -> Server {
        let base = format!("http://127.0.0.1:{port}");
        let mut args: Vec<OsString> = ["--public-url", &base, "--webhook-allow", "127.0.0.1/32"]
            .map(OsString::from)
            .into();
        match data_dir {
            Some(dir) => args.extend(["--data-dir".into(), dir.as_os_str().to_owned()]),
            None => args.push("--memory".into()),
        }
        if admin {
            args.extend(["--admin-token".into(), ADMIN.into()]);
        }
        Server(process::serve(port, &args).await)
    }

    /// Stops the process the way an orchestrator does (SIGTERM), and waits for it.
    fn stop(mut self) {
        self.0.process.terminate();
    }

    async fn put(&self, name: &str, definition: Value) -> reqwest::Response {
        reqwest::Client::new()
            .put(format!("{}/registry/agents/{name}", self.base))
            .bearer_auth(ADMIN)
            .json(&definition)
            .send()
            .await
            .unwrap()
    }

    async fn delete(&self, name: &str) -> reqwest::Response {
        reqwest::Client::new()
            .delete(format!("{}/registry/agents/{name}", self.base))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap()
    }

    async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = reqwest::get(format!("{}{path}", self.base)).await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// The card of `agent` and its ETag.
    async fn card(&self, agent: &str) -> (Value, String) {
        let response = reqwest::Client::new()
            .get(format!(
                "{}/agents/{agent}/.well-known/agent-card.json",
                self.base
            ))
            .header("A2A-Version", "1.0")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "card of {agent}");
        let etag = response.headers()["etag"].to_str().unwrap().to_owned();
        (response.json().await.unwrap(), etag)
    }

    async fn send(&self, agent: &str, text: &str) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]}
        }});
        reqwest::Client::new()
            .post(format!("{}/agents/{agent}/a2a", self.base))
            .header("A2A-Version", "1.0")
            .timeout(Duration::from_secs(10))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

/// A definition with everything a card can say.
fn notes() -> Value {
    json!({
        "kind": "echo",
        "description": "Keeps the team's notes",
        "version": "2.1.0",
        "provider": {"organization": "Example Org", "url": "https://example.com"},
        "documentation_url": "https://example.com/docs/notes",
        "icon_url": "https://example.com/notes.png",
        "default_input_modes": ["text/plain", "application/json"],
        "default_output_modes": ["text/plain"],
        "skills": [
            {"id": "note.add", "name": "Add a note", "description": "Stores a note",
             "tags": ["notes", "memory"], "examples": ["remember to buy oat milk"]},
            {"id": "note.find", "name": "Find notes", "description": "Searches the notes",
             "tags": ["search"], "examples": ["what did I say about invoices?"],
             "inputModes": ["text/plain"], "outputModes": ["application/json"]}
        ],
        "extensions": [{"uri": "https://example.com/ext/cost-v1", "description": "price per call",
                        "params": {"usd_per_call": 0.002}}]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_registered_at_runtime_is_served_with_exactly_its_own_card() {
    let server = Server::start(None, true).await;
    let created = server.put("notes", notes()).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let (card, _) = server.card("notes").await;
    assert_eq!(card["name"], "notes");
    assert_eq!(card["description"], "Keeps the team's notes");
    assert_eq!(card["version"], "2.1.0");
    assert_eq!(
        card["provider"],
        json!({"organization": "Example Org", "url": "https://example.com"})
    );
    assert_eq!(card["documentationUrl"], "https://example.com/docs/notes");
    assert_eq!(card["iconUrl"], "https://example.com/notes.png");
    assert_eq!(
        card["defaultInputModes"],
        json!(["text/plain", "application/json"])
    );
    let skills = card["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 2, "no skill borrowed from the echo kind");
    assert_eq!(skills[0]["tags"], json!(["notes", "memory"]));
    assert_eq!(skills[1]["outputModes"], json!(["application/json"]));
    let extensions = card["capabilities"]["extensions"].as_array().unwrap();
    assert_eq!(extensions[0]["uri"], "https://example.com/ext/cost-v1");
    assert_eq!(extensions[0]["params"]["usd_per_call"], 0.002);
    assert!(
        extensions
            .iter()
            .any(|e| e["uri"].as_str().unwrap().contains("stream-resume")),
        "Switchboard's own extension is still declared: {extensions:?}"
    );
    assert_eq!(card["capabilities"]["streaming"], true);
    // Another agent's card is its own, untouched.
    let (echo, _) = server.card("echo").await;
    assert_ne!(echo["description"], card["description"]);
    assert_eq!(echo["skills"][0]["id"], "echo");
    // It takes messages, run by the code of its kind.
    let reply = server.send("notes", "hello notes").await;
    assert_eq!(
        reply["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{reply}"
    );
    // It is listed with its card URL.
    let (_, listed) = server.get("/agents").await;
    let entry = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "notes")
        .unwrap()
        .clone();
    assert_eq!(
        entry["cardUrl"],
        format!("{}/agents/notes/.well-known/agent-card.json", server.base)
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_version_and_etag_change_with_the_definition_and_only_then() {
    let server = Server::start(None, true).await;
    let mut definition = notes();
    definition.as_object_mut().unwrap().remove("version");
    assert_eq!(
        server.put("notes", definition.clone()).await.status(),
        StatusCode::CREATED
    );
    let (first, first_etag) = server.card("notes").await;
    assert_eq!(
        server.put("notes", definition.clone()).await.status(),
        StatusCode::OK
    );
    let (same, same_etag) = server.card("notes").await;
    assert_eq!(same["version"], first["version"]);
    assert_eq!(same_etag, first_etag, "the same definition, the same card");
    definition["skills"][0]["examples"] = json!(["remember the milk"]);
    assert_eq!(
        server.put("notes", definition).await.status(),
        StatusCode::OK
    );
    let (changed, changed_etag) = server.card("notes").await;
    assert_ne!(changed["version"], first["version"]);
    assert_ne!(changed_etag, first_etag);
    let (_, entry) = server.get("/registry/agents/notes").await;
    let history: Vec<&Value> = entry["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["version"])
        .collect();
    assert_eq!(history, [&first["version"], &changed["version"]]);
    assert_eq!(entry["version"], changed["version"]);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_finds_agents_by_skill_tag_and_words() {
    let server = Server::start(None, true).await;
    server.put("notes", notes()).await;
    let names = |found: &Value| -> Vec<String> {
        found["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, by_skill) = server.get("/registry/agents?skill=note.find").await;
    assert_eq!(names(&by_skill), ["notes"]);
    let (_, by_tag) = server.get("/registry/agents?tag=NOTES").await;
    assert_eq!(names(&by_tag), ["notes"]);
    let (_, shared_tag) = server.get("/registry/agents?tag=memory").await;
    assert_eq!(names(&shared_tag), ["consolidate", "notes"]);
    let (_, by_example) = server.get("/registry/agents?q=oat").await;
    assert_eq!(names(&by_example), ["notes"]);
    assert_eq!(
        by_example["agents"][0]["cardUrl"],
        format!("{}/agents/notes/.well-known/agent-card.json", server.base)
    );
    assert_eq!(by_example["agents"][0]["card"]["name"], "notes");
    let (_, nothing) = server.get("/registry/agents?q=oat+zebra").await;
    assert_eq!(
        names(&nothing),
        Vec::<String>::new(),
        "every word must match"
    );
    let (_, by_mode) = server
        .get("/registry/agents?output_mode=application/json")
        .await;
    assert_eq!(names(&by_mode), ["notes"]);
    // Ranked: a word in an agent's name outweighs the same word in an example.
    let mut other = notes();
    other["skills"] = json!([{"id": "x", "examples": ["ask the echo"]}]);
    server.put("other", other).await;
    let (_, ranked) = server.get("/registry/agents?q=echo").await;
    assert_eq!(names(&ranked)[..2], ["echo", "other"]);
    let (status, bad) = server.get("/registry/agents?capability=telepathy").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("streaming")
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_definitions_and_writes_without_the_token_are_refused() {
    let server = Server::start(None, true).await;
    for (name, body, field) in [
        ("a", json!({"kind": "robot"}), "kind"),
        (
            "a",
            json!({"kind": "echo", "skills": [{"name": "x"}]}),
            "skills[0]",
        ),
        (
            "a",
            json!({"kind": "echo", "skills": [{"id": " "}]}),
            "skills[0].id",
        ),
        ("a", json!({"kind": "echo", "colour": "red"}), "colour"),
        ("a b", json!({"kind": "echo"}), "name"),
        ("a", json!({"kind": "echo", "name": "b"}), "name"),
        ("a", json!({"kind": "worker"}), "kind"),
        ("a", json!({"kind": "echo", "icon_url": "nope"}), "icon_url"),
        (
            "a",
            json!({"kind": "echo", "webhook_secret": "short"}),
            "webhook_secret",
        ),
        (
            "a",
            json!({"kind": "echo", "auth": {"jwt": {"jwks_url": "http://127.0.0.1:1/keys.json"}}}),
            "auth.jwt",
        ),
    ] {
        let response = server.put(name, body.clone()).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["field"], field, "{body}: {error}");
        assert!(!error["error"]["message"].as_str().unwrap().is_empty());
    }
    let anonymous = reqwest::Client::new()
        .put(format!("{}/registry/agents/x", server.base))
        .json(&json!({"kind": "echo"}))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    server.stop();

    let closed = Server::start(None, false).await;
    let refused = closed.put("x", json!({"kind": "echo"})).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let error: Value = refused.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--admin-token")
    );
    closed.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_agent_takes_no_messages_and_its_tasks_stay_readable() {
    let server = Server::start(None, true).await;
    let mut definition = notes();
    definition["auth"] = json!({"bearer": [{"principal": "ann", "token": "ann-token-1"}]});
    server.put("notes", definition).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "keep me"}]}
    }});
    let client = reqwest::Client::new();
    let rpc = |body: Value| {
        client
            .post(format!("{}/agents/notes/a2a", server.base))
            .header("A2A-Version", "1.0")
            .bearer_auth("ann-token-1")
            .json(&body)
            .send()
    };
    let sent: Value = rpc(body.clone()).await.unwrap().json().await.unwrap();
    let task_id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    // Secrets are written, never read back.
    let (_, entry) = server.get("/registry/agents/notes").await;
    assert_eq!(entry["definition"]["auth"]["bearer"][0]["principal"], "ann");
    assert_ne!(
        entry["definition"]["auth"]["bearer"][0]["token"],
        "ann-token-1"
    );

    assert_eq!(
        server.delete("notes").await.status(),
        StatusCode::NO_CONTENT
    );
    let card = reqwest::get(format!(
        "{}/agents/notes/.well-known/agent-card.json",
        server.base
    ))
    .await
    .unwrap();
    assert_eq!(card.status(), StatusCode::NOT_FOUND);
    let (status, gone) = server.get("/registry/agents/notes").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        gone["error"]["message"]
            .as_str()
            .unwrap()
            .contains("removed")
    );
    let refused: Value = rpc(body).await.unwrap().json().await.unwrap();
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("removed")
    );
    let read = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}});
    let task: Value = rpc(read.clone()).await.unwrap().json().await.unwrap();
    assert_eq!(task["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    // Still only by its owner.
    let stranger = client
        .post(format!("{}/agents/notes/a2a", server.base))
        .header("A2A-Version", "1.0")
        .json(&read)
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(server.delete("notes").await.status(), StatusCode::NOT_FOUND);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_survive_a_restart_and_the_file_wins_over_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(Some(dir.path()), true).await;
    assert_eq!(
        server.put("notes", notes()).await.status(),
        StatusCode::CREATED
    );
    let mut echo = json!({"kind": "echo", "description": "echo, as registered at runtime"});
    echo["name"] = json!("echo");
    assert_eq!(server.put("echo", echo).await.status(), StatusCode::OK);
    let (before, before_etag) = server.card("notes").await;
    let port = server.port;
    server.stop();

    let server = Server::start_on(port, Some(dir.path()), true).await;
    let (after, after_etag) = server.card("notes").await;
    assert_eq!(after, before);
    assert_eq!(after_etag, before_etag, "the same card after a restart");
    let (echo, _) = server.card("echo").await;
    assert_ne!(
        echo["description"], "echo, as registered at runtime",
        "the file (here: the default agents) wins at start"
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cards_are_signed_with_the_key_the_jwks_serves() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(Some(dir.path()), true).await;
    let (card, _) = server.card("echo").await;
    let (_, jwks) = server.get("/.well-known/jwks.json").await;
    let verifier = sb_registry::signing::CardVerifier::from_jwks(&jwks).unwrap();
    let kid = verifier.verify(&card).unwrap();
    assert_eq!(jwks["keys"][0]["kid"], kid);
    let mut tampered = card.clone();
    tampered["description"] = json!("something else");
    assert!(verifier.verify(&tampered).is_err());
    server.stop();
    // The key is kept in the store: the next start signs with it.
    let server = Server::start(Some(dir.path()), true).await;
    let (_, again) = server.get("/.well-known/jwks.json").await;
    assert_eq!(again, jwks);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_agents_webhooks_are_signed_with_its_secret() {
    const SECRET: &str = "a-secret-of-24-characters";
    let server = Server::start(None, true).await;
    let mut definition = notes();
    definition["webhook_secret"] = json!(SECRET);
    assert_eq!(
        server.put("notes", definition).await.status(),
        StatusCode::CREATED
    );
    let (hook, received) = webhook_receiver::receiver().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-hook", "role": "ROLE_USER", "parts": [{"text": "sign me"}]},
        "configuration": {"taskPushNotificationConfig": {"url": hook}}
    }});
    let sent: Value = reqwest::Client::new()
        .post(format!("{}/agents/notes/a2a", server.base))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    let (headers, payload) = webhook_receiver::wait_for(&received, 1).await.remove(0);
    let header = |name: &str| headers[name].to_str().unwrap().to_owned();
    let expected = sb_webhooks::signing::sign(
        SECRET.as_bytes(),
        &header("webhook-id"),
        &header("webhook-timestamp"),
        payload.as_bytes(),
    );
    assert_eq!(header("webhook-signature"), expected);
    server.stop();
}
