//! `sb-client`'s gRPC binding against Switchboard in process: a card leads the client to
//! the gRPC interface (address and tenant), and every call of the `Transport` trait
//! reaches the agent, with A2A errors read back into their kinds, stream events carrying
//! the ids a subscription resumes after, and credentials sent as metadata.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use sb_client::interface::{self, Binding, Preferences};
use sb_client::{CallError, Placement, StreamItem, Transport};
use sb_protocol::requests::{ListTasksRequest, SendMessageRequest};
use sb_protocol::{
    ErrorKind, PartContent, SendMessageResponse, StreamResponse, Task, TaskPushNotificationConfig,
    TaskState,
};
use serde_json::json;
use switchboard::config::{self, Overrides};

#[path = "support/in_process.rs"]
mod in_process;

use in_process::InProcess;

/// Serves the default agents on a free port until dropped.
async fn start(overrides: Overrides) -> InProcess {
    in_process::serve(|address| {
        let overrides = Overrides {
            memory: true,
            listen: Some(address),
            ..overrides
        };
        switchboard::Switchboard::new(config::load(None, overrides).unwrap())
    })
    .await
}

/// The gRPC transport the agent's card leads to, sending `placement`.
async fn connect(base: &str, agent: &str, placement: Placement) -> Arc<dyn Transport> {
    let http = reqwest::Client::new();
    let card = sb_client::discover(&http, &format!("{base}/agents/{agent}"), None)
        .await
        .unwrap()
        .card;
    let preferences = Preferences {
        versions: vec!["1.0".into()],
        bindings: vec![Binding::Grpc],
    };
    let chosen = interface::choose(&card, &preferences).expect("a 1.0 GRPC interface");
    assert_eq!(chosen.binding, Binding::Grpc);
    assert_eq!(
        format!("http://{}", chosen.url),
        base,
        "host:port of the listener"
    );
    assert_eq!(chosen.tenant.as_deref(), Some(agent));
    sb_client::connect(http, &chosen, placement).unwrap()
}

fn message(text: &str, return_immediately: bool) -> SendMessageRequest {
    serde_json::from_value(json!({
        "message": {"messageId": sb_protocol::new_id(), "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": return_immediately}
    }))
    .unwrap()
}

fn task_of(reply: SendMessageResponse) -> Task {
    match reply {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("a message instead of a task: {message:?}"),
    }
}

fn refusal<T>(result: Result<T, CallError>) -> sb_protocol::A2AError {
    match result {
        Err(CallError::A2A(error)) => error,
        Err(other) => panic!("an A2A error expected, got {other:?}"),
        Ok(_) => panic!("an A2A error expected, got a result"),
    }
}

fn text_of_artifacts(task: &Task) -> Vec<String> {
    let parts = task.artifacts.iter().flat_map(|a| &a.parts);
    parts
        .filter_map(|p| match &p.content {
            PartContent::Text(text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

async fn collect(stream: sb_client::EventStream) -> Vec<StreamItem> {
    let items = tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>());
    let items = items.await.expect("the stream ends");
    items.into_iter().map(|item| item.unwrap()).collect()
}

#[tokio::test]
async fn tasks_over_grpc_from_send_to_subscribe() {
    let server = start(Overrides::default()).await;
    let base = server.base.clone();
    let echo = connect(&base, "echo", Placement::default()).await;

    // Blocking send: the finished task, its artifact and history.
    let task = task_of(echo.send(&message("hello", false)).await.unwrap());
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(text_of_artifacts(&task), ["hello"]);
    let full = echo.get_task(&task.id, None).await.unwrap();
    assert_eq!(full.id, task.id);
    assert_eq!(full.history[0].text(), "hello");
    assert_eq!(full.history.len(), 1, "{full:?}");
    let none = echo.get_task(&task.id, Some(0)).await.unwrap();
    assert!(none.history.is_empty(), "historyLength 0: {none:?}");
    assert_eq!(echo.get_task(&task.id, Some(1)).await.unwrap(), full);

    // Listing by context finds exactly it.
    let listing = ListTasksRequest {
        context_id: Some(task.context_id.clone()),
        ..ListTasksRequest::default()
    };
    let listed = echo.list_tasks(&listing).await.unwrap();
    let ids: Vec<&str> = listed.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, [task.id.as_str()]);
    assert_eq!(listed.total_size, 1);
    assert_eq!(listed.next_page_token, "");

    // Refusals come back as their kinds.
    let not_cancelable = refusal(echo.cancel_task(&task.id).await);
    assert_eq!(not_cancelable.kind, ErrorKind::TaskNotCancelable);
    assert_eq!(not_cancelable.task_id.as_deref(), Some(task.id.as_str()));
    let missing = refusal(echo.get_task("no-such-task", None).await);
    assert_eq!(missing.kind, ErrorKind::TaskNotFound);
    assert!(!missing.retryable);
    let finished = refusal(echo.subscribe(&task.id, None).await);
    assert_eq!(finished.kind, ErrorKind::UnsupportedOperation);

    // A stream: every task event with its seq as id, in order, ending terminal.
    let events = collect(
        echo.send_streaming(&message("stream me", false))
            .await
            .unwrap(),
    )
    .await;
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e.id.as_deref().expect("an id").parse().unwrap())
        .collect();
    assert!(seqs.len() >= 3, "{events:?}");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let last = &events.last().unwrap().event;
    assert_eq!(last.state(), Some(TaskState::Completed), "{last:?}");
    let chunks: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.event {
            StreamResponse::ArtifactUpdate(update) => Some(update.artifact.parts[0].as_text()),
            _ => None,
        })
        .collect();
    assert_eq!(chunks, [Some("stream me")]);
    let streamed_id = match &events[0].event {
        StreamResponse::Task(task) => task.id.clone(),
        other => panic!("a stream starts with the task: {other:?}"),
    };

    // Resuming after the first event gives the later ones, the same ids and events.
    let first = events[0].id.clone().unwrap();
    let resumed = echo.subscribe(&streamed_id, Some(&first)).await.unwrap();
    let resumed = collect(resumed).await;
    assert_eq!(resumed.len(), events.len() - 1, "{resumed:?}");
    assert_eq!(resumed, events[1..]);
    let after_all = events.last().unwrap().id.clone().unwrap();
    let nothing = echo
        .subscribe(&streamed_id, Some(&after_all))
        .await
        .unwrap();
    assert!(collect(nothing).await.is_empty());
}

