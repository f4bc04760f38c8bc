//! A stub A2A agent for the CLI tests: a valid card at the well-known path naming one
//! JSON-RPC 1.0 interface (`/a2a`), every call answered by the test's own function (so
//! a test can make an agent that answers wrongly), and files under `/files/` (for URL
//! parts), recording the `Authorization` header each request carried.

#![allow(dead_code)] // each test binary uses its part
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use serde_json::{Value, json};

/// Answers one JSON-RPC request (the whole body) with the whole reply.
pub(crate) type Answer = dyn Fn(&Value) -> Value + Send + Sync;

pub(crate) struct Stub {
    pub base: String,
    /// The `Authorization` header of each request, in order (`-` when none).
    pub authorizations: Arc<Mutex<Vec<String>>>,
}

#[derive(Clone)]
struct Shared {
    base: String,
    capabilities: Value,
    answer: Arc<Answer>,
    authorizations: Arc<Mutex<Vec<String>>>,
}

fn record(shared: &Shared, headers: &HeaderMap) {
    let value = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    shared.authorizations.lock().unwrap().push(value.to_owned());
}

/// A stub on a free loopback port whose card declares `capabilities`.
pub(crate) async fn start(capabilities: Value, answer: Arc<Answer>) -> Stub {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let authorizations = Arc::new(Mutex::new(Vec::new()));
    let shared = Shared {
        base: base.clone(),
        capabilities,
        answer,
        authorizations: authorizations.clone(),
    };
    let app = Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(|State(s): State<Shared>| async move { axum::Json(card(&s)) }),
        )
        .route(
            "/a2a",
            post(
                |State(s): State<Shared>, headers: HeaderMap, body: axum::Json<Value>| async move {
                    record(&s, &headers);
                    axum::Json((s.answer)(&body.0))
                },
            ),
        )
        .route(
            "/files/{name}",
            get(|State(s): State<Shared>, headers: HeaderMap| async move {
                record(&s, &headers);
                b"%PDF-stub-bytes".to_vec()
            }),
        )
        .with_state(shared);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Stub {
        base,
        authorizations,
    }
}

fn card(shared: &Shared) -> Value {
    json!({
        "name": "stub", "description": "a stub agent", "version": "1.0.0",
        "supportedInterfaces": [{
            "url": format!("{}/a2a", shared.base),
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"
        }],
        "capabilities": shared.capabilities,
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "d", "tags": ["t"]}]
    })
}

/// A JSON-RPC reply to `request` with `result`.
pub(crate) fn result(request: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": request["id"], "result": result})
}

/// A JSON-RPC error reply to `request`.
pub(crate) fn error(request: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": message}})
}
