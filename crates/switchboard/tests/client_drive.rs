//! `sb_client::drive` against Switchboard run as a process (memory store, the built-in
//! agents): a task driven to completion, an input request answered by the resolver (by
//! stream and by polling) or left waiting, a card that lacks what the caller needs, a
//! message-only reply, tasks that fail, are rejected or want auth, a silent task canceled
//! after the idle timeout or its budget; and against a scripted server, the retries of a
//! submission an agent that is down does not take, and a refusal that is not retried.

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness

#[path = "support/process.rs"]
mod process;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use process::{Served, free_port, serve};
use sb_client::drive::{
    Answer, Cancellation, DriveError, DriveSettings, Driver, Outcome, user_text,
};
use sb_client::interface::{Preferences, choose};
use sb_client::validate::Required;
use sb_client::{Credentials, Placement, Transport, connect, discover};
use sb_protocol::requests::ListTasksRequest;
use sb_protocol::{Message, Task, TaskState};
use serde_json::json;

const TRANSCRIPTS: &str =
    "the user is vegetarian\nthe user lives in Paris\nthe user ordered a steak";
const ANSWER: &str = "Yes, the user is vegetarian; the steak was ordered for a friend.";

/// Switchboard serving the built-in agents, killed when dropped.
async fn switchboard() -> Served {
    serve(free_port(), &["--memory"]).await
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn agent_url(server: &Served, agent: &str) -> String {
    format!("{}/agents/{agent}/", server.base)
}

fn driver(url: &str, settings: DriveSettings) -> Driver {
    Driver::new(http(), url, Credentials::default(), settings)
}

/// A transport of our own to the agent, to look at its tasks beside the driver.
async fn transport(server: &Served, agent: &str) -> Arc<dyn Transport> {
    let found = discover(&http(), &agent_url(server, agent), None)
        .await
        .unwrap();
    let chosen = choose(&found.card, &Preferences::default()).unwrap();
    connect(http(), &chosen, Placement::default()).unwrap()
}

fn with_id(id: &str, text: &str) -> Message {
    Message {
        message_id: id.to_owned(),
        ..user_text(text)
    }
}

fn task(outcome: Outcome) -> Task {
    match outcome {
        Outcome::Task(task) => task,
        Outcome::Message(message) => panic!("a message instead of a task: {message:?}"),
    }
}

fn artifact_text(task: &Task) -> String {
    let parts = task.artifacts.iter().flat_map(|a| &a.parts);
    parts.filter_map(|p| p.as_text()).collect()
}

/// The questions a resolver was asked, and the resolver answering each with `answer`.
type Asked = Arc<Mutex<Vec<(Task, Message)>>>;

fn resolver(
    answer: Option<&'static str>,
) -> (
    Asked,
    impl FnMut(Task, Message) -> std::future::Ready<Option<Answer>>,
) {
    let asked: Asked = Arc::default();
    let log = asked.clone();
    let resolve = move |task: Task, question: Message| {
        log.lock().unwrap().push((task, question));
        std::future::ready(answer.map(Answer::from))
    };
    (asked, resolve)
}

fn never_asked(_: Task, question: Message) -> std::future::Ready<Option<Answer>> {
    panic!("no question was expected, got {question:?}")
}

#[tokio::test]
async fn echo_is_driven_to_completion_with_its_artifact() {
    let server = switchboard().await;
    let settings = DriveSettings {
        required: Required {
            streaming: true,
            push_notifications: false,
            skills: vec!["echo".into()],
        },
        output_modes: vec!["text/plain".into()],
        ..DriveSettings::default()
    };
    let echo = driver(&agent_url(&server, "echo"), settings);
    // A run can be spawned: its future is Send.
    let running = echo.run(user_text("hello, driver"), never_asked);
    fn spawnable<T: Send>(_: &T) {}
    spawnable(&running);
    let done = task(running.await.unwrap());
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(artifact_text(&done), "hello, driver");
    // The same driver, its card cached, drives a second task.
    let again = task(echo.run(user_text("again"), never_asked).await.unwrap());
    assert_eq!(
        (again.status.state, artifact_text(&again).as_str()),
        (TaskState::Completed, "again")
    );
    assert_ne!(again.id, done.id);
}

async fn input_answered(streaming: bool) {
    let server = switchboard().await;
    let settings = DriveSettings {
        streaming,
        ..DriveSettings::default()
    };
    let consolidate = driver(&agent_url(&server, "consolidate"), settings);
    let (asked, resolve) = resolver(Some(ANSWER));
    let done = task(
        consolidate
            .run(user_text(TRANSCRIPTS), resolve)
            .await
            .unwrap(),
    );
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    let facts = done
        .artifacts
        .iter()
        .find(|a| a.name.as_deref() == Some("facts"));
    let facts = artifact_text(&Task {
        artifacts: facts.into_iter().cloned().collect(),
        ..done.clone()
    });
    assert!(facts.contains("- the user lives in Paris"), "{facts}");
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1, "the resolver is called once: {asked:?}");
    let (waiting, question) = &asked[0];
    assert_eq!(
        (waiting.id.as_str(), waiting.status.state),
        (done.id.as_str(), TaskState::InputRequired)
    );
    assert!(question.text().contains("vegetarian"), "{question:?}");
    // The answer went on the same task, after the question.
    let said: Vec<String> = done.history.iter().map(Message::text).collect();
    assert!(said.iter().any(|s| s == ANSWER), "{said:?}");
}