#[tokio::test]
async fn open_tasks_are_canceled_and_carry_push_configs() {
    let overrides = Overrides {
        webhook_allow: vec!["127.0.0.1/32".into()],
        ..Overrides::default()
    };
    let server = start(overrides).await;
    let base = server.base.clone();
    let agent = connect(&base, "conformance", Placement::default()).await;

    // returnImmediately: the task as created, still open (this agent works until
    // canceled).
    let task = task_of(agent.send(&message("keep working", true)).await.unwrap());
    assert!(!task.status.state.is_terminal(), "{task:?}");

    let config = TaskPushNotificationConfig {
        tenant: None,
        id: Some("hook-1".into()),
        task_id: task.id.clone(),
        url: "http://127.0.0.1:9/hooks".into(),
        token: Some("t0k".into()),
        authentication: None,
    };
    let created = agent.create_push_config(&config).await.unwrap();
    assert_eq!(created.id.as_deref(), Some("hook-1"));
    assert_eq!(created.task_id, task.id);
    assert_eq!(created.url, config.url);
    let got = agent.get_push_config(&task.id, "hook-1").await.unwrap();
    assert_eq!(got, created);
    let listed = agent.list_push_configs(&task.id).await.unwrap();
    assert_eq!(listed, [created]);
    agent.delete_push_config(&task.id, "hook-1").await.unwrap();
    assert!(agent.list_push_configs(&task.id).await.unwrap().is_empty());
    let gone = refusal(agent.get_push_config(&task.id, "hook-1").await);
    assert_eq!(gone.kind, ErrorKind::TaskNotFound, "{gone:?}");

    let canceled = agent.cancel_task(&task.id).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let stored = agent.get_task(&task.id, None).await.unwrap();
    assert_eq!(stored.status.state, TaskState::Canceled);
    assert_eq!(
        stored.status.message.unwrap().role,
        sb_protocol::Role::Agent
    );
}

#[tokio::test]
async fn bearer_credentials_reach_the_server_as_metadata() {
    let overrides = Overrides {
        auth_tokens: vec!["alice=tok-alice".into(), "bob=tok-bob".into()],
        ..Overrides::default()
    };
    let server = start(overrides).await;
    let base = server.base.clone();
    let bearer = |token: &str| Placement {
        headers: vec![("Authorization".into(), format!("Bearer {token}"))],
        ..Placement::default()
    };
    let anonymous = connect(&base, "echo", Placement::default()).await;
    let refused = refusal(anonymous.send(&message("hi", false)).await);
    assert_eq!(refused.kind, ErrorKind::Unauthenticated, "{refused:?}");
    let wrong = connect(&base, "echo", bearer("tok-mallory")).await;
    let refused = refusal(wrong.send(&message("hi", false)).await);
    assert_eq!(refused.kind, ErrorKind::Unauthenticated);

    let alice = connect(&base, "echo", bearer("tok-alice")).await;
    let task = task_of(alice.send(&message("hi", false)).await.unwrap());
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(alice.get_task(&task.id, None).await.unwrap().id, task.id);
    // The task is alice's: bob, authenticated too, does not see it.
    let bob = connect(&base, "echo", bearer("tok-bob")).await;
    let hidden = refusal(bob.get_task(&task.id, None).await);
    assert_eq!(hidden.kind, ErrorKind::TaskNotFound);
}

#[tokio::test]
async fn a_server_that_is_not_there_is_a_transport_failure() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let chosen = sb_client::Chosen {
        binding: Binding::Grpc,
        version: "1.0".into(),
        url: format!("127.0.0.1:{port}"),
        tenant: None,
    };
    let transport = sb_client::connect(reqwest::Client::new(), &chosen, Placement::default());
    match transport.unwrap().get_task("t", None).await {
        Err(CallError::Transport(why)) => assert!(why.contains("GetTask"), "{why}"),
        other => panic!("a transport failure expected, got {other:?}"),
    }
    let old = sb_client::Chosen {
        version: "0.3".into(),
        ..chosen
    };
    match sb_client::connect(reqwest::Client::new(), &old, Placement::default()) {
        Err(CallError::Transport(why)) => assert!(why.contains("0.3"), "{why}"),
        Ok(_) => panic!("0.3 gRPC is refused"),
        Err(other) => panic!("{other:?}"),
    }
}
