#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Against a real redis-server (see `testing`): the backend suite, then what only Redis
//! has (pub/sub, consumer groups, two replicas racing, credentials in the URL).

use std::collections::HashSet;
use std::time::Duration;

use sb_protocol::TaskState;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::timeout;

use super::group::ClaimTiming;
use super::testing::TestRedis;
use super::{RedisBus, RedisStore, redact_url};
use crate::record::*;
use crate::suite::new_commit;
use crate::traits::*;

crate::store_test_suite!(crate::RedisStore, async {
    let redis = crate::redis::testing::TestRedis::shared();
    let prefix = crate::redis::testing::TestRedis::prefix("suite");
    crate::RedisStore::connect(redis.url(), &prefix)
        .await
        .unwrap()
});

const WAIT: Duration = Duration::from_secs(10);

async fn pair(redis: &TestRedis, name: &str) -> (RedisStore, RedisBus, String) {
    let prefix = TestRedis::prefix(name);
    let store = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let bus = RedisBus::connect(redis.url(), &prefix).await.unwrap();
    (store, bus, prefix)
}

async fn numsub(redis: &TestRedis, channel: &str) -> i64 {
    let reply = redis.command(&["PUBSUB", "NUMSUB", channel]).await;
    ::redis::from_redis_value::<(String, i64)>(reply).unwrap().1
}

#[tokio::test]
async fn an_event_committed_after_subscribe_returns_is_received() {
    let redis = TestRedis::shared();
    let (store, bus, _) = pair(redis, "sub").await;
    let mut rx = bus.subscribe("t").await.unwrap();
    let mut other = bus.subscribe("u").await.unwrap();
    store.commit(new_commit("t", 0, 1)).await.unwrap();
    store.commit(new_commit("t", 1, 2)).await.unwrap();
    assert_eq!(timeout(WAIT, rx.recv()).await.unwrap().unwrap().seq, 1);
    let second = timeout(WAIT, rx.recv()).await.unwrap().unwrap();
    assert_eq!((&*second.task_id, second.seq), ("t", 2));
    assert!(other.try_recv().is_err(), "only the task's own events");
}

#[tokio::test]
async fn receivers_of_a_task_share_one_redis_subscription_released_when_gone() {
    let redis = TestRedis::shared();
    let (store, bus, prefix) = pair(redis, "share").await;
    let channel = format!("{prefix}ev:t");
    let mut a = bus.subscribe("t").await.unwrap();
    let mut b = bus.subscribe("t").await.unwrap();
    assert_eq!(numsub(redis, &channel).await, 1);
    store.commit(new_commit("t", 0, 1)).await.unwrap();
    assert_eq!(timeout(WAIT, a.recv()).await.unwrap().unwrap().seq, 1);
    assert_eq!(timeout(WAIT, b.recv()).await.unwrap().unwrap().seq, 1);
    drop((a, b));
    // Not swept by every subscription (that walked every route each time), but by the
    // one that finds the routes doubled since the last sweep (64 at first).
    let mut others = Vec::new();
    for i in 0..63 {
        others.push(bus.subscribe(&format!("other-{i}")).await.unwrap());
    }
    assert_eq!(numsub(redis, &channel).await, 1, "not yet swept");
    others.push(bus.subscribe("one-more").await.unwrap());
    assert_eq!(numsub(redis, &channel).await, 0);
    // And watching again subscribes again.
    let _again = bus.subscribe("t").await.unwrap();
    assert_eq!(numsub(redis, &channel).await, 1);
}

#[tokio::test]
async fn a_killed_pubsub_connection_closes_receivers_and_subscribe_recovers() {
    // Private: CLIENT KILL would hit every test's pub/sub connection on a shared server.
    let redis = TestRedis::spawn();
    let (store, bus, _) = pair(&redis, "kill").await;
    let mut rx = bus.subscribe("t").await.unwrap();
    let turn = bus.watch_turn("t").await.unwrap();
    let end = bus.watch_end("t").await.unwrap();
    redis.command(&["CLIENT", "KILL", "TYPE", "pubsub"]).await;
    let closed = timeout(WAIT, rx.recv()).await.unwrap();
    assert!(matches!(closed, Err(RecvError::Closed)), "{closed:?}");
    assert!(
        timeout(WAIT, turn).await.unwrap().is_err(),
        "turn watchers fail too"
    );
    assert!(
        timeout(WAIT, end).await.unwrap().is_err(),
        "and end watchers"
    );
    let mut rx = bus.subscribe("t").await.unwrap();
    store.commit(new_commit("t", 0, 1)).await.unwrap();
    assert_eq!(timeout(WAIT, rx.recv()).await.unwrap().unwrap().seq, 1);
}

