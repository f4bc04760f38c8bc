//! The gateway's HTTP behaviour, driven through the router with in-memory services:
//! envelope and version errors, content types, cards, size limits, and the places where
//! the two protocol versions deliberately differ.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test harness

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use sb_agent::{AgentHost, FirstMessage, Opening, TurnOver, TurnRunner};
use sb_gateway::auth::{AgentAuth, Credential};
use sb_gateway::router;
use sb_protocol::{A2AError, Message};
use sb_store::TaskRecord;
use sb_tasks::{NewTask, TaskService};
use serde_json::{Value, json};
use tower::ServiceExt;

mod support;

fn app() -> axum::Router {
    app_with_auth(BTreeMap::new())
}

fn app_with_auth(auth: BTreeMap<String, AgentAuth>) -> axum::Router {
    app_with(auth, |host| Arc::new(host))
}

/// The test app, its agents' turns run by `runner` around the in-process host.
fn app_with(
    auth: BTreeMap<String, AgentAuth>,
    runner: impl FnOnce(AgentHost) -> Arc<dyn TurnRunner>,
) -> axum::Router {
    router(support::state(auth, runner, 2))
}

async fn call(
    app: &axum::Router,
    req: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, String) {
    let response = app.clone().oneshot(req).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

fn post(path: &str, version: Option<&str>, body: &str) -> Request<Body> {
    let mut builder = Request::post(path).header("content-type", "application/json");
    if let Some(v) = version {
        builder = builder.header("A2A-Version", v);
    }
    builder.body(Body::from(body.to_owned())).unwrap()
}

async fn rpc(
    app: &axum::Router,
    path: &str,
    version: Option<&str>,
    method: &str,
    params: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let (status, _, text) = call(app, post(path, version, &body)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    serde_json::from_str(&text).unwrap()
}

fn user_message(id: &str, text: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

#[tokio::test]
async fn envelope_errors_keep_their_codes() {
    let app = app();
    for (body, code) in [
        ("{oops", -32700),
        ("[1,2]", -32600),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod"}"#,
            -32601,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}"#,
            -32602,
        ),
    ] {
        let (status, _, text) = call(&app, post("/a2a", Some("1.0"), body)).await;
        assert_eq!(status, StatusCode::OK);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"]["code"], code, "{body} -> {text}");
    }
    let v = rpc(&app, "/a2a", Some("99.0"), "GetTask", json!({"id": "x"})).await;
    assert_eq!(v["error"]["code"], -32009);
    let v = rpc(&app, "/a2a", Some("1.0"), "GetTask", json!({"id": "nope"})).await;
    assert_eq!(v["error"]["code"], -32001);
    assert_eq!(v["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(v["id"], 7);
}

#[tokio::test]
async fn unreadable_media_types_are_refused() {
    let app = app();
    let req = Request::post("/a2a")
        .header("content-type", "text/plain")
        .body(Body::from("hi"))
        .unwrap();
    let (_, _, text) = call(&app, req).await;
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["error"]["code"],
        -32005
    );
    let req = Request::post("/message:send")
        .header("content-type", "text/plain")
        .body(Body::from("hi"))
        .unwrap();
    let (status, _, text) = call(&app, req).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["error"]["code"],
        415
    );
}

#[tokio::test]
async fn oversized_bodies_get_413() {
    let app = app();
    let big = "x".repeat(70 * 1024);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message("m", &big)}});
    let (status, _, text) = call(&app, post("/a2a", Some("1.0"), &body.to_string())).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(text.contains("exceeds the limit"), "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["error"]["code"],
        -32600
    );
    let rest_body = json!({"message": user_message("m", &big)}).to_string();
    let (status, _, text) = call(&app, post("/message:send", Some("1.0"), &rest_body)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["error"]["code"],
        413,
        "REST gets a Status body"
    );
}

