#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use sb_agent::{Agent, AgentHost, TurnRunner};
use sb_protocol::{A2AError, Message, Role, TaskState};
use sb_store::{LocalBus, MemoryStore};
use sb_tasks::{LocalTaskService, NewTask, Scope, TaskService};
use sb_webhooks::LocalPushConfigs;
use sb_webhooks::ssrf::AddressPolicy;

use super::{TaskStateClient, TaskStateServer};

/// A task-state service over real gRPC on loopback, running the echo agent in process,
/// with at most `max_open` open tasks per principal.
async fn serve(max_open: usize) -> (TaskStateClient, Arc<LocalTaskService>) {
    let store = Arc::new(MemoryStore::default());
    let bus = Arc::new(LocalBus::new());
    let tasks =
        Arc::new(LocalTaskService::new(store.clone(), bus.clone()).with_max_in_flight(max_open));
    let echo: Arc<dyn Agent> = Arc::new(sb_agent::builtin::EchoAgent);
    let bench: Arc<dyn Agent> = Arc::new(sb_agent::builtin::BenchAgent);
    let agents = BTreeMap::from([("echo".to_owned(), echo), ("bench".to_owned(), bench)]);
    let host = AgentHost::new(agents, tasks.clone(), bus);
    let policy = Arc::new(AddressPolicy::parse("").unwrap());
    let server = TaskStateServer {
        tasks: tasks.clone(),
        push: Arc::new(LocalPushConfigs::new(store, tasks.clone(), policy)),
        runner: Arc::new(host),
        queue: None,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(server.into_service())
            .serve_with_incoming(incoming),
    );
    let channel = crate::wire::connect(&url).unwrap();
    let names = BTreeMap::from([("echo".to_owned(), None), ("bench".to_owned(), None)]);
    let client = TaskStateClient::new(channel, Arc::new(sb_agent::Roster::new(names)));
    (client, tasks)
}

fn hello() -> NewTask {
    ask("echo", "hello")
}

fn ask(agent: &str, text: &str) -> NewTask {
    NewTask {
        scope: Scope {
            agent: agent.into(),
            owner: String::new(),
        },
        message: Message {
            role: Role::User,
            ..Message::agent_text(text)
        },
        metadata: None,
    }
}

/// One call creates the task and starts its turn; the turn's end carries the task as
/// the turn left it, so a blocking SendMessage needs no further read.
#[tokio::test]
async fn start_creates_the_task_and_its_end_carries_the_settled_task() {
    let (client, tasks) = serve(100).await;
    let (created, turn) = client.start(hello()).await.unwrap();
    assert_eq!(created.task.history.len(), 1, "the task as created");
    let settled = turn.await.unwrap().expect("the task as the turn left it");
    assert_eq!(settled.task.id, created.task.id);
    assert_eq!(settled.state(), TaskState::Completed);
    let stored = tasks.get(&hello().scope, &created.task.id).await.unwrap();
    assert_eq!(settled.seq, stored.seq);
}

/// A caller that waits for the turn (a blocking SendMessage) gets one message, the
/// turn's end with the task as the turn left it: no acknowledgment to wake up for.
#[tokio::test]
async fn a_waiting_start_streams_the_turns_end_alone() {
    let (client, tasks) = serve(100).await;
    let mut request = super::client::create_request(&hello());
    request.wait_ms = 10_000;
    let messages: Vec<_> = client
        .raw()
        .start(request)
        .await
        .unwrap()
        .into_inner()
        .collect()
        .await;
    let [Ok(crate::pb::TurnProgress { over: true, record })] = &messages[..] else {
        panic!("one message, the turn's end: {messages:?}");
    };
    let settled = super::record_from(record.clone()).unwrap();
    assert_eq!(settled.state(), TaskState::Completed);
    let stored = tasks.get(&hello().scope, &settled.task.id).await.unwrap();
    assert_eq!(settled.seq, stored.seq);

    let settled = client
        .start_and_wait(hello(), Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(settled.state(), TaskState::Completed);
}

/// A turn that outlasts the wait is answered with the task as it then stands.
#[tokio::test]
async fn a_waiting_start_answers_when_the_wait_runs_out() {
    let (client, _tasks) = serve(100).await;
    let started = std::time::Instant::now();
    let held = client
        .start_and_wait(ask("bench", "hold"), Duration::from_millis(300))
        .await
        .unwrap();
    assert_eq!(held.state(), TaskState::Working);
    assert!(started.elapsed() >= Duration::from_millis(300));
}

/// A waiting start's response begins once the turn is over, so its headers, its one
/// message and its trailers leave together and the caller wakes once for them.
#[tokio::test]
async fn a_waiting_starts_response_begins_with_the_turns_end() {
    let (client, _tasks) = serve(100).await;
    let mut request = super::client::create_request(&ask("bench", "hold"));
    request.wait_ms = 400;
    let started = std::time::Instant::now();
    let response = client.raw().start(request).await.unwrap();
    let headers_after = started.elapsed();
    assert!(
        headers_after >= Duration::from_millis(400),
        "the response began before the wait was over: after {headers_after:?}"
    );
    let messages: Vec<_> = response.into_inner().collect().await;
    let [Ok(crate::pb::TurnProgress { over: true, record })] = &messages[..] else {
        panic!("one message, the turn's end: {messages:?}");
    };
    let held = super::record_from(record.clone()).unwrap();
    assert_eq!(held.state(), TaskState::Working);
}

/// A follow-up turn (Assign) ends the same way.
#[tokio::test]
async fn assign_ends_with_the_task_as_the_turn_left_it() {
    let (client, tasks) = serve(100).await;
    let created = tasks.create(hello()).await.unwrap();
    let message = created.task.history[0].clone();
    let turn = client.dispatch(&created, message).await.unwrap();
    let settled = turn.await.unwrap().expect("the task as the turn left it");
    assert_eq!(settled.state(), TaskState::Completed);
}

/// A creation the service refuses is the caller's error, before any turn.
#[tokio::test]
async fn start_answers_a_refused_creation_with_its_error() {
    let (client, tasks) = serve(1).await;
    // Open, with no turn: it holds the principal's only slot.
    tasks.create(hello()).await.unwrap();
    let Err(err) = client.start(hello()).await else {
        panic!("the open-task limit refuses a second task");
    };
    assert_eq!(
        err.kind,
        sb_protocol::ErrorKind::ResourceExhausted,
        "{err:?}"
    );
    let wait = Duration::from_secs(10);
    let Err(err) = client.start_and_wait(hello(), wait).await else {
        panic!("a waiting start is refused the same way");
    };
    assert_eq!(
        err.kind,
        sb_protocol::ErrorKind::ResourceExhausted,
        "{err:?}"
    );
}

/// Thousands of turns over one connection, many at a time, each followed to its end:
/// none fails. (A progress stream dropped before its trailers was reset, and h2 closes a
/// connection after ~1,000 such resets: every call on it then failed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_turns_share_one_connection() {
    let (client, _tasks) = serve(100_000).await;
    let turns = futures::stream::iter(0..3000).map(|_| {
        let client = client.clone();
        async move {
            let (_, turn) = client.start(hello()).await?;
            let settled = turn.await?.ok_or_else(|| A2AError::internal("turn lost"))?;
            Ok::<_, A2AError>(settled.state())
        }
    });
    let outcomes: Vec<_> = turns.buffer_unordered(64).collect().await;
    let failed: Vec<_> = outcomes
        .iter()
        .filter(|o| !matches!(o, Ok(TaskState::Completed)))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 3000 failed, e.g. {:?}",
        failed.len(),
        failed.first()
    );
}