#[tokio::test]
async fn input_required_is_answered_by_the_resolver_when_streamed() {
    input_answered(true).await;
}

#[tokio::test]
async fn input_required_is_answered_by_the_resolver_when_polled() {
    input_answered(false).await;
}

#[tokio::test]
async fn a_resolver_without_an_answer_gets_the_waiting_task_back() {
    let server = switchboard().await;
    let consolidate = driver(&agent_url(&server, "consolidate"), DriveSettings::default());
    let (asked, resolve) = resolver(None);
    let waiting = task(
        consolidate
            .run(user_text(TRANSCRIPTS), resolve)
            .await
            .unwrap(),
    );
    assert_eq!(
        waiting.status.state,
        TaskState::InputRequired,
        "{waiting:?}"
    );
    assert_eq!(asked.lock().unwrap().len(), 1);
    let read = transport(&server, "consolidate")
        .await
        .get_task(&waiting.id, None)
        .await
        .unwrap();
    assert_eq!(
        read.status.state,
        TaskState::InputRequired,
        "still waiting, not canceled"
    );
}

#[tokio::test]
async fn a_card_lacking_what_is_required_is_refused_before_anything_is_sent() {
    let server = switchboard().await;
    let url = agent_url(&server, "echo");
    let needs = |required: Required, output_modes: Vec<String>| DriveSettings {
        required,
        output_modes,
        ..DriveSettings::default()
    };
    let no_skill = needs(
        Required {
            skills: vec!["translate".into()],
            ..Required::default()
        },
        vec![],
    );
    let no_mode = needs(Required::default(), vec!["image/png".into()]);
    for settings in [no_skill, no_mode] {
        match driver(&url, settings)
            .run(user_text("never sent"), never_asked)
            .await
        {
            Err(DriveError::Unsuitable { missing, .. }) => {
                assert!(
                    missing.contains("translate") || missing.contains("image/png"),
                    "{missing}"
                );
            }
            other => panic!("expected the card to be refused, got {other:?}"),
        }
    }
    let echo = transport(&server, "echo").await;
    let listed = echo.list_tasks(&ListTasksRequest::default()).await.unwrap();
    assert!(listed.tasks.is_empty(), "a task was created: {listed:?}");
    // What it needs offered, the same agent does get a task (so the list above could see one).
    let skilled = needs(
        Required {
            skills: vec!["echo".into()],
            ..Required::default()
        },
        vec![],
    );
    driver(&url, skilled)
        .run(user_text("sent"), never_asked)
        .await
        .unwrap();
    let listed = echo.list_tasks(&ListTasksRequest::default()).await.unwrap();
    assert_eq!(listed.tasks.len(), 1, "{listed:?}");
}

#[tokio::test]
async fn a_message_reply_comes_back_as_a_message() {
    let server = switchboard().await;
    let conformance = driver(&agent_url(&server, "conformance"), DriveSettings::default());
    let outcome = conformance
        .run(with_id("tck-message-response-1", "hi"), never_asked)
        .await
        .unwrap();
    match outcome {
        Outcome::Message(reply) => assert_eq!(reply.text(), "Direct message response"),
        Outcome::Task(task) => panic!("a task instead of a message: {task:?}"),
    }
}

#[tokio::test]
async fn failed_rejected_and_auth_required_tasks_come_back_as_they_ended() {
    let server = switchboard().await;
    let conformance = driver(&agent_url(&server, "conformance"), DriveSettings::default());
    for (id, state, said) in [
        (
            "tck-task-failure-1",
            TaskState::Failed,
            "Task failed as requested",
        ),
        ("tck-reject-task-1", TaskState::Rejected, "rejected"),
        (
            "tck-auth-required-1",
            TaskState::AuthRequired,
            "Authorization required to continue",
        ),
        (
            "tck-complete-task-1",
            TaskState::Completed,
            "Hello from TCK",
        ),
    ] {
        let ended = task(
            conformance
                .run(with_id(id, "go"), never_asked)
                .await
                .unwrap(),
        );
        let message = ended.status.message.as_ref().map(Message::text);
        assert_eq!(
            (ended.status.state, message.as_deref()),
            (state, Some(said)),
            "{ended:?}"
        );
    }
}

async fn given_up(settings: DriveSettings, message_id: &str) -> (DriveError, TaskState, Duration) {
    let server = switchboard().await;
    let conformance = driver(&agent_url(&server, "conformance"), settings);
    let started = Instant::now();
    // Named by nothing, the conformance agent keeps the task working until canceled.
    let error = conformance
        .run(with_id(message_id, "keep working"), never_asked)
        .await
        .unwrap_err();
    let took = started.elapsed();
    let agent = transport(&server, "conformance").await;
    let listed = agent
        .list_tasks(&ListTasksRequest::default())
        .await
        .unwrap();
    assert_eq!(listed.tasks.len(), 1, "{listed:?}");
    let read = agent.get_task(&listed.tasks[0].id, None).await.unwrap();
    (error, read.status.state, took)
}

