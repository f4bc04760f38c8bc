#![allow(clippy::unwrap_used, clippy::expect_used)] // test support: a failed step is a failed test
//! The contract every backend must meet, as generic test functions plus a macro that
//! instantiates them for one backend (quickwit's `metastore_test_suite!` pattern).
//! The [`RegistryStore`](crate::traits::RegistryStore) part is in [`registry`], the
//! [`FleetStore`](crate::FleetStore) part in [`fleet`].

pub mod fleet;
pub mod registry;

use crate::record::{
    DeadLetter, PushConfigRecord, StoredEvent, StoredVersion, TaskCommit, TaskQuery, TaskRecord,
};
use crate::traits::{DeadLetterStore, PushConfigStore, StoreError, TaskStore};
use chrono::{Duration, TimeZone, Utc};
use sb_protocol::{
    StreamResponse, Task, TaskPushNotificationConfig, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

/// A commit that moves task `id` from `expected` to `seq` with one status event.
pub fn new_commit(id: &str, expected: u64, seq: u64) -> TaskCommit {
    let base = Utc
        .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or_default();
    let state = if seq == 1 {
        TaskState::Submitted
    } else {
        TaskState::Working
    };
    let status = TaskStatus {
        state,
        message: None,
        timestamp: Some(base + Duration::seconds(seq as i64)),
    };
    let task = Task {
        id: id.to_owned(),
        context_id: "ctx".into(),
        status: status.clone(),
        artifacts: vec![],
        history: vec![],
        metadata: None,
    };
    let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: id.to_owned(),
        context_id: "ctx".into(),
        status,
        metadata: None,
    });
    TaskCommit {
        open_limit: None,
        expected_seq: expected,
        record: TaskRecord {
            task,
            seq,
            agent: "a".into(),
            owner: String::new(),
            created_at: base,
            task_json: Default::default(),
        }
        .into(),
        events: vec![StoredEvent {
            task_id: id.into(),
            seq,
            event: event.into(),
            traceparent: None,
            json: Default::default(),
        }],
    }
}

pub async fn commit_is_compare_and_set(store: &dyn TaskStore) {
    store.commit(new_commit("t", 0, 1)).await.unwrap();
    let again = store.commit(new_commit("t", 0, 1)).await;
    assert!(
        matches!(again, Err(StoreError::Conflict { current_seq: 1, .. })),
        "{again:?}"
    );
    store.commit(new_commit("t", 1, 2)).await.unwrap();
    let stale = store.commit(new_commit("t", 1, 2)).await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { current_seq: 2, .. })),
        "{stale:?}"
    );
    assert_eq!(store.get("t").await.unwrap().unwrap().seq, 2);
    assert!(store.get("missing").await.unwrap().is_none());
}

/// The seqs of the task's events after `after` (up to 10,000), in the order stored.
pub async fn event_seqs(store: &dyn TaskStore, task_id: &str, after: u64) -> Vec<u64> {
    let events = store.events_after(task_id, after, 10_000).await.unwrap();
    events.iter().map(|e| e.seq).collect()
}

pub async fn events_replay_in_order(store: &dyn TaskStore) {
    for seq in 1..=5 {
        store.commit(new_commit("e", seq - 1, seq)).await.unwrap();
    }
    store.commit(new_commit("other", 0, 1)).await.unwrap();
    assert_eq!(event_seqs(store, "e", 0).await, vec![1, 2, 3, 4, 5]);
    assert_eq!(event_seqs(store, "e", 3).await, vec![4, 5]);
    assert_eq!(store.events_after("e", 0, 2).await.unwrap().len(), 2);
    assert!(store.events_after("e", 5, 10).await.unwrap().is_empty());
    assert!(
        store
            .events_after("e", u64::MAX, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn concurrent_writers_never_both_win(store: std::sync::Arc<dyn TaskStore>) {
    store.commit(new_commit("race", 0, 1)).await.unwrap();
    let mut handles = Vec::new();
    for _ in 0..8 {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            store.commit(new_commit("race", 1, 2)).await
        }));
    }
    let mut wins = 0;
    for h in handles {
        match h.await.unwrap() {
            Ok(()) => wins += 1,
            // A loser loses to the winner's write, not to a failing backend.
            Err(StoreError::Conflict { .. }) => {}
            Err(other) => panic!("a losing writer must see a conflict, not {other:?}"),
        }
    }
    assert_eq!(wins, 1);
    let stored = store.get("race").await.unwrap().unwrap();
    assert_eq!(stored.seq, 2, "the winner's write is the one stored");
}