#[tokio::test]
async fn cards_are_cacheable_and_versioned() {
    let app = app();
    let get = |path: &str, version: Option<&str>, etag: Option<&str>| {
        let mut b = Request::get(path);
        if let Some(v) = version {
            b = b.header("A2A-Version", v);
        }
        if let Some(e) = etag {
            b = b.header("If-None-Match", e);
        }
        b.body(Body::empty()).unwrap()
    };
    let (status, headers, text) = call(&app, get("/.well-known/agent-card.json", None, None)).await;
    assert_eq!(status, StatusCode::OK);
    let card: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        card["url"], "http://sb.test/a2a",
        "root card carries the 0.3 fields"
    );
    assert!(
        headers["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age")
    );
    assert!(headers.contains_key("last-modified"));
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let (status, _, _) = call(&app, get("/.well-known/agent-card.json", None, Some(&etag))).await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);

    let (_, _, text) = call(
        &app,
        get(
            "/agents/conformance/.well-known/agent-card.json",
            None,
            None,
        ),
    )
    .await;
    let strict: Value = serde_json::from_str(&text).unwrap();
    assert!(
        strict.get("url").is_none(),
        "conformance serves the strict 1.0 card"
    );
    assert_eq!(
        strict["supportedInterfaces"][0]["url"],
        "http://sb.test/agents/conformance/a2a"
    );
    let (_, _, text) = call(
        &app,
        get(
            "/agents/conformance/.well-known/agent-card.json",
            Some("0.3"),
            None,
        ),
    )
    .await;
    assert!(
        serde_json::from_str::<Value>(&text)
            .unwrap()
            .get("url")
            .is_some()
    );
    let (status, _, _) = call(
        &app,
        get("/agents/ghost/.well-known/agent-card.json", None, None),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn direct_message_replies_create_no_task() {
    let app = app();
    let v = rpc(
        &app,
        "/agents/conformance/a2a",
        Some("1.0"),
        "SendMessage",
        json!({"message": user_message("tck-message-response-1", "hi")}),
    )
    .await;
    assert_eq!(
        v["result"]["message"]["parts"][0]["text"],
        "Direct message response"
    );
    assert!(v["result"].get("task").is_none());
}

/// A send whose inline push config is refused (a private address here) leaves nothing
/// behind: no task the caller never heard of, stuck where no turn will ever run it; and
/// a follow-up with such a config leaves its task as it was.
#[tokio::test]
async fn a_refused_inline_push_config_leaves_no_task() {
    let app = app();
    let refused = json!({"taskPushNotificationConfig": {"url": "http://10.1.2.3/hook"}});
    let mut message = user_message("inline-push-1", "hi");
    message["contextId"] = json!("ctx-inline-push");
    let v = rpc(
        &app,
        "/agents/echo/a2a",
        Some("1.0"),
        "SendMessage",
        json!({"message": message, "configuration": refused}),
    )
    .await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("10.1.2.3"),
        "{v}"
    );
    let listed = rpc(
        &app,
        "/agents/echo/a2a",
        Some("1.0"),
        "ListTasks",
        json!({"contextId": "ctx-inline-push"}),
    )
    .await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");

    // A task waiting for input, answered with a refused config: still waiting.
    let asked = rpc(
        &app,
        "/agents/conformance/a2a",
        Some("1.0"),
        "SendMessage",
        json!({"message": user_message("tck-input-required-9", "hi")}),
    )
    .await;
    let task = &asked["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    let mut answer = user_message("inline-push-3", "more");
    answer["taskId"] = task["id"].clone();
    let v = rpc(
        &app,
        "/agents/conformance/a2a",
        Some("1.0"),
        "SendMessage",
        json!({"message": answer, "configuration": refused}),
    )
    .await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let read = rpc(
        &app,
        "/agents/conformance/a2a",
        Some("1.0"),
        "GetTask",
        json!({"id": task["id"]}),
    )
    .await;
    assert_eq!(
        read["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{read}"
    );
    // The refused answer did not join the history.
    assert_eq!(
        read["result"]["history"].as_array().unwrap().len(),
        1,
        "{read}"
    );
}

/// A message past the delegation cap opens a task rejected with the reason; at the cap
/// it runs; a depth that is not a non-negative integer is invalid.
#[tokio::test]
async fn delegation_depth_past_the_cap_is_rejected() {
    let app = app();
    let send = |id: &str, depth: Value| {
        let mut message = user_message(id, "hi");
        message["metadata"] = json!({"delegationDepth": depth});
        json!({"message": message})
    };
    let past = rpc(
        &app,
        "/agents/echo/a2a",
        Some("1.0"),
        "SendMessage",
        send("deep-9", json!(9)),
    )
    .await;
    let task = &past["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_REJECTED", "{past}");
    let reason = task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("9 hops") && reason.contains("cap of 8"),
        "{reason}"
    );
    let at = rpc(
        &app,
        "/agents/echo/a2a",
        Some("1.0"),
        "SendMessage",
        send("deep-8", json!(8)),
    )
    .await;
    assert_eq!(
        at["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{at}"
    );
    let odd = rpc(
        &app,
        "/agents/echo/a2a",
        Some("1.0"),
        "SendMessage",
        send("deep-x", json!("x")),
    )
    .await;
    assert_eq!(odd["error"]["code"], -32602, "{odd}");
}

#[tokio::test]
async fn cancel_twice_differs_by_version() {
    let app = app();
    let send = |id: &str| json!({"message": {"kind": "message", "messageId": id, "role": "user", "parts": [{"kind": "text", "text": "x"}]}});
    let created = rpc(
        &app,
        "/agents/conformance/a2a",
        None,
        "message/send",
        send("plain-1"),
    )
    .await;
    assert_eq!(
        created["result"]["status"]["state"], "working",
        "fire-and-forget task stays working"
    );
    let id = created["result"]["id"].clone();
    let first = rpc(
        &app,
        "/agents/conformance/a2a",
        None,
        "tasks/cancel",
        json!({"id": id}),
    )
    .await;
    assert_eq!(first["result"]["status"]["state"], "canceled");
    let second = rpc(
        &app,
        "/agents/conformance/a2a",
        None,
        "tasks/cancel",
        json!({"id": id}),
    )
    .await;
    assert_eq!(
        second["error"]["code"], -32002,
        "0.3: already canceled is not cancelable"
    );
    let again = rpc(
        &app,
        "/agents/conformance/a2a",
        Some("1.0"),
        "CancelTask",
        json!({"id": id}),
    )
    .await;
    assert_eq!(
        again["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "1.0: idempotent"
    );
}

#[tokio::test]
async fn v03_stream_errors_arrive_as_events() {
    let app = app();
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/resubscribe", "params": {"id": "missing"}});
    let (status, headers, text) = call(&app, post("/a2a", None, &body.to_string())).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert!(text.contains("\"code\":-32001"), "{text}");
    let v1 = rpc(
        &app,
        "/a2a",
        Some("1.0"),
        "SubscribeToTask",
        json!({"id": "missing"}),
    )
    .await;
    assert_eq!(v1["error"]["code"], -32001, "1.0: a plain JSON-RPC error");
}

#[tokio::test]
async fn v03_push_config_without_id_is_the_default() {
    let app = app();
    let send = json!({"message": {"kind": "message", "messageId": "p-1", "role": "user", "parts": [{"kind": "text", "text": "x"}]}});
    let task = rpc(&app, "/a2a", None, "message/send", send).await;
    let task_id = task["result"]["id"].as_str().unwrap().to_owned();
    let set = rpc(
        &app,
        "/a2a",
        None,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": task_id, "pushNotificationConfig": {"url": "http://127.0.0.1:9/hook"}}),
    )
    .await;
    assert_eq!(
        set["result"]["pushNotificationConfig"]["id"],
        task_id.as_str()
    );
    let got = rpc(
        &app,
        "/a2a",
        None,
        "tasks/pushNotificationConfig/get",
        json!({"id": task_id, "pushNotificationConfigId": "default"}),
    )
    .await;
    assert_eq!(
        got["result"]["pushNotificationConfig"]["url"],
        "http://127.0.0.1:9/hook"
    );
    let part_without_kind = json!({"message": {"kind": "message", "messageId": "p-2", "role": "user", "parts": [{"type": "weird", "text": "x"}]}});
    let rejected = rpc(&app, "/a2a", None, "message/send", part_without_kind).await;
    assert_eq!(rejected["error"]["code"], -32602);
}

#[tokio::test]
async fn rest_streams_carry_sequence_ids_and_close() {
    let app = app();
    let body = json!({"message": user_message("s-1", "stream me")}).to_string();
    let (status, _, text) = call(
        &app,
        post("/agents/echo/message:stream", Some("1.0"), &body),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: ").or_else(|| l.strip_prefix("id:")))
        .collect();
    assert_eq!(ids, ["1", "2", "3", "4"], "{text}");
    let last = text.lines().rfind(|l| l.starts_with("data:")).unwrap();
    assert!(last.contains("TASK_STATE_COMPLETED"), "{last}");
}

/// A 1.0 SendStreamingMessage to `agent`, read until the server closes it (at most
/// 10 s): the body, and its `data:` lines.
async fn streamed(app: &axum::Router, agent: &str, message_id: &str) -> (String, Vec<String>) {
    let body = json!({"message": user_message(message_id, "x")}).to_string();
    let path = format!("/agents/{agent}/message:stream");
    let request = call(app, post(&path, Some("1.0"), &body));
    let (status, _, text) = tokio::time::timeout(std::time::Duration::from_secs(10), request)
        .await
        .expect("stream closed");
    assert_eq!(status, StatusCode::OK, "{text}");
    let data = text
        .lines()
        .filter(|l| l.starts_with("data:"))
        .map(str::to_owned)
        .collect();
    (text, data)
}

#[tokio::test]
async fn streaming_send_ends_with_the_agents_turn() {
    let app = app();
    // The task stays working, but the turn is over: the stream must close by itself.
    let (text, data) = streamed(&app, "conformance", "fire-and-forget-1").await;
    assert_eq!(data.len(), 2, "{text}");
    assert!(data[0].contains("TASK_STATE_SUBMITTED"));
    assert!(data[1].contains("TASK_STATE_WORKING"));
}

/// The host's turns, each ending as one whose end the store refused: what a caller is
/// told when the agent's last report and then the task's failure could not be stored.
#[derive(Debug)]
struct UnsavedEnds(AgentHost);

#[tonic::async_trait]
impl TurnRunner for UnsavedEnds {
    fn tasks(&self) -> &dyn TaskService {
        TurnRunner::tasks(&self.0)
    }

    fn serves(&self, agent: &str) -> bool {
        TurnRunner::serves(&self.0, agent)
    }

    async fn open(&self, agent: &str, first: FirstMessage<'_>) -> Result<Opening, A2AError> {
        TurnRunner::open(&self.0, agent, first).await
    }

    async fn dispatch(&self, record: &TaskRecord, message: Message) -> Result<TurnOver, A2AError> {
        TurnRunner::dispatch(&self.0, record, message).await
    }

    async fn start(&self, new: NewTask) -> Result<(TaskRecord, TurnOver), A2AError> {
        use futures::FutureExt;
        let (record, turn) = TurnRunner::start(&self.0, new).await?;
        let task_id = record.task.id.clone();
        let unsaved = async move {
            let _ = turn.await;
            Err(A2AError::internal("the task could not be updated").with_task(&task_id))
        };
        Ok((record, unsaved.boxed()))
    }
}

#[tokio::test]
async fn a_turn_whose_end_was_not_stored_is_answered_with_the_error() {
    let app = app_with(BTreeMap::new(), |host| Arc::new(UnsavedEnds(host)));
    let params = json!({"message": user_message("unsaved-1", "hi")});
    let reply = rpc(&app, "/agents/echo/a2a", Some("1.0"), "SendMessage", params).await;
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert!(
        reply.get("result").is_none(),
        "not the task as stored: {reply}"
    );
    // A stream sends what was stored, then the error, and ends.
    let (text, data) = streamed(&app, "echo", "unsaved-2").await;
    assert!(data.len() >= 2, "{text}");
    assert!(data[0].contains("TASK_STATE_SUBMITTED"), "{text}");
    let last = &data[data.len() - 1];
    assert!(
        last.contains("could not be updated"),
        "ends with the error: {text}"
    );
}

/// No input, however malformed, makes the server fail internally: every prefix of valid
/// requests (and a few byte flips) gets a client error or a success, never a 5xx.
#[tokio::test]
async fn malformed_input_never_breaks_the_server() {
    let app = app();
    let valid = [
        (
            "/a2a",
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message("f-1", "hi"), "configuration": {"historyLength": 2, "returnImmediately": true}}}),
        ),
        (
            "/a2a",
            json!({"jsonrpc": "2.0", "id": "x", "method": "message/send", "params": {"message": {"kind": "message", "messageId": "f-2", "role": "user", "parts": [{"kind": "file", "file": {"bytes": "AAE=", "name": "a"}}]}}}),
        ),
        (
            "/a2a",
            json!({"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {"pageSize": 3, "status": "TASK_STATE_WORKING"}}),
        ),
        (
            "/message:send",
            json!({"message": user_message("f-3", "hi"), "configuration": {"returnImmediately": true}}),
        ),
        (
            "/v1/message:send",
            json!({"message": {"messageId": "f-4", "role": "ROLE_USER", "content": [{"data": {"data": {"k": 1}}}]}, "configuration": {"blocking": false}}),
        ),
    ];
    let mut checked = 0;
    for (path, body) in valid {
        let text = body.to_string();
        let mut variants: Vec<String> = (0..text.len()).map(|cut| text[..cut].to_owned()).collect();
        for (i, replacement) in [(3, "\u{0}"), (10, "]"), (text.len() / 2, "\"")] {
            let mut flipped = text.clone();
            flipped.replace_range(i..i + 1, replacement);
            variants.push(flipped);
        }
        for variant in variants {
            let (status, _, reply) = call(&app, post(path, Some("1.0"), &variant)).await;
            assert!(
                !status.is_server_error(),
                "{path} {variant:?} -> {status} {reply}"
            );
            checked += 1;
        }
    }
    assert!(checked > 500);
}

fn subscribe_request(path: &str, cursor: Option<&str>) -> Request<Body> {
    let mut builder = Request::post(path).header("A2A-Version", "1.0");
    if let Some(c) = cursor {
        builder = builder.header("Last-Event-ID", c);
    }
    builder.body(Body::empty()).unwrap()
}

fn sse_ids(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|id| id.trim().to_owned())
        .collect()
}

/// The resume extension: a cursor replays exactly what follows it, the final cursor
/// gets an empty stream, a cursor from the future gets one reset frame, and anything
/// that is not a cursor gets the spec's behaviour.
#[tokio::test]
async fn last_event_id_resumes_without_gap_or_duplicate() {
    let app = app();
    let done = rpc(
        &app,
        "/agents/echo/a2a",
        Some("1.0"),
        "SendMessage",
        json!({"message": user_message("r-1", "resume")}),
    )
    .await;
    let id = done["result"]["task"]["id"].as_str().unwrap().to_owned();
    let path = format!("/agents/echo/tasks/{id}:subscribe");

    let (status, headers, text) = call(&app, subscribe_request(&path, Some("2"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["a2a-extensions"], sb_gateway::ops::RESUME_EXTENSION);
    assert_eq!(
        headers["x-a2a-extensions"],
        sb_gateway::ops::RESUME_EXTENSION
    );
    assert_eq!(sse_ids(&text), ["3", "4"], "{text}");
    assert!(
        text.contains(r#""seq":4"#),
        "frames carry their seq in metadata: {text}"
    );
    assert!(
        text.contains("retry: 1000") || text.contains("retry:1000"),
        "{text}"
    );

    let (_, _, text) = call(&app, subscribe_request(&path, Some("0"))).await;
    assert_eq!(sse_ids(&text), ["1", "2", "3", "4"]);

    let (status, _, text) = call(&app, subscribe_request(&path, Some("4"))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        sse_ids(&text).is_empty(),
        "nothing after the final event: {text}"
    );

    let (_, _, text) = call(&app, subscribe_request(&path, Some("99"))).await;
    assert_eq!(sse_ids(&text), ["4"]);
    assert!(text.contains(r#""reset":true"#), "{text}");

    for not_a_cursor in [
        None,
        Some("abc"),
        Some("9007199254740993"),
        Some("5f0c-uuid"),
    ] {
        let (status, _, text) = call(&app, subscribe_request(&path, not_a_cursor)).await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "{not_a_cursor:?}: a finished task without a cursor is an error: {text}"
        );
    }

    // 0.3 clients that cannot set headers pass the cursor in params.metadata.
    let params =
        json!({"id": id, "metadata": {sb_gateway::ops::RESUME_EXTENSION: {"lastEventId": "3"}}});
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tasks/resubscribe", "params": params});
    let (_, _, text) = call(&app, post("/agents/echo/a2a", None, &body.to_string())).await;
    assert_eq!(sse_ids(&text), ["4"], "{text}");
}

#[tokio::test]
async fn streamed_message_replies_carry_no_id() {
    let app = app();
    let body = json!({"message": user_message("tck-message-response-s", "hi")}).to_string();
    let (status, _, text) = call(
        &app,
        post("/agents/conformance/message:stream", Some("1.0"), &body),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(sse_ids(&text).is_empty(), "{text}");
    assert!(text.contains("Direct message response"));
}

fn with_token(mut req: Request<Body>, token: &str) -> Request<Body> {
    req.headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    req
}

/// Authentication per agent, and every task belonging to the principal that made it:
/// another principal gets TaskNotFound, never a hint that the task exists.
#[tokio::test]
async fn principals_only_see_their_own_tasks() {
    let auth = AgentAuth {
        bearer_tokens: vec![
            Credential {
                principal: "alice".into(),
                secret: "alice-token".into(),
            },
            Credential {
                principal: "mallory".into(),
                secret: "mallory-token".into(),
            },
        ],
        api_keys: None,
        jwt: None,
    };
    let app = app_with_auth(BTreeMap::from([("echo".to_owned(), auth)]));
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": user_message("a-1", "secret")}}).to_string();

    let (status, headers, text) = call(&app, post("/agents/echo/a2a", Some("1.0"), &send)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
    assert!(
        headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    let (status, _, _) = call(
        &app,
        with_token(
            post("/agents/echo/message:send", Some("1.0"), &send),
            "wrong",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (_, _, card) = call(
        &app,
        Request::get("/agents/echo/.well-known/agent-card.json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    let card: Value = serde_json::from_str(&card).unwrap();
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(
        card["securityRequirements"][0]["schemes"]["bearer"],
        json!({})
    );
    assert_eq!(card["capabilities"]["extendedAgentCard"], true);

    let (status, _, text) = call(
        &app,
        with_token(post("/agents/echo/a2a", Some("1.0"), &send), "alice-token"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let task: Value = serde_json::from_str(&text).unwrap();
    let id = task["result"]["task"]["id"].as_str().unwrap().to_owned();

    let as_mallory = |method: &str, params: Value| {
        let body =
            json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}).to_string();
        with_token(
            post("/agents/echo/a2a", Some("1.0"), &body),
            "mallory-token",
        )
    };
    for (method, params) in [
        ("GetTask", json!({"id": id})),
        ("CancelTask", json!({"id": id})),
        ("SubscribeToTask", json!({"id": id})),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": "http://127.0.0.1:9/h"}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": "m-2", "role": "ROLE_USER", "parts": [{"text": "x"}], "taskId": id}}),
        ),
        (
            "SendMessage",
            json!({"message": {"messageId": "m-3", "role": "ROLE_USER", "parts": [{"text": "x"}], "referenceTaskIds": [id]}}),
        ),
    ] {
        let (_, _, text) = call(&app, as_mallory(method, params)).await;
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["error"]["code"], -32001, "{method}: {text}");
    }
    let (_, _, text) = call(&app, as_mallory("ListTasks", json!({}))).await;
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["result"]["totalSize"],
        0
    );
    let (_, _, text) = call(&app, as_mallory("GetExtendedAgentCard", json!({}))).await;
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["result"]["name"],
        "echo"
    );

    let get =
        json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": id}}).to_string();
    let (_, _, text) = call(
        &app,
        with_token(post("/agents/echo/a2a", Some("1.0"), &get), "alice-token"),
    )
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["result"]["id"],
        id.as_str()
    );
    let (status, _, _) = call(
        &app,
        with_token(
            Request::get(format!("/agents/echo/tasks/{id}"))
                .header("A2A-Version", "1.0")
                .body(Body::empty())
                .unwrap(),
            "mallory-token",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// A principal may hold only so many streams open; a closed stream frees its slot.
#[tokio::test]
async fn open_streams_per_principal_are_limited() {
    let app = app();
    // Fire-and-forget tasks stay working, so their subscriptions stay open.
    let mut open = Vec::new();
    let mut task_ids = Vec::new();
    for i in 0..3 {
        let v = rpc(
            &app,
            "/agents/conformance/a2a",
            Some("1.0"),
            "SendMessage",
            json!({"message": user_message(&format!("ff-{i}"), "x"), "configuration": {"returnImmediately": true}}),
        )
        .await;
        task_ids.push(v["result"]["task"]["id"].as_str().unwrap().to_owned());
    }
    for id in &task_ids[..2] {
        let response = app
            .clone()
            .oneshot(subscribe_request(
                &format!("/agents/conformance/tasks/{id}:subscribe"),
                None,
            ))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        open.push(response);
    }
    let (status, _, text) = call(
        &app,
        subscribe_request(
            &format!("/agents/conformance/tasks/{}:subscribe", task_ids[2]),
            None,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{text}");
    assert!(text.contains("RESOURCE_EXHAUSTED"));
    drop(open.pop());
    let response = app
        .clone()
        .oneshot(subscribe_request(
            &format!("/agents/conformance/tasks/{}:subscribe", task_ids[2]),
            None,
        ))
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "a closed stream frees its slot"
    );
}

/// A 1.0 blocking send answers when its task is terminal or interrupted, not when the
/// agent's turn ends: the conformance agent ends the turn of a message it does not know
/// with its task still working, and each 1.0 binding's blocking send answers only once the
/// task is canceled. (A 0.3 `message/send` answers at the turn's end: see
/// `a_blocking_0_3_send_answers_when_the_turn_is_over`.)
#[tokio::test]
async fn a_blocking_send_waits_for_the_task_not_the_turn() {
    let app = app();
    let message = |context: &str| json!({"messageId": format!("keep-{context}"), "role": "ROLE_USER", "contextId": context, "parts": [{"text": "work on"}]});
    let sends = [
        (
            "jsonrpc-1.0",
            post(
                "/agents/conformance/a2a",
                Some("1.0"),
                &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message("jsonrpc-1.0")}}).to_string(),
            ),
        ),
        (
            "rest-1.0",
            post(
                "/agents/conformance/message:send",
                Some("1.0"),
                &json!({"message": message("rest-1.0")}).to_string(),
            ),
        ),
    ];
    for (context, send) in sends {
        let sender = app.clone();
        let pending = tokio::spawn(async move { call(&sender, send).await });
        let mut task_id = None;
        for _ in 0..300 {
            let listed = rpc(
                &app,
                "/agents/conformance/a2a",
                Some("1.0"),
                "ListTasks",
                json!({"contextId": context, "status": "TASK_STATE_WORKING"}),
            )
            .await;
            if let Some(id) = listed["result"]["tasks"][0]["id"].as_str() {
                task_id = Some(id.to_owned());
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let task_id = task_id.unwrap_or_else(|| panic!("{context}: no working task"));
        // The turn is long over; the task is not.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            !pending.is_finished(),
            "{context}: answered while the task was working"
        );
        let canceled = rpc(
            &app,
            "/agents/conformance/a2a",
            Some("1.0"),
            "CancelTask",
            json!({"id": task_id}),
        )
        .await;
        assert_eq!(canceled["result"]["status"]["state"], "TASK_STATE_CANCELED");
        let (status, _, text) = tokio::time::timeout(Duration::from_secs(5), pending)
            .await
            .unwrap_or_else(|_| panic!("{context}: no answer after the task ended"))
            .unwrap();
        assert_eq!(status, StatusCode::OK, "{context}: {text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        let state = match context {
            "jsonrpc-1.0" => &answer["result"]["task"]["status"]["state"],
            _ => &answer["task"]["status"]["state"],
        };
        assert_eq!(state, "TASK_STATE_CANCELED", "{context}: {text}");
    }
}

/// A 0.3 blocking `message/send` answers with the task "after processing the message"
/// (0.3 §7.1): when the agent's turn is over, with the task still working (the 0.3 TCK's
/// tests of open tasks send blocking messages and expect a working task back).
#[tokio::test]
async fn a_blocking_0_3_send_answers_when_the_turn_is_over() {
    let app = app();
    let send = json!({"message": {"kind": "message", "messageId": "keep-0.3", "role": "user", "parts": [{"kind": "text", "text": "work on"}]}});
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        rpc(&app, "/agents/conformance/a2a", None, "message/send", send),
    )
    .await
    .expect("a 0.3 blocking send answers at the turn's end");
    assert_eq!(answer["result"]["status"]["state"], "working", "{answer}");
}
