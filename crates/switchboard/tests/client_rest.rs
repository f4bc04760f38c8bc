//! The HTTP+JSON client (`sb_client::rest`), A2A 1.0 and 0.3: against Switchboard's
//! all-in-one in process (memory store, the built-in agents), through the interface its
//! card names for each version; and against a scripted server for what Switchboard does
//! not send (a tenant in the path, the SDKs' error bodies, a 204, a 0.3 stream).

#![allow(clippy::unwrap_used)] // test harness

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use sb_client::interface::{Binding, Chosen, Preferences, choose};
use sb_client::{CallError, EventStream, Placement, StreamItem, Transport, connect, discover};
use sb_protocol::requests::{ListTasksRequest, SendMessageRequest};
use sb_protocol::{
    ErrorKind, SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig, TaskState,
};
use serde_json::{Value, json};
use switchboard::config::{self, Overrides};

#[path = "support/in_process.rs"]
mod in_process;

use in_process::InProcess;

/// Switchboard serving on a free port until dropped.
async fn start() -> InProcess {
    in_process::serve(|address| {
        let overrides = Overrides {
            memory: true,
            public_url: Some(format!("http://{address}")),
            // Webhook targets on this host are refused unless trusted.
            webhook_allow: vec!["127.0.0.1/32".into()],
            ..Overrides::default()
        };
        switchboard::Switchboard::new(config::load(None, overrides).unwrap())
    })
    .await
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// The HTTP+JSON interface of `version` that the agent's card names, connected.
async fn client(server: &InProcess, agent: &str, version: &str) -> Arc<dyn Transport> {
    let url = format!("{}/agents/{agent}", server.base);
    let found = discover(&http(), &url, None).await.unwrap();
    let preferences = Preferences {
        versions: vec![version.into()],
        bindings: vec![Binding::HttpJson],
    };
    let chosen = choose(&found.card, &preferences).unwrap();
    assert_eq!(
        (chosen.binding, chosen.version.as_str(), chosen.url.as_str()),
        (Binding::HttpJson, version, url.as_str())
    );
    connect(http(), &chosen, Placement::default()).unwrap()
}

fn message(id: &str, text: &str, configuration: Value) -> SendMessageRequest {
    serde_json::from_value(json!({
        "message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": configuration,
    }))
    .unwrap()
}

async fn send_task(client: &Arc<dyn Transport>, request: &SendMessageRequest) -> Task {
    match client.send(request).await.unwrap() {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(m) => panic!("a message instead of a task: {m:?}"),
    }
}

fn refused(result: Result<impl std::fmt::Debug, CallError>) -> ErrorKind {
    match result {
        Err(CallError::A2A(error)) => error.kind,
        other => panic!("expected an A2A error, got {other:?}"),
    }
}

fn stream_refused(result: Result<EventStream, CallError>) -> ErrorKind {
    refused(result.map(|_| "a stream"))
}

/// Every item of a stream (it must end within the timeout).
async fn collect(stream: EventStream) -> Vec<StreamItem> {
    let items = stream.map(|item| item.unwrap()).collect::<Vec<_>>();
    tokio::time::timeout(Duration::from_secs(20), items)
        .await
        .unwrap()
}

/// What an event says, without its ids and timestamps.
fn seen(event: &StreamResponse) -> String {
    match event {
        StreamResponse::Task(task) => format!("task {:?}", task.status.state),
        StreamResponse::Message(m) => format!("message {}", m.text()),
        StreamResponse::StatusUpdate(update) => format!("status {:?}", update.status.state),
        StreamResponse::ArtifactUpdate(update) => {
            let text = update.artifact.parts.iter().filter_map(|p| p.as_text());
            format!("artifact {}", text.collect::<String>())
        }
    }
}

async fn wait_for_state(client: &Arc<dyn Transport>, task_id: &str, state: TaskState) -> Task {
    for _ in 0..100 {
        let task = client.get_task(task_id, None).await.unwrap();
        if task.status.state == state {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {task_id} never reached {state:?}");
}

async fn unary_calls(version: &str) {
    let server = start().await;
    let echo = client(&server, "echo", version).await;

    // A blocking send: the finished task, the artifact holding the text.
    let text = format!("hello over HTTP+JSON {version}");
    let task = send_task(&echo, &message("m-1", &text, Value::Null)).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(task.artifacts.len(), 1, "{task:?}");
    assert_eq!(task.artifacts[0].parts[0].as_text(), Some(text.as_str()));
    assert_eq!(task.status.message.as_ref().unwrap().text(), text);

    // GetTask, whole and with its history cut.
    let read = echo.get_task(&task.id, None).await.unwrap();
    assert_eq!(
        (
            read.id.as_str(),
            read.context_id.as_str(),
            read.status.state
        ),
        (
            task.id.as_str(),
            task.context_id.as_str(),
            TaskState::Completed
        )
    );
    assert_eq!(read.history[0].message_id, "m-1", "{read:?}");
    assert_eq!(read.history[0].text(), text);
    let newest = read.history.last().unwrap().message_id.clone();
    let one = echo.get_task(&task.id, Some(1)).await.unwrap();
    assert_eq!(one.history.len(), 1, "{one:?}");
    assert_eq!(one.history[0].message_id, newest);
    let none = echo.get_task(&task.id, Some(0)).await.unwrap();
    assert!(none.history.is_empty(), "{none:?}");
    assert_eq!(none.artifacts, read.artifacts);

    // Errors come back as the A2A error they are.
    assert_eq!(
        refused(echo.get_task("no-such-task", None).await),
        ErrorKind::TaskNotFound
    );
    assert_eq!(
        refused(echo.cancel_task("no-such-task").await),
        ErrorKind::TaskNotFound
    );
    assert_eq!(
        refused(echo.cancel_task(&task.id).await),
        ErrorKind::TaskNotCancelable
    );

    // ListTasks (1.0 only): a second task in the same context, then a page at a time.
    let follow_up: SendMessageRequest = serde_json::from_value(json!({"message": {
        "messageId": "m-2", "role": "ROLE_USER", "contextId": task.context_id, "parts": [{"text": "again"}]
    }}))
    .unwrap();
    let second = send_task(&echo, &follow_up).await;
    assert_eq!(second.context_id, task.context_id);
    assert_ne!(second.id, task.id);
    let in_context = ListTasksRequest {
        context_id: Some(task.context_id.clone()),
        page_size: Some(1),
        ..ListTasksRequest::default()
    };
    if version == "0.3" {
        assert_eq!(
            refused(echo.list_tasks(&in_context).await),
            ErrorKind::UnsupportedOperation
        );
        return;
    }
    let first_page = echo.list_tasks(&in_context).await.unwrap();
    assert_eq!(
        (
            first_page.total_size,
            first_page.page_size,
            first_page.tasks.len()
        ),
        (2, 1, 1),
        "{first_page:?}"
    );
    assert_eq!(first_page.tasks[0].id, second.id, "newest first");
    assert!(
        first_page.tasks[0].artifacts.is_empty(),
        "artifacts were not asked for"
    );
    let next = ListTasksRequest {
        page_token: Some(first_page.next_page_token.clone()),
        include_artifacts: true,
        ..in_context.clone()
    };
    let last_page = echo.list_tasks(&next).await.unwrap();
    assert_eq!(last_page.tasks.len(), 1, "{last_page:?}");
    assert_eq!(last_page.tasks[0].id, task.id);
    assert_eq!(last_page.tasks[0].artifacts, task.artifacts);
    assert_eq!(last_page.next_page_token, "");
    let canceled = ListTasksRequest {
        status: Some(TaskState::Canceled),
        ..ListTasksRequest::default()
    };
    assert!(echo.list_tasks(&canceled).await.unwrap().tasks.is_empty());
}

#[tokio::test]
async fn unary_calls_v1() {
    unary_calls("1.0").await;
}

#[tokio::test]
async fn unary_calls_v03() {
    unary_calls("0.3").await;
}

/// `returnImmediately`, CancelTask of a working task, and SubscribeToTask following it
/// live (the conformance agent keeps a task named by nothing working until canceled).
async fn a_working_task(version: &str) {
    let server = start().await;
    let agent = client(&server, "conformance", version).await;
    let at_once = json!({"returnImmediately": true});
    let task = send_task(&agent, &message("w-1", "keep working", at_once)).await;
    assert!(
        matches!(task.status.state, TaskState::Submitted | TaskState::Working),
        "{task:?}"
    );
    wait_for_state(&agent, &task.id, TaskState::Working).await;

    let mut live = agent.subscribe(&task.id, None).await.unwrap();
    let first = live.next().await.unwrap().unwrap();
    match &first.event {
        StreamResponse::Task(snapshot) => {
            assert_eq!(
                (snapshot.id.as_str(), snapshot.status.state),
                (task.id.as_str(), TaskState::Working)
            );
        }
        other => panic!("the first event is not the task: {other:?}"),
    }
    let canceled = agent.cancel_task(&task.id).await.unwrap();
    assert_eq!(
        (canceled.id.as_str(), canceled.status.state),
        (task.id.as_str(), TaskState::Canceled)
    );
    let rest = collect(live).await;
    let seen: Vec<String> = rest.iter().map(|item| seen(&item.event)).collect();
    assert_eq!(seen.last().map(String::as_str), Some("status Canceled"));
    let read = agent.get_task(&task.id, None).await.unwrap();
    assert_eq!(read.status.state, TaskState::Canceled);
    // A finished task has nothing more to follow (1.0 §3.1.6), told as an error answer.
    assert_eq!(
        stream_refused(agent.subscribe(&task.id, None).await),
        ErrorKind::UnsupportedOperation
    );
    assert_eq!(
        stream_refused(agent.subscribe("no-such-task", None).await),
        ErrorKind::TaskNotFound
    );
}

#[tokio::test]
async fn a_working_task_v1() {
    a_working_task("1.0").await;
}

#[tokio::test]
async fn a_working_task_v03() {
    a_working_task("0.3").await;
}

/// SendStreamingMessage's events in order, then SubscribeToTask with a `Last-Event-ID`:
/// exactly the events after it.
async fn streams_and_resumes(version: &str) {
    let server = start().await;
    let echo = client(&server, "echo", version).await;
    let stream = echo
        .send_streaming(&message("s-1", "streamed", Value::Null))
        .await
        .unwrap();
    let items = collect(stream).await;
    let seen_all: Vec<String> = items.iter().map(|item| seen(&item.event)).collect();
    assert_eq!(
        seen_all,
        [
            "task Submitted",
            "status Working",
            "artifact streamed",
            "status Completed"
        ],
        "{items:?}"
    );
    let StreamResponse::Task(task) = &items[0].event else {
        unreachable!()
    };
    let ids: Vec<u64> = items
        .iter()
        .map(|item| item.id.as_deref().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");

    let after = items[1].id.clone().unwrap();
    let resumed = collect(echo.subscribe(&task.id, Some(&after)).await.unwrap()).await;
    let resumed_ids: Vec<Option<String>> = resumed.iter().map(|item| item.id.clone()).collect();
    let later_ids: Vec<Option<String>> = items[2..].iter().map(|item| item.id.clone()).collect();
    assert_eq!(resumed_ids, later_ids);
    let resumed_seen: Vec<String> = resumed.iter().map(|item| seen(&item.event)).collect();
    assert_eq!(resumed_seen, seen_all[2..]);
    // Resuming after the last event: nothing is left.
    let last = items[3].id.clone().unwrap();
    let nothing = collect(echo.subscribe(&task.id, Some(&last)).await.unwrap()).await;
    assert!(nothing.is_empty(), "{nothing:?}");
}

#[tokio::test]
async fn streams_and_resumes_v1() {
    streams_and_resumes("1.0").await;
}

#[tokio::test]
async fn streams_and_resumes_v03() {
    streams_and_resumes("0.3").await;
}

async fn push_configs(version: &str) {
    let server = start().await;
    let echo = client(&server, "echo", version).await;
    let task = send_task(&echo, &message("p-1", "push", Value::Null)).await;
    let config: TaskPushNotificationConfig = serde_json::from_value(json!({
        "taskId": task.id, "id": "hook-1", "url": "http://127.0.0.1:9/hook", "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "s3cret"}
    }))
    .unwrap();
    let created = echo.create_push_config(&config).await.unwrap();
    assert_eq!(
        (
            created.id.as_deref(),
            created.task_id.as_str(),
            created.url.as_str(),
            created.token.as_deref()
        ),
        (
            Some("hook-1"),
            task.id.as_str(),
            "http://127.0.0.1:9/hook",
            Some("tok-1")
        )
    );
    assert_eq!(created.authentication.as_ref().unwrap().scheme, "Bearer");
    let other = TaskPushNotificationConfig {
        id: Some("hook-2".into()),
        url: "http://127.0.0.1:9/other".into(),
        token: None,
        authentication: None,
        ..config.clone()
    };
    let created_other = echo.create_push_config(&other).await.unwrap();
    assert_eq!(created_other.url, "http://127.0.0.1:9/other");

    let read = echo.get_push_config(&task.id, "hook-1").await.unwrap();
    assert_eq!(read, created);
    let mut listed = echo.list_push_configs(&task.id).await.unwrap();
    listed.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(listed, [created.clone(), created_other.clone()]);

    echo.delete_push_config(&task.id, "hook-1").await.unwrap();
    let left = echo.list_push_configs(&task.id).await.unwrap();
    assert_eq!(left, [created_other]);
    assert!(
        echo.get_push_config(&task.id, "hook-1")
            .await
            .is_err_and(|e| e.is_refusal())
    );
    assert_eq!(
        refused(echo.list_push_configs("no-such-task").await),
        ErrorKind::TaskNotFound
    );
    // A target outside the trusted addresses is refused.
    let private = TaskPushNotificationConfig {
        id: Some("hook-3".into()),
        url: "http://10.1.2.3/hook".into(),
        ..config
    };
    assert!(
        echo.create_push_config(&private)
            .await
            .is_err_and(|e| e.is_refusal())
    );
}

#[tokio::test]
async fn push_configs_v1() {
    push_configs("1.0").await;
}

#[tokio::test]
async fn push_configs_v03() {
    push_configs("0.3").await;
}

/// A conversation: the consolidate agent asks which of two facts holds (the stream ends
/// at input-required), and the answer, sent on the same task, completes it.
async fn a_conversation(version: &str) {
    let server = start().await;
    let agent = client(&server, "consolidate", version).await;
    let transcripts = "the user is vegetarian\nthe user ordered a steak";
    let stream = agent
        .send_streaming(&message("c-1", transcripts, Value::Null))
        .await
        .unwrap();
    let items = collect(stream).await;
    let seen_all: Vec<String> = items.iter().map(|item| seen(&item.event)).collect();
    assert_eq!(
        seen_all,
        [
            "task Submitted",
            "status Working",
            "status Working",
            "status InputRequired"
        ]
    );
    let StreamResponse::StatusUpdate(question) = &items[3].event else {
        unreachable!()
    };
    let question_text = question.status.message.as_ref().unwrap().text();
    assert!(
        question_text.contains("Which one is true?"),
        "{question_text}"
    );
    let answer: SendMessageRequest = serde_json::from_value(json!({"message": {
        "messageId": "c-2", "role": "ROLE_USER", "taskId": question.task_id,
        "contextId": question.context_id, "parts": [{"text": "yes, vegetarian"}]
    }}))
    .unwrap();
    let done = send_task(&agent, &answer).await;
    assert_eq!(
        (done.id.as_str(), done.status.state),
        (question.task_id.as_str(), TaskState::Completed),
        "{done:?}"
    );
    let facts: String = done.artifacts[0]
        .parts
        .iter()
        .filter_map(|p| p.as_text())
        .collect();
    assert_eq!(facts, "- the user is vegetarian");
    let ids: Vec<&str> = done.history.iter().map(|m| m.message_id.as_str()).collect();
    assert!(ids.contains(&"c-1") && ids.contains(&"c-2"), "{ids:?}");
}

#[tokio::test]
async fn a_conversation_v1() {
    a_conversation("1.0").await;
}

#[tokio::test]
async fn a_conversation_v03() {
    a_conversation("0.3").await;
}

#[tokio::test]
async fn only_http_json_interfaces_are_taken() {
    let chosen = Chosen {
        binding: Binding::JsonRpc,
        version: "1.0".into(),
        url: "http://127.0.0.1:1/a2a".into(),
        tenant: None,
    };
    let rest = sb_client::rest::RestTransport::new(http(), &chosen, Placement::default());
    assert!(matches!(rest, Err(CallError::Transport(_))));
    let newer = Chosen {
        binding: Binding::HttpJson,
        version: "2.0".into(),
        ..chosen
    };
    let rest = sb_client::rest::RestTransport::new(http(), &newer, Placement::default());
    assert!(matches!(rest, Err(CallError::Transport(_))));
}

// === against a scripted server ===

/// What the scripted server was asked: `METHOD path?query` and the headers that matter.
type Log = Arc<Mutex<Vec<String>>>;

/// A server answering each route as the SDK servers would; it logs every request.
async fn scripted() -> (String, Log) {
    use axum::body::Body;
    use axum::http::{Response, StatusCode};

    let log: Log = Arc::default();
    let seen = log.clone();
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let seen = seen.clone();
        async move {
            let (parts, body) = request.into_parts();
            let header = |name: &str| {
                let value = parts.headers.get(name);
                value.map_or("-", |v| v.to_str().unwrap()).to_owned()
            };
            let target = parts.uri.to_string();
            seen.lock().unwrap().push(format!(
                "{} {target} version={} last={} ext={}|{}",
                parts.method,
                header("a2a-version"),
                header("last-event-id"),
                header("a2a-extensions"),
                header("x-a2a-extensions"),
            ));
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
            let json = |status: u16, body: Value| {
                Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Body::from(body.to_string()))
                    .unwrap()
            };
            let sse = |events: &str| {
                Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from(events.to_owned()))
                    .unwrap()
            };
            let path = target.split('?').next().unwrap();
            match path {
                // 1.0, Python SDK shape: the reason names the error, whatever the status.
                "/agents/x/acme/tasks/t1" => json(
                    400,
                    json!({"error": {"code": 400,
                    "status": "FAILED_PRECONDITION", "message": "no such task", "details": [
                        {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                         "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]}}),
                ),
                // JS SDK: 204 without a body.
                "/agents/x/acme/tasks/t1/pushNotificationConfigs/c1" => Response::builder()
                    .status(StatusCode::NO_CONTENT)
                    .body(Body::empty())
                    .unwrap(),
                // The request body comes back, for the test to look at.
                "/agents/x/acme/message:send" => {
                    let sent: Value = serde_json::from_slice(&body).unwrap();
                    json(
                        200,
                        json!({"message": {"messageId": "r", "role": "ROLE_AGENT",
                        "parts": [{"data": sent}]}}),
                    )
                }
                "/agents/x/acme/tasks/t1:subscribe" => sse(concat!(
                    "id: 7\ndata: {\"statusUpdate\": {\"taskId\": \"t1\", \"contextId\": \"c\", ",
                    "\"status\": {\"state\": \"TASK_STATE_WORKING\"}}}\n\n",
                    "event: error\ndata: {\"error\": {\"code\": 400, \"message\": \"gone\", ",
                    "\"details\": [{\"@type\": \"type.googleapis.com/google.rpc.ErrorInfo\", ",
                    "\"reason\": \"UNSUPPORTED_OPERATION\"}]}}\n\n"
                )),
                // 0.3, JS SDK shape: the JSON-RPC code.
                "/agents/x/v1/tasks/t1:cancel" => {
                    json(400, json!({"code": -32002, "message": "not cancelable"}))
                }
                // 0.3, the 0.3 Python SDK: only a message, and the status.
                "/agents/x/v1/tasks/t2" => json(404, json!({"message": "Task not found"})),
                "/agents/x/v1/tasks/t2:cancel" => json(409, json!({"message": "nope"})),
                "/agents/x/v1/tasks/t3:subscribe" => sse(concat!(
                    "data: {\"task\": {\"id\": \"t3\", \"contextId\": \"c\", \"status\": ",
                    "{\"state\": \"TASK_STATE_WORKING\"}, \"history\": [{\"messageId\": \"u\", ",
                    "\"role\": \"ROLE_USER\", \"content\": [{\"text\": \"hi\"}]}]}}\n\n",
                    "data: {\"statusUpdate\": {\"taskId\": \"t3\", \"contextId\": \"c\", ",
                    "\"status\": {\"state\": \"TASK_STATE_CANCELLED\"}, \"final\": true}}\n\n"
                )),
                "/agents/x/v1/tasks/t3/pushNotificationConfigs" => json(
                    200,
                    json!({"configs": [
                    {"name": "tasks/t3/pushNotificationConfigs/c9",
                     "pushNotificationConfig": {"id": "c9", "url": "https://h/hook"}}]}),
                ),
                _ => json(404, json!({"error": {"code": 404, "message": "no route"}})),
            }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, log)
}

fn scripted_client(base: &str, version: &str, tenant: Option<&str>) -> Arc<dyn Transport> {
    let chosen = Chosen {
        binding: Binding::HttpJson,
        version: version.into(),
        url: format!("{base}/agents/x/"),
        tenant: tenant.map(str::to_owned),
    };
    connect(http(), &chosen, Placement::default()).unwrap()
}

#[tokio::test]
async fn v1_wire_details() {
    let (base, log) = scripted().await;
    let client = scripted_client(&base, "1.0", Some("acme"));
    assert_eq!(
        refused(client.get_task("t1", Some(2)).await),
        ErrorKind::TaskNotFound
    );
    client.delete_push_config("t1", "c1").await.unwrap();
    let SendMessageResponse::Message(reply) = client
        .send(&message("m", "hi", json!({"returnImmediately": true})))
        .await
        .unwrap()
    else {
        panic!("a message was sent back");
    };
    let sent = match &reply.parts[0].content {
        sb_protocol::PartContent::Data(sent) => sent.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(sent["message"]["parts"], json!([{"text": "hi"}]), "{sent}");
    assert_eq!(sent["configuration"]["returnImmediately"], true, "{sent}");
    let mut events = client.subscribe("t1", Some("6")).await.unwrap();
    let first = events.next().await.unwrap().unwrap();
    assert_eq!(first.id.as_deref(), Some("7"));
    assert_eq!(seen(&first.event), "status Working");
    let error = events.next().await.unwrap();
    assert_eq!(refused(error), ErrorKind::UnsupportedOperation);
    let resume = sb_protocol::card::RESUME_EXTENSION;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "GET /agents/x/acme/tasks/t1?historyLength=2 version=1.0 last=- ext=-|-".to_owned(),
            "DELETE /agents/x/acme/tasks/t1/pushNotificationConfigs/c1 version=1.0 last=- ext=-|-"
                .to_owned(),
            "POST /agents/x/acme/message:send version=1.0 last=- ext=-|-".to_owned(),
            format!("GET /agents/x/acme/tasks/t1:subscribe version=1.0 last=6 ext={resume}|-"),
        ]
    );
    // An unknown route: the status says what it is.
    assert_eq!(
        refused(client.list_tasks(&ListTasksRequest::default()).await),
        ErrorKind::MethodNotFound
    );
}

#[tokio::test]
async fn v03_wire_details() {
    let (base, log) = scripted().await;
    let client = scripted_client(&base, "0.3", None);
    assert_eq!(
        refused(client.cancel_task("t1").await),
        ErrorKind::TaskNotCancelable
    );
    assert_eq!(
        refused(client.get_task("t2", None).await),
        ErrorKind::TaskNotFound
    );
    assert_eq!(
        refused(client.cancel_task("t2").await),
        ErrorKind::TaskNotCancelable
    );
    let events = collect(client.subscribe("t3", Some("41")).await.unwrap()).await;
    let seen_all: Vec<String> = events.iter().map(|item| seen(&item.event)).collect();
    assert_eq!(seen_all, ["task Working", "status Canceled"]);
    let StreamResponse::Task(task) = &events[0].event else {
        unreachable!()
    };
    assert_eq!(task.history[0].text(), "hi");
    let configs = client.list_push_configs("t3").await.unwrap();
    assert_eq!(
        (configs[0].task_id.as_str(), configs[0].id.as_deref()),
        ("t3", Some("c9"))
    );
    let resume = sb_protocol::card::RESUME_EXTENSION;
    assert_eq!(
        log.lock().unwrap()[3],
        format!("GET /agents/x/v1/tasks/t3:subscribe version=0.3 last=41 ext=-|{resume}")
    );
}
