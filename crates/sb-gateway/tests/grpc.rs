//! The gRPC binding, driven by the generated tonic client over a real TCP connection:
//! every RPC against in-memory services, agent selection by `tenant`, A2A errors as
//! statuses with ErrorInfo/BadRequest details, authentication, streams and resume.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test harness

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use sb_a2a_grpc::pb;
use sb_a2a_grpc::pb::a2a_service_client::A2aServiceClient;
use sb_gateway::auth::{AgentAuth, Credential};
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use tonic_types::StatusExt;

mod support;

type Client = A2aServiceClient<Channel>;

/// A gateway serving gRPC on a free port: echo (the default agent, with a bearer token
/// when `token` is given) and conformance.
async fn serve(token: Option<&str>) -> Client {
    let mut auth = BTreeMap::new();
    if let Some(token) = token {
        let credential = Credential {
            principal: "alice".into(),
            secret: token.into(),
        };
        let echo = AgentAuth {
            bearer_tokens: vec![credential],
            ..Default::default()
        };
        auth.insert("echo".to_owned(), echo);
    }
    let state = support::state(auth, |host| Arc::new(host), 10);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let server = tonic::transport::Server::builder()
        .add_service(sb_gateway::grpc::service(state))
        .serve_with_incoming(incoming);
    tokio::spawn(server);
    A2aServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
}