#[tokio::test]
async fn a_turn_announced_by_any_replica_reaches_its_watchers() {
    let redis = TestRedis::shared();
    let (_store, here, prefix) = pair(redis, "turn").await;
    let there = RedisBus::connect(redis.url(), &prefix).await.unwrap();
    let channel = format!("{prefix}turns");
    let first = here.watch_turn("t").await.unwrap();
    let second = here.watch_turn("t").await.unwrap();
    let mut unrelated = here.watch_turn("u").await.unwrap();
    there.announce_turn_over("t").await.unwrap();
    timeout(WAIT, first).await.unwrap().unwrap();
    timeout(WAIT, second).await.unwrap().unwrap();
    assert!(unrelated.try_recv().is_err());
    // One subscription for every turn, kept: the next watch is no round trip.
    let next = here.watch_turn("v").await.unwrap();
    assert_eq!(numsub(redis, &channel).await, 1);
    there.announce_turn_over("v").await.unwrap();
    timeout(WAIT, next).await.unwrap().unwrap();
    assert!(unrelated.try_recv().is_err());
}

/// The commit that ends a task tells every replica watching it, and only that commit.
#[tokio::test]
async fn the_commit_that_ends_a_task_signals_its_end_to_every_replica() {
    let redis = TestRedis::shared();
    let (store, here, prefix) = pair(redis, "ended").await;
    let there = RedisBus::connect(redis.url(), &prefix).await.unwrap();
    let mut ended_here = here.watch_end("t").await.unwrap();
    let ended_there = there.watch_end("t").await.unwrap();
    let mut other = here.watch_end("u").await.unwrap();
    let mut u_events = here.subscribe("u").await.unwrap();
    store.commit(new_commit("t", 0, 1)).await.unwrap();
    store.commit(new_commit("t", 1, 2)).await.unwrap();
    store.commit(new_commit("u", 0, 1)).await.unwrap();
    // Pub/sub keeps the order of publication on one connection: with u's event here,
    // a signal from t's unfinished commits would be here too.
    timeout(WAIT, u_events.recv()).await.unwrap().unwrap();
    assert!(
        ended_here.try_recv().is_err(),
        "not ended by a working commit"
    );
    let mut done = new_commit("t", 2, 3);
    std::sync::Arc::make_mut(&mut done.record).task.status.state = TaskState::Canceled;
    store.commit(done).await.unwrap();
    timeout(WAIT, ended_there).await.unwrap().unwrap();
    assert_eq!(timeout(WAIT, &mut ended_here).await.unwrap(), Ok(()));
    assert!(other.try_recv().is_err(), "only the task that ended");
}

/// Events of `n` distinct tasks, committed one by one.
async fn commit_tasks(store: &RedisStore, n: usize) -> HashSet<String> {
    let mut ids = HashSet::new();
    for i in 0..n {
        let id = format!("task-{i}");
        store.commit(new_commit(&id, 0, 1)).await.unwrap();
        ids.insert(id);
    }
    ids
}