pub async fn list_filters_and_pages(store: &dyn TaskStore) {
    for (i, id) in ["l1", "l2", "l3"].iter().enumerate() {
        let mut c = new_commit(id, 0, 1);
        std::sync::Arc::make_mut(&mut c.record)
            .task
            .status
            .timestamp = Some(
            Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, i as u32)
                .single()
                .unwrap(),
        );
        if *id == "l2" {
            std::sync::Arc::make_mut(&mut c.record).task.context_id = "other".into();
        }
        store.commit(c).await.unwrap();
    }
    let mut foreign = new_commit("l4", 0, 1);
    std::sync::Arc::make_mut(&mut foreign.record).owner = "someone-else".into();
    store.commit(foreign).await.unwrap();

    let mut q = TaskQuery {
        agent: "a".into(),
        limit: 2,
        ..Default::default()
    };
    let page = store.list(&q).await.unwrap();
    assert_eq!(page.total, 3);
    let ids: Vec<&str> = page.records.iter().map(|r| r.task.id.as_str()).collect();
    assert_eq!(ids, vec!["l3", "l2"], "newest status first");
    q.after = page.next.clone();
    let page2 = store.list(&q).await.unwrap();
    let ids: Vec<&str> = page2.records.iter().map(|r| r.task.id.as_str()).collect();
    assert_eq!(ids, vec!["l1"]);
    assert!(page2.next.is_none());

    let by_ctx = TaskQuery {
        agent: "a".into(),
        context_id: Some("other".into()),
        limit: 10,
        ..Default::default()
    };
    assert_eq!(store.list(&by_ctx).await.unwrap().total, 1);
    let by_state = TaskQuery {
        agent: "a".into(),
        state: Some(TaskState::Completed),
        limit: 10,
        ..Default::default()
    };
    assert_eq!(store.list(&by_state).await.unwrap().total, 0);
    let other_agent = TaskQuery {
        agent: "b".into(),
        limit: 10,
        ..Default::default()
    };
    assert_eq!(store.list(&other_agent).await.unwrap().total, 0);
    assert_eq!(store.list_all().await.unwrap().len(), 4);
}

pub async fn delete_removes_task_and_log(store: &dyn TaskStore) {
    store.commit(new_commit("gone", 0, 1)).await.unwrap();
    store.commit(new_commit("gone", 1, 2)).await.unwrap();
    store.commit(new_commit("kept", 0, 1)).await.unwrap();
    assert!(store.delete("gone").await.unwrap());
    assert!(!store.delete("gone").await.unwrap());
    assert!(store.get("gone").await.unwrap().is_none());
    assert!(store.events_after("gone", 0, 10).await.unwrap().is_empty());
    assert_eq!(store.events_after("kept", 0, 10).await.unwrap().len(), 1);
    // A task created again under the same id starts a fresh log.
    store.commit(new_commit("gone", 0, 1)).await.unwrap();
    assert_eq!(store.events_after("gone", 0, 10).await.unwrap().len(), 1);
}

/// `new_commit`, leaving the task in `state` at `seconds` past the suite's base time.
fn commit_in(id: &str, expected: u64, state: TaskState, seconds: i64) -> TaskCommit {
    let mut commit = new_commit(id, expected, expected + 1);
    let record = std::sync::Arc::make_mut(&mut commit.record);
    record.task.status.state = state;
    record.task.status.timestamp = Some(record.created_at + Duration::seconds(seconds));
    commit
}

