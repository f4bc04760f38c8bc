//! Webhook delivery against a real HTTP receiver on loopback: bodies per version, auth
//! headers, event ids, order, retries, no retry on 4xx, and the address policy enforced
//! at send time.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test harness

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use parking_lot::Mutex;
use sb_protocol::*;
use sb_store::{EventBus, LocalBus, MemoryStore, PushConfigRecord, PushConfigStore, StoredVersion};
use sb_tasks::{LocalTaskService, NewTask, Scope, TaskService, TaskUpdate};
use sb_webhooks::{
    AddressPolicy, Dispatcher, DispatcherConfig, LocalPushConfigs, PushConfigService,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

const SECRET: &str = "a-signing-secret-of-some-length";

#[derive(Clone, Default)]
struct Receiver {
    seen: Arc<Mutex<Vec<(String, HeaderMap, Value)>>>,
    /// Statuses to answer with, in order; 200 once they run out.
    script: Arc<Mutex<Vec<u16>>>,
}

async fn hook(
    State(rx): State<Receiver>,
    axum::extract::Path(name): axum::extract::Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, [(axum::http::HeaderName, &'static str); 1]) {
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    rx.seen.lock().push((name, headers, json));
    let next = {
        let mut script = rx.script.lock();
        if script.is_empty() {
            200
        } else {
            script.remove(0)
        }
    };
    // Redirects point at another path of this receiver, so following one would show.
    (
        StatusCode::from_u16(next).unwrap(),
        [(axum::http::header::LOCATION, "/followed")],
    )
}

async fn start_receiver() -> (Receiver, String) {
    let receiver = Receiver::default();
    let app = Router::new()
        .route("/{name}", post(hook))
        .with_state(receiver.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (receiver, base)
}

struct World {
    dispatcher: Dispatcher,
    store: Arc<MemoryStore>,
    tasks: Arc<LocalTaskService>,
    push: LocalPushConfigs,
    scope: Scope,
}

async fn world(policy: AddressPolicy, delays: Vec<Duration>) -> World {
    let store = Arc::new(MemoryStore::new());
    let bus: Arc<dyn EventBus> = Arc::new(LocalBus::new());
    let tasks = Arc::new(LocalTaskService::new(store.clone(), bus.clone()));
    let policy = Arc::new(policy);
    let push = LocalPushConfigs::new(store.clone(), tasks.clone(), policy.clone());
    let config = DispatcherConfig {
        retry_delays: delays,
        attempt_timeout: Duration::from_secs(2),
        policy,
        signing_secrets: Arc::new(sb_webhooks::signing::SigningSecrets::new(
            [("a".to_owned(), SECRET.as_bytes().to_vec())].into(),
        )),
        metrics: Default::default(),
        sweep_every: Duration::from_millis(200),
    };
    let dispatcher = Dispatcher::new(store.clone(), store.clone(), store.clone(), config).unwrap();
    dispatcher
        .spawn(&*bus, CancellationToken::new())
        .await
        .unwrap();
    World {
        dispatcher,
        store,
        tasks,
        push,
        scope: Scope {
            agent: "a".into(),
            owner: String::new(),
        },
    }
}

/// A receiver on loopback and a world allowed to deliver to it, retrying after 10 ms.
async fn loopback_world() -> (Receiver, String, World) {
    let (rx, base) = start_receiver().await;
    let policy = AddressPolicy::parse("127.0.0.0/8").unwrap();
    let w = world(policy, vec![Duration::from_millis(10)]).await;
    (rx, base, w)
}

async fn new_task(w: &World) -> String {
    let message = Message {
        role: Role::User,
        ..Message::agent_text("hi")
    };
    w.tasks
        .create(NewTask {
            scope: w.scope.clone(),
            message,
            metadata: None,
        })
        .await
        .unwrap()
        .task
        .id
}

fn config(task_id: &str, url: String) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        tenant: None,
        id: None,
        task_id: task_id.into(),
        url,
        token: None,
        authentication: None,
    }
}

async fn wait_for(rx: &Receiver, count: usize) -> Vec<(String, HeaderMap, Value)> {
    for _ in 0..300 {
        if rx.seen.lock().len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    rx.seen.lock().clone()
}

/// What `check` finds, once it finds something (within three seconds).
async fn eventually<T, F, Fut>(mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..300 {
        if let Some(found) = check().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not found within three seconds");
}

fn status(state: TaskState) -> TaskUpdate {
    TaskUpdate::Status {
        state,
        message: None,
        metadata: None,
    }
}

#[tokio::test]
async fn delivers_each_event_in_order_with_auth_and_ids() {
    let (rx, base, w) = loopback_world().await;
    let task_id = new_task(&w).await;
    let mut v1 = config(&task_id, format!("{base}/v1"));
    v1.token = Some("tok".into());
    v1.authentication = Some(AuthenticationInfo {
        scheme: "Bearer".into(),
        credentials: Some("cred".into()),
    });
    w.push.create(&w.scope, v1, Version::V1_0).await.unwrap();
    w.push
        .create(
            &w.scope,
            config(&task_id, format!("{base}/v03")),
            Version::V0_3,
        )
        .await
        .unwrap();

    w.tasks
        .update(&task_id, status(TaskState::Working))
        .await
        .unwrap();
    let artifact = Artifact {
        artifact_id: "a".into(),
        name: None,
        description: None,
        parts: vec![Part::text("x")],
        metadata: None,
        extensions: vec![],
    };
    w.tasks
        .update(
            &task_id,
            TaskUpdate::Artifact {
                artifact,
                append: false,
                last_chunk: true,
            },
        )
        .await
        .unwrap();
    w.tasks
        .update(&task_id, status(TaskState::Completed))
        .await
        .unwrap();

    let seen = wait_for(&rx, 6).await;
    let v1: Vec<_> = seen.iter().filter(|(name, _, _)| name == "v1").collect();
    assert_eq!(v1.len(), 3, "the creation event predates the config");
    let ids: Vec<&str> = v1
        .iter()
        .map(|(_, h, _)| h["webhook-id"].to_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            format!("{task_id}:2"),
            format!("{task_id}:3"),
            format!("{task_id}:4")
        ]
    );
    assert_eq!(v1[0].1["authorization"], "Bearer cred");
    // The receiver can verify the Standard Webhooks signature over id, timestamp and body.
    let headers = &v1[0].1;
    let body = serde_json::to_vec(&v1[0].2).unwrap();
    let expected = sb_webhooks::signing::sign(
        SECRET.as_bytes(),
        headers["webhook-id"].to_str().unwrap(),
        headers["webhook-timestamp"].to_str().unwrap(),
        &body,
    );
    assert_eq!(headers["webhook-signature"].to_str().unwrap(), expected);
    assert_eq!(v1[0].1["x-a2a-notification-token"], "tok");
    assert_eq!(
        v1[0].2["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert_eq!(v1[1].2["artifactUpdate"]["artifact"]["artifactId"], "a");
    assert_eq!(
        v1[2].2["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    let v03: Vec<_> = seen.iter().filter(|(name, _, _)| name == "v03").collect();
    assert_eq!(v03.len(), 3);
    assert_eq!(v03[0].2["kind"], "task");
    assert_eq!(v03[0].2["id"], task_id.as_str());
    assert!(v03[0].1.get("authorization").is_none());
}

#[tokio::test]
async fn retries_until_accepted_then_delivers_once_signed() {
    let (rx, base) = start_receiver().await;
    let w = world(
        AddressPolicy::parse("127.0.0.1").unwrap(),
        vec![
            Duration::from_millis(10),
            Duration::from_millis(10),
            Duration::from_millis(10),
        ],
    )
    .await;
    rx.script.lock().extend([503, 503]);
    let task_id = new_task(&w).await;
    let mut hook = config(&task_id, format!("{base}/r"));
    hook.authentication = Some(AuthenticationInfo {
        scheme: "Bearer".into(),
        credentials: Some("cred".into()),
    });
    w.push.create(&w.scope, hook, Version::V1_0).await.unwrap();
    w.tasks
        .update(&task_id, status(TaskState::Working))
        .await
        .unwrap();
    let seen = wait_for(&rx, 3).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        rx.seen.lock().len(),
        3,
        "two 503s, then accepted once, nothing more"
    );
    let (_, headers, body) = &seen[2];
    assert_eq!(headers["authorization"], "Bearer cred");
    let expected = sb_webhooks::signing::sign(
        SECRET.as_bytes(),
        headers["webhook-id"].to_str().unwrap(),
        headers["webhook-timestamp"].to_str().unwrap(),
        &serde_json::to_vec(body).unwrap(),
    );
    assert_eq!(headers["webhook-signature"].to_str().unwrap(), expected);
    assert!(
        seen.iter()
            .all(|(_, h, _)| h["webhook-id"] == format!("{task_id}:2")),
        "every attempt is the same event"
    );
}

#[tokio::test]
async fn client_errors_and_redirects_get_one_attempt() {
    let (rx, base) = start_receiver().await;
    let w = world(
        AddressPolicy::parse("127.0.0.1").unwrap(),
        vec![Duration::from_millis(10), Duration::from_millis(10)],
    )
    .await;
    rx.script.lock().extend([404, 302]);
    let task_id = new_task(&w).await;
    w.push
        .create(
            &w.scope,
            config(&task_id, format!("{base}/r")),
            Version::V1_0,
        )
        .await
        .unwrap();
    w.tasks
        .update(&task_id, status(TaskState::Working))
        .await
        .unwrap();
    wait_for(&rx, 1).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(rx.seen.lock().len(), 1, "a 404 is not retried");
    // A redirect is not followed (its target could be anywhere) and not retried.
    w.tasks
        .update(&task_id, status(TaskState::Completed))
        .await
        .unwrap();
    wait_for(&rx, 2).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let seen = rx.seen.lock().clone();
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter().all(|(name, _, _)| name == "r"),
        "the redirect target was never requested"
    );
}

#[tokio::test]
async fn private_targets_are_refused_at_send_time_too() {
    let (rx, base) = start_receiver().await;
    let w = world(AddressPolicy::default(), vec![]).await;
    let task_id = new_task(&w).await;
    let port = base.rsplit(':').next().unwrap();
    // Registered behind the policy's back (as configs stored under an older, looser
    // policy): a literal loopback address, and a name that resolves to loopback.
    for (id, url) in [
        ("literal", format!("{base}/x")),
        ("by-name", format!("http://localhost:{port}/z")),
    ] {
        let record = PushConfigRecord {
            config: TaskPushNotificationConfig {
                id: Some(id.into()),
                ..config(&task_id, url)
            },
            version: StoredVersion::V1_0,
            owner: String::new(),
            created_at: chrono::Utc::now(),
            from_seq: 1,
        };
        w.store.put_push_config(record).await.unwrap();
    }
    w.tasks
        .update(&task_id, status(TaskState::Working))
        .await
        .unwrap();
    let letters = eventually(|| async {
        let letters = w.dispatcher.dead_letters().await.unwrap();
        (letters.len() == 2).then_some(letters)
    })
    .await;
    let reason = |config: &str| {
        letters
            .iter()
            .find(|l| l.config_id == config)
            .map(|l| l.reason.clone())
            .unwrap()
    };
    assert!(reason("literal").contains("not allowed"), "{letters:?}");
    assert!(reason("by-name").contains("not public"), "{letters:?}");
    assert!(rx.seen.lock().is_empty());
}

/// A URL whose host resolves to loopback, or does not resolve at all, is refused when it
/// is registered, so the caller learns that its webhook could never fire.
#[tokio::test]
async fn private_and_unresolvable_targets_are_refused_at_registration() {
    let (_rx, base) = start_receiver().await;
    let w = world(AddressPolicy::default(), vec![]).await;
    let task_id = new_task(&w).await;
    let port = base.rsplit(':').next().unwrap();
    for (url, why) in [
        (format!("{base}/y"), "not a public address"),
        (format!("http://localhost:{port}/z"), "not public"),
        (
            "https://no-such-host.invalid/w".to_owned(),
            "does not resolve",
        ),
    ] {
        let refused = w
            .push
            .create(&w.scope, config(&task_id, url.clone()), Version::V1_0)
            .await
            .unwrap_err();
        assert_eq!(refused.kind, ErrorKind::InvalidParams, "{url}: {refused:?}");
        assert!(
            refused.message.contains("url") && refused.message.contains(why),
            "{url}: {}",
            refused.message
        );
    }
    assert!(
        w.store
            .list_push_configs(&task_id)
            .await
            .unwrap()
            .is_empty()
    );
}

/// A delivery that fails for good lands in the dead-letter list, which an operator can
/// read and re-drive through the admin endpoints (and nobody else can).
#[tokio::test]
async fn dead_letters_are_listed_and_redriven() {
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    let (rx, base) = start_receiver().await;
    let w = world(AddressPolicy::parse("127.0.0.1").unwrap(), vec![]).await;
    rx.script.lock().push(410);
    let task_id = new_task(&w).await;
    w.push
        .create(
            &w.scope,
            config(&task_id, format!("{base}/d")),
            Version::V1_0,
        )
        .await
        .unwrap();
    w.tasks
        .update(&task_id, status(TaskState::Working))
        .await
        .unwrap();
    wait_for(&rx, 1).await;
    let admin = sb_webhooks::admin::admin_router(Arc::new(w.dispatcher.clone()), "admin-secret");
    let request = |method: &str, path: &str, token: Option<&str>| {
        let mut b = axum::http::Request::builder().method(method).uri(path);
        if let Some(t) = token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        b.body(Body::empty()).unwrap()
    };
    let mut letters = Value::Null;
    for _ in 0..50 {
        let response = admin
            .clone()
            .oneshot(request("GET", "/admin/dead-letters", Some("admin-secret")))
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        letters = serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes())
            .unwrap();
        if !letters["deadLetters"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let letter = &letters["deadLetters"][0];
    assert_eq!(letter["seq"], 2);
    assert_eq!(letter["host"], "127.0.0.1");
    assert!(
        letter["reason"].as_str().unwrap().contains("410"),
        "{letter}"
    );
    let id = letter["id"].as_str().unwrap().to_owned();

    let denied = admin
        .clone()
        .oneshot(request("GET", "/admin/dead-letters", Some("guess")))
        .await
        .unwrap();
    assert_eq!(denied.status(), StatusCode::UNAUTHORIZED);
    let redrive = admin
        .clone()
        .oneshot(request(
            "POST",
            &format!("/admin/dead-letters/{id}/redrive"),
            Some("admin-secret"),
        ))
        .await
        .unwrap();
    assert_eq!(redrive.status(), StatusCode::ACCEPTED);
    let seen = wait_for(&rx, 2).await;
    assert_eq!(
        seen[1].1["webhook-id"],
        format!("{task_id}:2"),
        "the same event, delivered this time"
    );
    let again = admin
        .clone()
        .oneshot(request(
            "POST",
            &format!("/admin/dead-letters/{id}/redrive"),
            Some("admin-secret"),
        ))
        .await
        .unwrap();
    assert_eq!(
        again.status(),
        StatusCode::NOT_FOUND,
        "a re-driven letter leaves the list"
    );
}

/// More events at once than the dispatcher takes per wake-up, one per task: every task
/// still gets its delivery (a burst is cut, never dropped).
#[tokio::test]
async fn a_burst_larger_than_one_take_loses_no_delivery() {
    let (rx, base, w) = loopback_world().await;
    let count = sb_store::BURST + 44;
    let mut ids = Vec::new();
    for _ in 0..count {
        let task_id = new_task(&w).await;
        let hook = config(&task_id, format!("{base}/burst"));
        w.push.create(&w.scope, hook, Version::V1_0).await.unwrap();
        ids.push(task_id);
    }
    // Let the catch-ups that creating the configs started finish: from here on only
    // the bus tells the dispatcher about the new events.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // All updates in one poll: their events wait on the bus together.
    let updates = ids
        .iter()
        .map(|id| w.tasks.update(id, status(TaskState::Completed)));
    for result in futures::future::join_all(updates).await {
        result.unwrap();
    }
    for _ in 0..30 {
        if rx.seen.lock().len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let seen = rx.seen.lock().clone();
    let delivered: std::collections::HashSet<String> = seen
        .iter()
        .map(|(_, _, body)| body["statusUpdate"]["taskId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        delivered.len(),
        count,
        "{} of {count} tasks got their delivery",
        delivered.len()
    );
}

/// An event the bus announced before its task's config was stored (the config read the
/// task at an earlier seq) is still delivered: the periodic sweep finds it owed.
#[tokio::test]
async fn an_event_committed_while_its_config_was_created_is_still_delivered() {
    let (rx, base, w) = loopback_world().await;
    let task_id = new_task(&w).await;
    w.tasks
        .update(&task_id, status(TaskState::Completed))
        .await
        .unwrap();
    // Let the dispatcher see the completion while the task has no config yet.
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The config as a creation racing the completion stores it: read at seq 1.
    let mut record = sb_store::suite::push_config_record(&task_id, "late");
    record.config.url = format!("{base}/late");
    record.from_seq = 1;
    w.store.put_push_config(record).await.unwrap();
    let seen = wait_for(&rx, 1).await;
    assert_eq!(seen.len(), 1, "the completion is delivered once");
    assert_eq!(
        seen[0].2["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}