fn message(id: &str, text: &str) -> pb::Message {
    pb::Message {
        message_id: id.into(),
        role: pb::Role::User as i32,
        parts: vec![pb::Part {
            content: Some(pb::part::Content::Text(text.into())),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn send_request(tenant: &str, message: pb::Message, immediately: bool) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        tenant: tenant.into(),
        message: Some(message),
        configuration: Some(pb::SendMessageConfiguration {
            return_immediately: immediately,
            ..Default::default()
        }),
        metadata: None,
    }
}

fn task_of(response: pb::SendMessageResponse) -> pb::Task {
    match response.payload {
        Some(pb::send_message_response::Payload::Task(task)) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn state(task: &pb::Task) -> pb::TaskState {
    task.status.as_ref().unwrap().state()
}

/// The ErrorInfo of a status: (reason, domain, taskId).
fn error_info(status: &Status) -> (String, String, Option<String>) {
    let details = status.get_error_details();
    let info = details.error_info().expect("an ErrorInfo detail");
    let task = info.metadata.get("taskId").cloned();
    (info.reason.clone(), info.domain.clone(), task)
}

async fn collect(
    stream: tonic::Streaming<pb::StreamResponse>,
) -> Vec<pb::stream_response::Payload> {
    let items = tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
        .await
        .expect("the stream closes");
    items
        .into_iter()
        .map(|item| item.unwrap().payload.unwrap())
        .collect()
}

#[tokio::test]
async fn unary_rpcs_reach_the_agent_the_tenant_names() {
    let mut client = serve(None).await;
    // No tenant: the default agent (echo) completes with the text.
    let sent = client
        .send_message(send_request("", message("g-1", "hello grpc"), false))
        .await
        .unwrap()
        .into_inner();
    let task = task_of(sent);
    assert_eq!(state(&task), pb::TaskState::Completed);
    assert!(format!("{:?}", task.artifacts).contains("hello grpc"));

    let got = client
        .get_task(pb::GetTaskRequest {
            id: task.id.clone(),
            history_length: Some(0),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.id, task.id);
    assert!(got.history.is_empty(), "historyLength 0 returns no history");

    let listed = client
        .list_tasks(pb::ListTasksRequest {
            tenant: "echo".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.total_size, 1);
    assert_eq!(listed.tasks[0].id, task.id);

    // The conformance agent keeps a non-TCK task working until it is canceled.
    let working = client
        .send_message(send_request("conformance", message("ff-1", "wait"), true))
        .await
        .unwrap()
        .into_inner();
    let working = task_of(working);
    let cancel = pb::CancelTaskRequest {
        tenant: "conformance".into(),
        id: working.id.clone(),
        metadata: None,
    };
    let canceled = client
        .cancel_task(cancel.clone())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(state(&canceled), pb::TaskState::Canceled);
    let again = client.cancel_task(cancel).await.unwrap().into_inner();
    assert_eq!(
        state(&again),
        pb::TaskState::Canceled,
        "1.0 cancel is idempotent"
    );

    // Tasks belong to their agent: echo does not know the conformance task.
    let elsewhere = client
        .get_task(pb::GetTaskRequest {
            id: working.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(elsewhere.code(), Code::NotFound);
}

#[tokio::test]
async fn push_configs_round_trip() {
    let mut client = serve(None).await;
    let task = task_of(
        client
            .send_message(send_request("echo", message("p-1", "x"), false))
            .await
            .unwrap()
            .into_inner(),
    );
    let created = client
        .create_task_push_notification_config(pb::TaskPushNotificationConfig {
            tenant: "echo".into(),
            id: "hook-1".into(),
            task_id: task.id.clone(),
            url: "http://127.0.0.1:9/hook".into(),
            token: "secret".into(),
            authentication: Some(pb::AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: "cred".into(),
            }),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (created.id.as_str(), created.task_id.as_str()),
        ("hook-1", task.id.as_str())
    );
    let got = client
        .get_task_push_notification_config(pb::GetTaskPushNotificationConfigRequest {
            task_id: task.id.clone(),
            id: "hook-1".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.url, "http://127.0.0.1:9/hook");
    assert_eq!(got.authentication.unwrap().scheme, "Bearer");
    let list = pb::ListTaskPushNotificationConfigsRequest {
        task_id: task.id.clone(),
        ..Default::default()
    };
    let listed = client
        .list_task_push_notification_configs(list.clone())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.configs.len(), 1);
    client
        .delete_task_push_notification_config(pb::DeleteTaskPushNotificationConfigRequest {
            task_id: task.id.clone(),
            id: "hook-1".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let listed = client
        .list_task_push_notification_configs(list)
        .await
        .unwrap()
        .into_inner();
    assert!(listed.configs.is_empty());
}

#[tokio::test]
async fn errors_carry_the_a2a_code_and_details() {
    let mut client = serve(None).await;
    let missing = client
        .get_task(pb::GetTaskRequest {
            id: "no-such-task".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    let (reason, domain, task) = error_info(&missing);
    assert_eq!(
        (reason.as_str(), domain.as_str()),
        ("TASK_NOT_FOUND", "a2a-protocol.org")
    );
    assert_eq!(task.as_deref(), Some("no-such-task"));

    let mut empty = message("e-1", "x");
    empty.parts.clear();
    let invalid = client
        .send_message(send_request("", empty, false))
        .await
        .unwrap_err();
    assert_eq!(invalid.code(), Code::InvalidArgument);
    assert_eq!(error_info(&invalid).0, "INVALID_PARAMS");
    let details = invalid.get_error_details();
    let violations = &details.bad_request().unwrap().field_violations;
    assert_eq!(violations[0].field, "message.parts");

    let mut old = Request::new(pb::GetTaskRequest::default());
    old.metadata_mut()
        .insert("a2a-version", "0.3".parse().unwrap());
    let refused = client.get_task(old).await.unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert_eq!(error_info(&refused).0, "VERSION_NOT_SUPPORTED");

    let huge = message("e-big", &"x".repeat(100 * 1024));
    let too_big = client
        .send_message(send_request("", huge, false))
        .await
        .unwrap_err();
    assert_eq!(too_big.code(), Code::OutOfRange, "over max_body_bytes");

    let unknown = client
        .get_task(pb::GetTaskRequest {
            tenant: "nobody".into(),
            id: "t".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
    assert!(unknown.message().contains("nobody"));

    let done = task_of(
        client
            .send_message(send_request("", message("e-2", "x"), false))
            .await
            .unwrap()
            .into_inner(),
    );
    let finished = client
        .subscribe_to_task(pb::SubscribeToTaskRequest {
            id: done.id,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(finished.code(), Code::FailedPrecondition);
    assert_eq!(error_info(&finished).0, "UNSUPPORTED_OPERATION");
}

#[tokio::test]
async fn credentials_travel_in_metadata() {
    let mut client = serve(Some("tok")).await;
    let refused = client
        .send_message(send_request("echo", message("a-1", "x"), false))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert_eq!(error_info(&refused).0, "UNAUTHENTICATED");
    assert!(
        refused.metadata().get("www-authenticate").is_some(),
        "the challenge, as HTTP sends it"
    );

    let mut authed = Request::new(send_request("echo", message("a-2", "x"), false));
    authed
        .metadata_mut()
        .insert("authorization", "Bearer tok".parse().unwrap());
    let task = task_of(client.send_message(authed).await.unwrap().into_inner());
    assert_eq!(state(&task), pb::TaskState::Completed);

    let mut card = Request::new(pb::GetExtendedAgentCardRequest::default());
    card.metadata_mut()
        .insert("authorization", "Bearer tok".parse().unwrap());
    let card = client
        .get_extended_agent_card(card)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(card.name, "echo");
    let grpc = card
        .supported_interfaces
        .iter()
        .find(|i| i.protocol_binding == "GRPC")
        .unwrap();
    assert_eq!(
        (grpc.url.as_str(), grpc.tenant.as_str()),
        ("sb.test:80", "echo")
    );

    // conformance needs no credentials and declares no extended card.
    let none = client
        .get_extended_agent_card(pb::GetExtendedAgentCardRequest {
            tenant: "conformance".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(error_info(&none).0, "UNSUPPORTED_OPERATION");
}

#[tokio::test]
async fn streams_end_with_the_task_and_resume_after_a_cursor() {
    let mut client = serve(None).await;
    let stream = client
        .send_streaming_message(send_request("", message("s-1", "streamed"), false))
        .await
        .unwrap()
        .into_inner();
    let events = collect(stream).await;
    let pb::stream_response::Payload::Task(first) = &events[0] else {
        panic!("the task comes first: {events:?}");
    };
    let task_id = first.id.clone();
    let last = events.last().unwrap();
    let pb::stream_response::Payload::StatusUpdate(last) = last else {
        panic!("a status update ends the stream: {last:?}");
    };
    assert_eq!(
        last.status.as_ref().unwrap().state(),
        pb::TaskState::Completed
    );

    // Resuming after the first event replays exactly the rest, each tagged with its seq.
    let mut resume = Request::new(pb::SubscribeToTaskRequest {
        id: task_id.clone(),
        ..Default::default()
    });
    resume
        .metadata_mut()
        .insert("last-event-id", "1".parse().unwrap());
    let response = client.subscribe_to_task(resume).await.unwrap();
    assert_eq!(
        response.metadata().get("a2a-extensions").unwrap(),
        sb_gateway::ops::RESUME_EXTENSION
    );
    let replayed = collect(response.into_inner()).await;
    assert_eq!(replayed.len(), events.len() - 1);
    let seqs: Vec<String> = replayed
        .iter()
        .map(|event| {
            let metadata = match event {
                pb::stream_response::Payload::StatusUpdate(e) => e.metadata.clone(),
                pb::stream_response::Payload::ArtifactUpdate(e) => e.metadata.clone(),
                other => panic!("only updates follow the snapshot: {other:?}"),
            };
            let tag = &metadata.unwrap().fields[sb_gateway::ops::RESUME_EXTENSION];
            format!("{:?}", tag.kind)
        })
        .collect();
    assert!(seqs[0].contains("2.0"), "{seqs:?}");

    // Subscribing to a working task follows it until it is canceled.
    let working = task_of(
        client
            .send_message(send_request("conformance", message("ff-2", "x"), true))
            .await
            .unwrap()
            .into_inner(),
    );
    let follow = client
        .subscribe_to_task(pb::SubscribeToTaskRequest {
            tenant: "conformance".into(),
            id: working.id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    let mut canceler = client.clone();
    let cancel = pb::CancelTaskRequest {
        tenant: "conformance".into(),
        id: working.id,
        metadata: None,
    };
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceler.cancel_task(cancel).await.unwrap();
    });
    let followed = collect(follow).await;
    let Some(pb::stream_response::Payload::StatusUpdate(end)) = followed.last() else {
        panic!("ends with a status update: {followed:?}");
    };
    assert_eq!(
        end.status.as_ref().unwrap().state(),
        pb::TaskState::Canceled
    );
}

/// A blocking SendMessage over gRPC answers when its task is terminal or interrupted,
/// not when the agent's turn ends: the conformance agent ends the turn of a message it
/// does not know with the task still working, and the call answers once it is canceled.
#[tokio::test]
async fn a_blocking_send_waits_for_the_task_not_the_turn() {
    let client = serve(None).await;
    let mut sender = client.clone();
    let pending = tokio::spawn(async move {
        let mut keep = message("keep-grpc", "work on");
        keep.context_id = "grpc-blocking".into();
        sender
            .send_message(send_request("conformance", keep, false))
            .await
    });
    let mut lister = client.clone();
    let mut task_id = None;
    for _ in 0..300 {
        let listed = lister
            .list_tasks(pb::ListTasksRequest {
                tenant: "conformance".into(),
                context_id: "grpc-blocking".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        if let Some(task) = listed.tasks.first()
            && state(task) == pb::TaskState::Working
        {
            task_id = Some(task.id.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let task_id = task_id.expect("a working task");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !pending.is_finished(),
        "answered while the task was working"
    );
    let mut canceler = client.clone();
    canceler
        .cancel_task(pb::CancelTaskRequest {
            tenant: "conformance".into(),
            id: task_id,
            ..Default::default()
        })
        .await
        .unwrap();
    let answered = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("an answer once the task ended")
        .unwrap()
        .unwrap()
        .into_inner();
    assert_eq!(state(&task_of(answered)), pb::TaskState::Canceled);
}