#[tokio::test]
async fn a_silent_task_is_canceled_after_the_idle_timeout() {
    for streaming in [true, false] {
        let settings = DriveSettings {
            idle_timeout: Duration::from_secs(3),
            streaming,
            ..DriveSettings::default()
        };
        let (error, state, took) = given_up(settings, "silent-1").await;
        assert!(
            matches!(&error, DriveError::Stalled { idle, cancel: Cancellation::Canceled, .. } if idle.as_secs() == 3),
            "{error:?}"
        );
        assert!(error.to_string().contains("it was canceled"), "{error}");
        assert_eq!(state, TaskState::Canceled);
        assert!(
            took >= Duration::from_secs(3) && took < Duration::from_secs(15),
            "{took:?}"
        );
    }
}

#[tokio::test]
async fn a_task_over_its_budget_is_canceled() {
    let settings = DriveSettings {
        budget: Duration::from_secs(2),
        ..DriveSettings::default()
    };
    let (error, state, took) = given_up(settings, "long-1").await;
    assert!(
        matches!(&error, DriveError::OverBudget { budget, cancel: Cancellation::Canceled, .. } if budget.as_secs() == 2),
        "{error:?}"
    );
    assert!(error.to_string().contains("budget"), "{error}");
    assert_eq!(state, TaskState::Canceled);
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "{took:?}"
    );
}

// === against a scripted server ===

/// A server with two agents whose cards are fine: `down` answers every call with 503,
/// `strict` refuses every message as invalid. Counts card fetches and calls of each.
async fn scripted() -> (String, Arc<[AtomicUsize; 4]>) {
    use axum::extract::Path;
    use axum::http::StatusCode;
    use axum::routing::{get, post};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits: Arc<[AtomicUsize; 4]> = Arc::new(Default::default());
    let (cards, calls, card_base) = (hits.clone(), hits.clone(), base.clone());
    let app = axum::Router::new()
        .route(
            "/{agent}/.well-known/agent-card.json",
            get(move |Path(agent): Path<String>| async move {
                cards[usize::from(agent == "strict")].fetch_add(1, Ordering::SeqCst);
                axum::Json(json!({
                    "name": agent, "description": "d", "version": "1", "capabilities": {},
                    "supportedInterfaces": [{"url": format!("{card_base}/{agent}/rpc"),
                        "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                    "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
                    "skills": []
                }))
            }),
        )
        .route(
            "/{agent}/rpc",
            post(move |Path(agent): Path<String>| async move {
                let strict = agent == "strict";
                calls[2 + usize::from(strict)].fetch_add(1, Ordering::SeqCst);
                let invalid = json!({"jsonrpc": "2.0", "id": 1,
                    "error": {"code": -32602, "message": "the message is not acceptable"}});
                match strict {
                    true => (StatusCode::OK, invalid.to_string()),
                    false => (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "down for maintenance".into(),
                    ),
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, hits)
}

fn retrying(retries: u32) -> DriveSettings {
    DriveSettings {
        retries,
        retry_delay: Duration::from_millis(100),
        ..DriveSettings::default()
    }
}

#[tokio::test]
async fn a_submission_the_agent_does_not_take_is_retried_a_bounded_number_of_times() {
    let (base, hits) = scripted().await;
    let started = Instant::now();
    let error = driver(&format!("{base}/down"), retrying(2))
        .run(user_text("anyone?"), never_asked)
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(&error, DriveError::Unavailable { attempts: 3, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("503"), "{error}");
    let count = |i: usize| hits[i].load(Ordering::SeqCst);
    // Three sends, the card fetched again before each retry.
    assert_eq!((count(0), count(2)), (3, 3));
    // 100 ms, then 200 ms between them.
    assert!(took >= Duration::from_millis(300), "{took:?}");

    // Nothing listens: the card cannot be fetched, which is retried the same way.
    let nowhere = format!("http://127.0.0.1:{}/agent", free_port());
    let error = driver(&nowhere, retrying(1))
        .run(user_text("anyone?"), never_asked)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, DriveError::Unavailable { attempts: 2, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("cannot reach"), "{error}");
}

#[tokio::test]
async fn a_refusal_a_retry_cannot_help_is_not_retried() {
    let (base, hits) = scripted().await;
    let error = driver(&format!("{base}/strict"), retrying(3))
        .run(user_text("bad"), never_asked)
        .await
        .unwrap_err();
    assert!(matches!(&error, DriveError::Refused { .. }), "{error:?}");
    assert!(error.to_string().contains("not acceptable"), "{error}");
    assert_eq!(
        (
            hits[1].load(Ordering::SeqCst),
            hits[3].load(Ordering::SeqCst)
        ),
        (1, 1)
    );
}