pub async fn tasks_are_indexed_as_finished_or_not(store: &dyn TaskStore) {
    let millis = |seconds: i64| {
        let base = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().unwrap();
        (base + Duration::seconds(seconds)).timestamp_millis() as u64
    };
    store
        .commit(commit_in("late", 0, TaskState::Completed, 30))
        .await
        .unwrap();
    store
        .commit(commit_in("early", 0, TaskState::Failed, 10))
        .await
        .unwrap();
    store
        .commit(commit_in("running", 0, TaskState::Working, 5))
        .await
        .unwrap();
    store
        .commit(commit_in("waiting", 0, TaskState::InputRequired, 5))
        .await
        .unwrap();
    store
        .commit(commit_in("moved", 0, TaskState::Canceled, 1))
        .await
        .unwrap();
    // Finished again later (a store must not keep its first end as well).
    store
        .commit(commit_in("moved", 1, TaskState::Canceled, 20))
        .await
        .unwrap();
    assert_eq!(
        store.finished_before(u64::MAX, 100).await.unwrap(),
        ["early", "moved", "late"],
        "finished tasks only, earliest end first"
    );
    assert_eq!(
        store.finished_before(millis(20), 100).await.unwrap(),
        ["early", "moved"]
    );
    assert_eq!(
        store.finished_before(millis(19), 100).await.unwrap(),
        ["early"]
    );
    assert_eq!(store.finished_before(u64::MAX, 1).await.unwrap(), ["early"]);
    assert!(
        store
            .finished_before(millis(9), 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.delete("early").await.unwrap());
    assert_eq!(
        store.finished_before(u64::MAX, 100).await.unwrap(),
        ["moved", "late"]
    );

    let unfinished = || async {
        let mut ids: Vec<String> = store
            .list_unfinished()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.task.id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(unfinished().await, ["running", "waiting"]);
    store
        .commit(commit_in("running", 1, TaskState::Completed, 40))
        .await
        .unwrap();
    assert_eq!(unfinished().await, ["waiting"]);
    assert_eq!(
        store.finished_before(u64::MAX, 100).await.unwrap(),
        ["moved", "late", "running"]
    );
    assert!(store.delete("waiting").await.unwrap());
    assert!(unfinished().await.is_empty());
}

/// A v1.0 config of `task_id` named `config_id`, delivering from the start.
pub fn push_config_record(task_id: &str, config_id: &str) -> PushConfigRecord {
    PushConfigRecord {
        config: TaskPushNotificationConfig {
            tenant: None,
            id: Some(config_id.into()),
            task_id: task_id.into(),
            url: "https://example.com/hook".into(),
            token: None,
            authentication: None,
        },
        version: StoredVersion::V1_0,
        owner: String::new(),
        created_at: Utc::now(),
        from_seq: 0,
    }
}

pub async fn push_configs_crud(store: &dyn PushConfigStore) {
    let rec = |task: &str, id: &str, url: &str| {
        let mut record = push_config_record(task, id);
        record.config.url = url.into();
        record
    };
    store
        .put_push_config(rec("t", "b", "https://1"))
        .await
        .unwrap();
    assert!(
        store.may_have_push_configs("t"),
        "a created config is seen at once"
    );
    store
        .put_push_config(rec("t", "a", "https://2"))
        .await
        .unwrap();
    store
        .put_push_config(rec("t2", "a", "https://3"))
        .await
        .unwrap();
    store
        .put_push_config(rec("t", "b", "https://4"))
        .await
        .unwrap();
    let list = store.list_push_configs("t").await.unwrap();
    let urls: Vec<&str> = list.iter().map(|r| r.config.url.as_str()).collect();
    assert_eq!(
        urls,
        vec!["https://2", "https://4"],
        "ordered by id, upserted"
    );
    assert_eq!(
        store
            .get_push_config("t2", "a")
            .await
            .unwrap()
            .unwrap()
            .config
            .url,
        "https://3"
    );
    assert!(store.delete_push_config("t", "a").await.unwrap());
    assert!(!store.delete_push_config("t", "a").await.unwrap());
    assert_eq!(store.list_push_configs("t").await.unwrap().len(), 1);
    assert!(store.list_push_configs("nobody").await.unwrap().is_empty());
    store.advance_push_cursor("t2", "a", 7).await.unwrap();
    store.advance_push_cursor("t2", "a", 3).await.unwrap();
    assert_eq!(
        store
            .get_push_config("t2", "a")
            .await
            .unwrap()
            .unwrap()
            .from_seq,
        7,
        "cursors only move forward"
    );
    store.advance_push_cursor("t2", "ghost", 9).await.unwrap();
    assert!(
        store
            .get_push_config("t2", "ghost")
            .await
            .unwrap()
            .is_none(),
        "advancing never creates a config"
    );
    assert_eq!(store.list_all_push_configs().await.unwrap().len(), 2);
    let asked = ["t", "nobody", "t2"].map(String::from).to_vec();
    assert_eq!(
        store.with_push_configs(&asked).await.unwrap(),
        ["t", "t2"],
        "the tasks with configs, in the order asked"
    );
    store.delete_push_configs("t").await.unwrap();
    assert!(store.list_push_configs("t").await.unwrap().is_empty());
    assert_eq!(store.list_push_configs("t2").await.unwrap().len(), 1);
    assert_eq!(store.with_push_configs(&asked).await.unwrap(), ["t2"]);
}

pub async fn dead_letters_round_trip(store: &dyn DeadLetterStore) {
    let letter = |id: &str, secs: i64| DeadLetter {
        id: id.into(),
        task_id: "t".into(),
        config_id: "c".into(),
        seq: 3,
        host: "hooks.example".into(),
        reason: "receiver answered 503".into(),
        attempts: 4,
        failed_at: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().unwrap()
            + Duration::seconds(secs),
    };
    store.put_dead_letter(letter("b", 2)).await.unwrap();
    store.put_dead_letter(letter("a", 1)).await.unwrap();
    let ids: Vec<String> = store
        .list_dead_letters()
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(ids, ["a", "b"], "oldest first");
    assert_eq!(
        store.take_dead_letter("a").await.unwrap().unwrap().reason,
        "receiver answered 503"
    );
    assert!(store.take_dead_letter("a").await.unwrap().is_none());
    assert_eq!(store.list_dead_letters().await.unwrap().len(), 1);
}

/// Instantiates the suite for a backend: `store_test_suite!(Type, async { constructor })`.
#[macro_export]
macro_rules! store_test_suite {
    ($ty:ty, $make:expr) => {
        mod store_suite {
            #[allow(unused_imports)]
            use super::*;

            async fn make() -> $ty {
                $make.await
            }

            #[tokio::test]
            async fn commit_is_compare_and_set() {
                $crate::suite::commit_is_compare_and_set(&make().await).await;
            }

            #[tokio::test]
            async fn events_replay_in_order() {
                $crate::suite::events_replay_in_order(&make().await).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn concurrent_writers_never_both_win() {
                $crate::suite::concurrent_writers_never_both_win(std::sync::Arc::new(make().await))
                    .await;
            }

            #[tokio::test]
            async fn list_filters_and_pages() {
                $crate::suite::list_filters_and_pages(&make().await).await;
            }

            #[tokio::test]
            async fn delete_removes_task_and_log() {
                $crate::suite::delete_removes_task_and_log(&make().await).await;
            }

            #[tokio::test]
            async fn tasks_are_indexed_as_finished_or_not() {
                $crate::suite::tasks_are_indexed_as_finished_or_not(&make().await).await;
            }

            #[tokio::test]
            async fn dead_letters_round_trip() {
                $crate::suite::dead_letters_round_trip(&make().await).await;
            }

            #[tokio::test]
            async fn push_configs_crud() {
                $crate::suite::push_configs_crud(&make().await).await;
            }

            $crate::registry_test_suite!();
            $crate::fleet_test_suite!();
        }
    };
}