async fn drain(rx: &mut tokio::sync::broadcast::Receiver<EventNotice>, seen: &mut Vec<String>) {
    while let Ok(Ok(event)) = timeout(Duration::from_millis(500), rx.recv()).await {
        seen.push(event.task_id.to_string());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_splits_events_among_its_members_and_every_group_gets_all() {
    let redis = TestRedis::shared();
    let (store, bus_a, prefix) = pair(redis, "groups").await;
    let bus_b = RedisBus::connect(redis.url(), &prefix).await.unwrap();
    let bus_c = RedisBus::connect(redis.url(), &prefix).await.unwrap();
    let mut a = bus_a.subscribe_all("dispatch").await.unwrap();
    let mut b = bus_b.subscribe_all("dispatch").await.unwrap();
    let mut c = bus_c.subscribe_all("audit").await.unwrap();
    // A second subscriber on the same bus and group shares the reader.
    let mut a2 = bus_a.subscribe_all("dispatch").await.unwrap();

    let expected = commit_tasks(&store, 200).await;
    let (mut seen_a, mut seen_b, mut seen_c, mut seen_a2) = (vec![], vec![], vec![], vec![]);
    tokio::join!(
        drain(&mut a, &mut seen_a),
        drain(&mut b, &mut seen_b),
        drain(&mut c, &mut seen_c),
        drain(&mut a2, &mut seen_a2),
    );
    let mut both = seen_a.clone();
    both.extend(seen_b.iter().cloned());
    assert_eq!(both.len(), 200, "a: {}, b: {}", seen_a.len(), seen_b.len());
    assert_eq!(both.into_iter().collect::<HashSet<_>>(), expected);
    assert!(
        !seen_a.is_empty() && !seen_b.is_empty(),
        "a: {}, b: {}",
        seen_a.len(),
        seen_b.len()
    );
    assert_eq!(seen_a2, seen_a);
    assert_eq!(seen_c.len(), 200);
    assert_eq!(seen_c.into_iter().collect::<HashSet<_>>(), expected);
}

#[tokio::test]
async fn entries_a_dead_consumer_left_pending_are_claimed() {
    let redis = TestRedis::shared();
    let prefix = TestRedis::prefix("claim");
    let stream = format!("{prefix}events");
    let store = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    redis
        .command(&["XGROUP", "CREATE", &stream, "g", "$", "MKSTREAM"])
        .await;
    let expected = commit_tasks(&store, 3).await;
    // A consumer reads them and dies before acknowledging.
    redis
        .command(&["XREADGROUP", "GROUP", "g", "dead", "STREAMS", &stream, ">"])
        .await;

    let timing = ClaimTiming {
        every: Duration::from_millis(100),
        min_idle: Duration::from_millis(300),
    };
    let bus = RedisBus::connect_with(redis.url(), &prefix, timing)
        .await
        .unwrap();
    let mut rx = bus.subscribe_all("g").await.unwrap();
    let mut seen = HashSet::new();
    while seen.len() < 3 {
        seen.insert(
            timeout(WAIT, rx.recv())
                .await
                .unwrap()
                .unwrap()
                .task_id
                .to_string(),
        );
    }
    assert_eq!(seen, expected);
    // Acknowledged once forwarded.
    let pending = redis.command(&["XPENDING", &stream, "g"]).await;
    let (count, ..): (i64, ::redis::Value, ::redis::Value, ::redis::Value) =
        ::redis::from_redis_value(pending).unwrap();
    assert_eq!(count, 0);
}

/// The all-tasks feed carries a notice of each event (task, seq, the state it left),
/// not the event; an entry written before notices existed (the whole event) still reads.
#[tokio::test]
async fn the_all_tasks_feed_carries_notices_and_reads_entries_of_old() {
    let redis = TestRedis::shared();
    let (store, bus, prefix) = pair(redis, "notices").await;
    let mut all = bus.subscribe_all("g").await.unwrap();
    store.commit(new_commit("t", 0, 1)).await.unwrap();
    let mut done = new_commit("t", 1, 2);
    std::sync::Arc::make_mut(&mut done.record).task.status.state = TaskState::Completed;
    let mut events = done.events.clone();
    events[0].event = std::sync::Arc::new(sb_protocol::StreamResponse::Message(
        sb_protocol::Message::agent_text("no state of its own"),
    ));
    done.events = events;
    store.commit(done).await.unwrap();
    let old = new_commit("u", 0, 1).events[0].to_stored_json().unwrap();
    let old = String::from_utf8(old).unwrap();
    let stream = format!("{prefix}events");
    redis
        .command(&["XADD", &stream, "*", "t", "u", "s", "1", "e", &old])
        .await;
    let mut notices = Vec::new();
    for _ in 0..3 {
        notices.push(timeout(WAIT, all.recv()).await.unwrap().unwrap());
    }
    let seen: Vec<(&str, u64, Option<TaskState>)> = notices
        .iter()
        .map(|n| (&*n.task_id, n.seq, n.state))
        .collect();
    assert_eq!(
        seen,
        [
            ("t", 1, Some(TaskState::Submitted)),
            ("t", 2, None),
            ("u", 1, Some(TaskState::Submitted)),
        ]
    );
    let entry = redis
        .command(&["XREVRANGE", &stream, "+", "-", "COUNT", "2"])
        .await;
    let text = format!("{entry:?}");
    assert!(
        !text.contains("no state of its own"),
        "events stay in the task's log: {text}"
    );
}

#[tokio::test]
async fn a_shut_down_bus_closes_receivers_and_refuses_subscriptions() {
    let redis = TestRedis::shared();
    let (_store, bus, _) = pair(redis, "shutdown").await;
    let mut one = bus.subscribe("t").await.unwrap();
    let mut all = bus.subscribe_all("g").await.unwrap();
    bus.shutdown();
    assert!(matches!(
        timeout(WAIT, one.recv()).await.unwrap(),
        Err(RecvError::Closed)
    ));
    assert!(matches!(
        timeout(WAIT, all.recv()).await.unwrap(),
        Err(RecvError::Closed)
    ));
    assert!(bus.subscribe("t").await.is_err());
}

/// Two replicas (two stores, two connections) race a cancel against a completion on each
/// of 1,000 tasks: the commit script's compare-and-set lets exactly one win each time,
/// the loser sees the winner's seq, and each side wins some of the races.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_complete_racing_from_two_replicas_never_both_win() {
    let redis = TestRedis::shared();
    let prefix = TestRedis::prefix("race");
    let one = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let two = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let ids: Vec<String> = (0..1000).map(|i| format!("race-{i}")).collect();
    // Both replicas create half the tasks: each has its connection up and the commit
    // script loaded before the races, so neither starts them behind.
    for (i, chunk) in ids.chunks(100).enumerate() {
        let replica = if i % 2 == 0 { &one } else { &two };
        futures::future::try_join_all(chunk.iter().map(|id| replica.commit(new_commit(id, 0, 1))))
            .await
            .unwrap();
    }
    // The task and its event both in `state`, so the log shows whose commit won.
    let finish = |id: &str, state: TaskState| {
        let mut commit = new_commit(id, 1, 2);
        let record = std::sync::Arc::make_mut(&mut commit.record);
        record.task.status.state = state;
        let event = sb_protocol::StreamResponse::StatusUpdate(sb_protocol::TaskStatusUpdateEvent {
            task_id: id.to_owned(),
            context_id: record.task.context_id.clone(),
            status: record.task.status.clone(),
            metadata: None,
        });
        commit.events[0].event = event.into();
        commit
    };
    let mut races = Vec::new();
    for id in &ids {
        let (cancel, complete) = (
            finish(id, TaskState::Canceled),
            finish(id, TaskState::Completed),
        );
        let (one, two) = (one.clone(), two.clone());
        races.push(tokio::spawn(async move {
            let (a, b) = tokio::join!(one.commit(cancel), two.commit(complete));
            (a, b)
        }));
    }
    let mut cancels = 0;
    for (id, race) in ids.iter().zip(races) {
        let (a, b) = race.await.unwrap();
        let winner = match (&a, &b) {
            (Ok(()), Err(StoreError::Conflict { current_seq: 2, .. })) => TaskState::Canceled,
            (Err(StoreError::Conflict { current_seq: 2, .. }), Ok(())) => TaskState::Completed,
            other => panic!("{id}: {other:?}"),
        };
        cancels += usize::from(winner == TaskState::Canceled);
        let stored = two.get(id).await.unwrap().unwrap();
        assert_eq!((stored.seq, stored.state()), (2, winner));
        let events = one.events_after(id, 0, 10).await.unwrap();
        let states: Vec<_> = events.iter().map(|e| (e.seq, e.event.state())).collect();
        assert_eq!(
            states,
            [(1, Some(TaskState::Submitted)), (2, Some(winner))],
            "{id}: one terminal event, the winner's"
        );
    }
    eprintln!("cancel won {cancels} of 1000 races");
    // Both outcomes happened, or the two commits never raced.
    assert!(
        cancels > 0 && cancels < 1000,
        "cancel won {cancels} of 1000 races: one side always won"
    );
}

#[tokio::test]
async fn a_commit_with_events_out_of_order_writes_nothing() {
    let redis = TestRedis::shared();
    let store = RedisStore::connect(redis.url(), &TestRedis::prefix("order"))
        .await
        .unwrap();
    let mut bad = new_commit("t", 0, 1);
    bad.events[0].seq = 0;
    assert!(matches!(
        store.commit(bad).await,
        Err(StoreError::Backend(_))
    ));
    assert!(store.get("t").await.unwrap().is_none());
    store.commit(new_commit("t", 0, 1)).await.unwrap();
}

#[tokio::test]
async fn push_records_stay_byte_exact_while_their_cursor_moves() {
    let redis = TestRedis::shared();
    let prefix = TestRedis::prefix("cursor");
    let store = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let record = PushConfigRecord {
        config: sb_protocol::TaskPushNotificationConfig {
            tenant: None,
            id: Some("c".into()),
            task_id: "t".into(),
            url: "https://hooks.example/a/b?x=ü".into(),
            token: Some("tok".into()),
            authentication: None,
        },
        version: StoredVersion::V0_3,
        owner: "alice".into(),
        created_at: chrono::Utc::now(),
        from_seq: 4,
    };
    store.put_push_config(record.clone()).await.unwrap();
    store.advance_push_cursor("t", "c", 9).await.unwrap();
    let raw = redis
        .command(&["HGET", &format!("{prefix}push:t"), "c"])
        .await;
    let raw: String = ::redis::from_redis_value(raw).unwrap();
    assert_eq!(raw, serde_json::to_string(&record).unwrap());
    let read = store.get_push_config("t", "c").await.unwrap().unwrap();
    assert_eq!(
        read,
        PushConfigRecord {
            from_seq: 9,
            ..record.clone()
        }
    );
    assert_eq!(store.list_all_push_configs().await.unwrap()[0].from_seq, 9);
    // Re-registering replaces the cursor along with the record.
    store.put_push_config(record.clone()).await.unwrap();
    assert_eq!(
        store
            .get_push_config("t", "c")
            .await
            .unwrap()
            .unwrap()
            .from_seq,
        4
    );
    // Deleted, then advanced by a late delivery: stays deleted.
    assert!(store.delete_push_config("t", "c").await.unwrap());
    store.advance_push_cursor("t", "c", 12).await.unwrap();
    assert!(store.get_push_config("t", "c").await.unwrap().is_none());
    assert!(store.list_all_push_configs().await.unwrap().is_empty());
}

#[test]
fn urls_are_redacted() {
    assert_eq!(
        redact_url("redis://:hunter2@h:6379/0"),
        "redis://:***@h:6379/0"
    );
    assert_eq!(
        redact_url("rediss://alice:hunter2@h/1"),
        "rediss://alice:***@h/1"
    );
    assert_eq!(redact_url("redis://hunter2@h"), "redis://***@h");
    assert_eq!(redact_url("redis://h:6379"), "redis://h:6379");
    assert_eq!(redact_url("hunter2"), "(unparsable URL)");
}

#[tokio::test]
async fn credentials_in_the_url_authenticate_and_never_show_in_errors() {
    let redis = TestRedis::spawn();
    let port = redis
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    redis
        .command(&[
            "ACL",
            "SETUSER",
            "alice",
            "on",
            ">alice-secret",
            "~*",
            "&*",
            "+@all",
        ])
        .await;
    redis
        .command(&["CONFIG", "SET", "requirepass", "default-secret"])
        .await;

    let default = format!("redis://:default-secret@127.0.0.1:{port}/0");
    let store = RedisStore::connect(&default, "p:").await.unwrap();
    store.commit(new_commit("t", 0, 1)).await.unwrap();
    let alice = format!("redis://alice:alice-secret@127.0.0.1:{port}/0");
    let store = RedisStore::connect(&alice, "p:").await.unwrap();
    assert!(store.get("t").await.unwrap().is_some());
    RedisBus::connect(&alice, "p:").await.unwrap();

    let wrong = format!("redis://alice:not-the-secret@127.0.0.1:{port}/0");
    let err = RedisStore::connect(&wrong, "p:")
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains("not-the-secret"), "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");

    let down = "redis://:hunter2@127.0.0.1:1/0";
    let err = RedisStore::connect(down, "p:")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unreachable") && !err.contains("hunter2"),
        "{err}"
    );
    let err = RedisBus::connect(down, "p:").await.unwrap_err().to_string();
    assert!(
        err.contains("unreachable") && !err.contains("hunter2"),
        "{err}"
    );
}

