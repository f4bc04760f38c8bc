//! The real binary serves the A2A gRPC binding on its HTTP port: a client that follows
//! an agent card's GRPC interface (address and tenant) reaches that agent, while HTTP
//! keeps working on the same listener.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::zombie_processes)] // test harness; Drop reaps the child

use sb_a2a_grpc::pb;
use sb_a2a_grpc::pb::a2a_service_client::A2aServiceClient;
use serde_json::Value;

#[path = "support/process.rs"]
mod process;

use process::Served;

async fn start() -> Served {
    let args = ["--memory", "--default-agent", "echo"];
    process::serve(process::free_port(), &args).await
}

async fn grpc_interface(card_url: &str) -> (String, String) {
    let card: Value = reqwest::get(card_url).await.unwrap().json().await.unwrap();
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let grpc = interfaces
        .iter()
        .find(|i| i["protocolBinding"] == "GRPC")
        .expect("the card lists a GRPC interface");
    assert_eq!(grpc["protocolVersion"], "1.0");
    let tenant = grpc["tenant"].as_str().unwrap_or_default().to_owned();
    (grpc["url"].as_str().unwrap().to_owned(), tenant)
}

#[tokio::test]
async fn cards_lead_grpc_clients_to_their_agent() {
    let server = start().await;
    let base = &server.base;
    let (url, tenant) = grpc_interface(&format!(
        "{base}/agents/conformance/.well-known/agent-card.json"
    ))
    .await;
    assert_eq!(&format!("http://{url}"), base, "host:port of the listener");
    assert_eq!(tenant, "conformance");
    let mut client = A2aServiceClient::connect(format!("http://{url}"))
        .await
        .unwrap();
    let request = |tenant: &str, id: &str| pb::SendMessageRequest {
        tenant: tenant.into(),
        message: Some(pb::Message {
            message_id: id.into(),
            role: pb::Role::User as i32,
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Text("hi".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    // conformance answers a tck-message-response id with a message, echo with a task.
    let reply = client
        .send_message(request(&tenant, "tck-message-response-1"))
        .await
        .unwrap()
        .into_inner();
    assert!(matches!(
        reply.payload,
        Some(pb::send_message_response::Payload::Message(_))
    ));
    let (_, root_tenant) = grpc_interface(&format!("{base}/.well-known/agent-card.json")).await;
    assert_eq!(root_tenant, "", "the root card's agent is the default");
    let task = client
        .send_message(request(&root_tenant, "m-2"))
        .await
        .unwrap()
        .into_inner();
    let Some(pb::send_message_response::Payload::Task(task)) = task.payload else {
        panic!("echo answers with a task");
    };
    // The task is visible over HTTP on the same port.
    let rest: Value = reqwest::Client::new()
        .get(format!("{base}/agents/echo/tasks/{}", task.id))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rest["status"]["state"], "TASK_STATE_COMPLETED");
}