#[tokio::test]
async fn rediss_urls_speak_tls() {
    // A peer that hangs up on the ClientHello: the TLS stack (and its crypto provider) is
    // in place if this is an error rather than a panic or a plain-text exchange.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            drop(conn);
        }
    });
    let url = format!("rediss://:hunter2@127.0.0.1:{port}/0");
    let err = RedisStore::connect(&url, "p:")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("127.0.0.1:{port}")) && !err.contains("hunter2"),
        "{err}"
    );
}

/// The restart helper the deployment tests build on, and the clients' reconnection: the
/// same store and bus keep working once Redis is back (scripts reloaded, group re-read).
#[tokio::test]
async fn tasks_survive_a_restart_with_the_append_only_file_and_clients_reconnect() {
    let dir = tempfile::tempdir().unwrap();
    let mut redis = TestRedis::spawn_with_aof(dir.path());
    let store = RedisStore::connect(redis.url(), "p:").await.unwrap();
    let bus = RedisBus::connect(redis.url(), "p:").await.unwrap();
    let mut all = bus.subscribe_all("g").await.unwrap();
    store.commit(new_commit("t", 0, 1)).await.unwrap();
    store.commit(new_commit("t", 1, 2)).await.unwrap();
    redis.restart();

    let fresh = RedisStore::connect(redis.url(), "p:").await.unwrap();
    assert_eq!(fresh.get("t").await.unwrap().unwrap().seq, 2);
    assert_eq!(fresh.events_after("t", 0, 10).await.unwrap().len(), 2);
    // The first command on the old connection may fail; the manager reconnects.
    let mut reconnected = false;
    for _ in 0..50 {
        if store.get("t").await.is_ok() {
            reconnected = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reconnected);
    store.commit(new_commit("t", 2, 3)).await.unwrap();
    let mut seqs = Vec::new();
    while seqs.last() != Some(&3) {
        seqs.push(timeout(WAIT, all.recv()).await.unwrap().unwrap().seq);
    }
    assert_eq!(seqs, [1, 2, 3]);
    // Stopped before its directory goes.
    drop(redis);
}

/// The open-task limit holds across replicas: two stores (two replicas) creating for
/// one principal stop at the limit together, and a finished or evicted task frees its
/// slot.
#[tokio::test]
async fn the_open_task_limit_is_shared_by_every_replica() {
    let redis = TestRedis::shared();
    let prefix = TestRedis::prefix("open-limit");
    let a = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let b = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let create = |id: &str| TaskCommit {
        open_limit: Some(2),
        ..new_commit(id, 0, 1)
    };
    let refused = |result: crate::StoreResult<()>| {
        matches!(result, Err(crate::StoreError::LimitReached { limit: 2 }))
    };
    a.commit(create("t1")).await.unwrap();
    b.commit(create("t2")).await.unwrap();
    assert!(refused(a.commit(create("t3")).await));
    assert!(
        a.get("t3").await.unwrap().is_none(),
        "a refused create writes nothing"
    );
    let mut done = new_commit("t1", 1, 2);
    std::sync::Arc::make_mut(&mut done.record).task.status.state = TaskState::Completed;
    b.commit(done).await.unwrap();
    a.commit(create("t3")).await.unwrap();
    assert!(refused(b.commit(create("t4")).await));
    assert!(a.delete("t2").await.unwrap());
    b.commit(create("t4")).await.unwrap();
}

#[tokio::test]
async fn a_redis_from_before_the_task_indexes_is_indexed_on_first_use() {
    let redis = TestRedis::shared();
    let prefix = TestRedis::prefix("backfill");
    let old = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let mut ended = new_commit("ended", 0, 1);
    std::sync::Arc::make_mut(&mut ended.record)
        .task
        .status
        .state = TaskState::Completed;
    old.commit(ended).await.unwrap();
    old.commit(new_commit("running", 0, 1)).await.unwrap();
    // What a store written by the previous version has: no index, no mark.
    let finished = format!("{prefix}finished");
    let unfinished = format!("{prefix}unfinished");
    let marked = format!("{prefix}tasks-indexed");
    redis
        .command(&["DEL", &finished, &unfinished, &marked])
        .await;
    let new = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let running = new.list_unfinished().await.unwrap();
    assert_eq!(running.len(), 1);
    assert_eq!(running[0].task.id, "running");
    assert_eq!(new.finished_before(u64::MAX, 10).await.unwrap(), ["ended"]);
    let mark = redis.command(&["EXISTS", &marked]).await;
    assert_eq!(
        ::redis::from_redis_value::<i64>(mark).unwrap(),
        1,
        "done once"
    );
}
