//! The embedded store: the shared store suite, the memory cache, the journal's
//! checkpoints and a real crash.

use std::path::Path;
use std::time::Duration;

use redb::ReadableDatabase;

use super::hot::{RECENT_EVENTS, RECENT_EVENTS_IN_ALL, RECENTLY_FINISHED};
use super::{RedbStore, TASKS, tables};
use crate::record::{PushConfigRecord, StoredEvent};
use crate::traits::{PushConfigStore, StoreError, TaskStore};

crate::store_test_suite!(crate::RedbStore, async {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::RedbStore::open(&dir.path().join("store.redb")).unwrap();
    // Keep the directory alive for the test's duration.
    std::mem::forget(dir);
    store
});

#[tokio::test]
async fn survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        store
            .commit(crate::suite::new_commit("t1", 0, 1))
            .await
            .unwrap();
        store.put_push_config(push_config("t1")).await.unwrap();
    }
    // The writer thread holds the database until its queue closes; wait for release.
    let store = reopen(&path, super::writer::CHECKPOINT_EVERY).await;
    let rec = store.get("t1").await.unwrap().unwrap();
    assert_eq!(rec.seq, 1);
    assert_eq!(store.events_after("t1", 0, 10).await.unwrap().len(), 1);
    // Which tasks have push configs is kept in memory: it must be rebuilt on open.
    assert_eq!(store.list_push_configs("t1").await.unwrap().len(), 1);
    // Not cached yet (written before the reopen): the compare-and-set reads the file.
    let stale = crate::suite::new_commit("t1", 0, 1);
    assert!(matches!(
        store.commit(stale).await,
        Err(StoreError::Conflict { current_seq: 1, .. })
    ));
}

#[tokio::test]
async fn a_store_from_before_the_task_indexes_is_indexed_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        let mut ended = crate::suite::new_commit("ended", 0, 1);
        std::sync::Arc::make_mut(&mut ended.record)
            .task
            .status
            .state = sb_protocol::TaskState::Completed;
        store.commit(ended).await.unwrap();
        let running = crate::suite::new_commit("running", 0, 1);
        store.commit(running).await.unwrap();
    }
    let db = loop {
        match redb::Database::open(&path) {
            Ok(db) => break db,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    tables::forget_task_indexes(&db);
    drop(db);
    let store = reopen(&path, super::writer::CHECKPOINT_EVERY).await;
    assert_eq!(
        store.finished_before(u64::MAX, 10).await.unwrap(),
        ["ended"]
    );
    let unfinished = store.list_unfinished().await.unwrap();
    assert_eq!(unfinished.len(), 1);
    assert_eq!(unfinished[0].task.id, "running");
}

#[tokio::test]
async fn a_task_finished_in_a_batch_that_writes_the_file_leaves_the_unfinished_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        let running = crate::suite::new_commit("r", 0, 1);
        store.commit(running).await.unwrap();
    }
    // Reopened, the cache is empty: the commit reads the task from the file, in a batch
    // that a push config (a request that writes the file at once) shares with it.
    let store = reopen(&path, super::writer::CHECKPOINT_EVERY).await;
    let mut finish = crate::suite::new_commit("r", 1, 2);
    std::sync::Arc::make_mut(&mut finish.record)
        .task
        .status
        .state = sb_protocol::TaskState::Completed;
    let (pushed, finished) = futures::join!(
        store.put_push_config(push_config("other")),
        store.commit(finish)
    );
    pushed.unwrap();
    finished.unwrap();
    assert!(store.list_unfinished().await.unwrap().is_empty());
    assert_eq!(store.finished_before(u64::MAX, 10).await.unwrap(), ["r"]);
}

/// Set in the child process [`acknowledged_writes_survive_a_kill_9`] starts.
const CRASH_DIR: &str = "SB_STORE_CRASH_TEST_DIR";
/// Set (in ms) when the child checkpoints all along, with writers side by side.
const CRASH_CHECKPOINT_MS: &str = "SB_STORE_CRASH_CHECKPOINT_MS";

/// The child of [`acknowledged_writes_survive_a_kill_9`] (ignored on its own): writes
/// until killed, printing each write it has been told is durable.
#[tokio::test]
#[ignore = "run as a child process by acknowledged_writes_survive_a_kill_9"]
async fn crash_child() {
    let dir = std::env::var(CRASH_DIR).expect("started by the crash test");
    // By default no checkpoint: what the kill leaves is in the journal only.
    let every = match std::env::var(CRASH_CHECKPOINT_MS) {
        Ok(ms) => Duration::from_millis(ms.parse().unwrap()),
        Err(_) => Duration::from_secs(24 * 3600),
    };
    let store = RedbStore::open_checkpointing(&Path::new(&dir).join("s.redb"), every).unwrap();
    if std::env::var(CRASH_CHECKPOINT_MS).is_ok() {
        // Writers side by side, so that batches are journaled while checkpoints run.
        for writer in 1..=3 {
            let store = store.clone();
            tokio::spawn(async move {
                let task_id = format!("b{writer}");
                for seq in 1u64.. {
                    let commit = crate::suite::new_commit(&task_id, seq - 1, seq);
                    store.commit(commit).await.unwrap();
                    println!("also {task_id} {seq}");
                }
            });
        }
    }
    for seq in 1u64.. {
        let commit = crate::suite::new_commit("t1", seq - 1, seq);
        store.commit(commit).await.unwrap();
        if seq % 10 == 0 {
            let config = config_named("t1", &format!("c{seq}"));
            store.put_push_config(config).await.unwrap();
        }
        println!("acked {seq}");
    }
}

/// A real crash: a child process writes, is killed with SIGKILL before any
/// checkpoint, and every write it was told is durable is there after the reopen,
/// replayed from the journal.
#[tokio::test]
async fn acknowledged_writes_survive_a_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let (acked, _) = run_and_kill(dir.path(), None);
    assert_eq!(acked, 300, "the child wrote");
    // The child never checkpointed: its store file records the first epoch, 0.
    let journal = super::journal::frames_to_replay(&journal_of(&dir.path().join("s.redb")), 0);
    assert!(
        journal > 0,
        "the kill came before a checkpoint: the journal holds the writes"
    );

    let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
    assert_survived(&store, "t1", acked).await;
    let configs = store.list_push_configs("t1").await.unwrap();
    assert!(
        configs.len() as u64 >= acked / 10,
        "{} configs",
        configs.len()
    );
    assert!(store.may_have_push_configs("t1"));
    // The replay checkpointed: a second reopen has nothing left to replay.
    assert_eq!(
        pending(&store, &dir.path().join("s.redb")),
        0,
        "the journal was emptied after the replay"
    );
}

/// Checkpoints empty the journal, also once writes stop, and closing the store
/// leaves nothing to replay.
#[tokio::test]
async fn a_requested_checkpoint_empties_the_journal_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    let store = RedbStore::open_checkpointing(&path, Duration::from_secs(24 * 3600)).unwrap();
    let journal_len = || pending(&store, &path);
    store
        .commit(crate::suite::new_commit("t1", 0, 1))
        .await
        .unwrap();
    assert!(journal_len() > 0, "journaled, not yet checkpointed");
    store.checkpoint().await.unwrap();
    assert_eq!(journal_len(), 0, "nothing left to replay");
    store.checkpoint().await.unwrap();
    assert_eq!(store.get("t1").await.unwrap().unwrap().seq, 1);
}

#[tokio::test]
async fn checkpoints_empty_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    // Long enough that the two commits below come before the first checkpoint is due.
    let store = RedbStore::open_checkpointing(&path, Duration::from_millis(100)).unwrap();
    // A checkpoint comes after a batch's reply, or on the ticker's reminder.
    let emptied = || async {
        for _ in 0..400 {
            if pending(&store, &path) == 0 {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        false
    };
    store
        .commit(crate::suite::new_commit("t1", 0, 1))
        .await
        .unwrap();
    store
        .commit(crate::suite::new_commit("t1", 1, 2))
        .await
        .unwrap();
    // Nothing is written after these: the ticker makes the idle writer checkpoint.
    assert!(emptied().await, "a checkpoint emptied the journal");

    let never = Duration::from_secs(24 * 3600);
    drop(store);
    let store = reopen(&path, never).await;
    store
        .commit(crate::suite::new_commit("t1", 2, 3))
        .await
        .unwrap();
    assert!(
        pending(&store, &path) > 0,
        "journaled, not yet checkpointed"
    );
    drop(store);
    assert_eq!(
        pending_closed(&path).await,
        0,
        "closing the store checkpointed"
    );
    let store = reopen(&path, never).await;
    assert_eq!(store.get("t1").await.unwrap().unwrap().seq, 3);
}

/// Runs [`crash_child`] in `dir` until it has acknowledged 300 writes to `t1`, then
/// kills it with SIGKILL. Returns that count, and the last acknowledged sequence of
/// each side-by-side writer's task.
fn run_and_kill(
    dir: &Path,
    checkpoint_ms: Option<u64>,
) -> (u64, std::collections::BTreeMap<String, u64>) {
    use std::io::BufRead;
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--ignored", "--exact", "redb_store::tests::crash_child"])
        .args(["--nocapture", "--test-threads=1"])
        .env(CRASH_DIR, dir)
        .stdout(std::process::Stdio::piped());
    if let Some(ms) = checkpoint_ms {
        command.env(CRASH_CHECKPOINT_MS, ms.to_string());
    }
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = 0;
    let mut others = std::collections::BTreeMap::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(seq) = line.strip_prefix("acked ") {
            acked = seq.parse::<u64>().unwrap();
            if acked >= 300 {
                break;
            }
        } else if let Some(rest) = line.strip_prefix("also ")
            && let Some((task_id, seq)) = rest.split_once(' ')
        {
            others.insert(task_id.to_owned(), seq.parse::<u64>().unwrap());
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    (acked, others)
}

/// A crash while checkpoints run back to back (one every millisecond, the journal
/// moving between its two files each time, batches acknowledged while redb's durable
/// commit holds the file): every acknowledged write is there after the reopen.
#[tokio::test]
async fn acknowledged_writes_survive_a_kill_9_mid_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let (acked, others) = run_and_kill(dir.path(), Some(1));
    assert_eq!(acked, 300, "the child wrote");
    assert_eq!(
        others.len(),
        3,
        "the side-by-side writers wrote: {others:?}"
    );
    let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
    assert_survived(&store, "t1", acked).await;
    for (task_id, acked) in others {
        assert_survived(&store, &task_id, acked).await;
    }
}

/// Every write to `task_id` up to the acknowledged sequence `acked` is in `store`, and
/// its events have no gap.
async fn assert_survived(store: &RedbStore, task_id: &str, acked: u64) {
    let record = store
        .get(task_id)
        .await
        .unwrap()
        .expect("the task survived");
    assert!(
        record.seq >= acked,
        "{task_id}: seq {} < acknowledged {acked}",
        record.seq
    );
    let seqs = crate::suite::event_seqs(store, task_id, 0).await;
    assert_eq!(
        seqs,
        (1..=record.seq).collect::<Vec<_>>(),
        "{task_id}: no event lost"
    );
}

/// Writes acknowledged while a checkpoint holds the file are journaled only; a read
/// that goes to the file (a listing always does) waits until they are in it.
#[tokio::test]
async fn reads_of_the_file_see_writes_acknowledged_during_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open_checkpointing(&dir.path().join("s.redb"), Duration::from_millis(1))
        .unwrap();
    for n in 0..200 {
        let task_id = format!("task-{n:03}");
        store
            .commit(crate::suite::new_commit(&task_id, 0, 1))
            .await
            .unwrap();
        let listed = store.list_all().await.unwrap();
        assert_eq!(listed.len(), n + 1, "{task_id} acknowledged, not listed");
        assert!(listed.iter().any(|r| r.task.id == task_id));
    }
}

/// Whether the redb file itself holds the task (not the cache, not the journal).
fn in_file(store: &RedbStore, task_id: &str) -> bool {
    let txn = store.db.begin_read().unwrap();
    let table = txn.open_table(TASKS).unwrap();
    table.get(task_id).unwrap().is_some()
}

/// Task commits are acknowledged once journaled and reach the file a few batches at a
/// time; a read that needs the file has them applied at once and sees them.
#[tokio::test]
async fn task_commits_reach_the_file_deferred_and_reads_of_it_see_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    // No checkpoint (nor its ticker's reminder) during the test.
    let store = RedbStore::open_checkpointing(&path, Duration::from_secs(3600)).unwrap();
    for n in 0..50 {
        let task_id = format!("task-{n:03}");
        store
            .commit(crate::suite::new_commit(&task_id, 0, 1))
            .await
            .unwrap();
        assert!(
            !in_file(&store, &task_id),
            "{task_id} applied with its batch"
        );
        assert_eq!(store.get(&task_id).await.unwrap().unwrap().seq, 1);
        let listed = store.list_all().await.unwrap();
        assert_eq!(listed.len(), n + 1, "{task_id} acknowledged, not listed");
        assert!(in_file(&store, &task_id), "the listing had it applied");
    }
    // Any other request is applied after the deferred commits, in order.
    store
        .commit(crate::suite::new_commit("doomed", 0, 1))
        .await
        .unwrap();
    assert!(store.delete("doomed").await.unwrap());
    assert!(!in_file(&store, "doomed"));
    assert!(store.get("doomed").await.unwrap().is_none());
    // Closing applies and checkpoints what is deferred: nothing left to replay.
    store
        .commit(crate::suite::new_commit("last", 0, 1))
        .await
        .unwrap();
    drop(store);
    assert_eq!(pending_closed(&path).await, 0);
    let store = reopen(&path, Duration::from_secs(3600)).await;
    assert_eq!(store.list_all().await.unwrap().len(), 51);
}

/// Deferred commits pin the cache (it must keep what the file lacks); once the file has
/// caught up, the cache forgets what is beyond its bound again, under steady commits
/// too (it used to wait for a batch applied unpinned, which then never came).
#[tokio::test]
async fn the_cache_stays_bounded_under_deferred_commits() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        RedbStore::open_checkpointing(&dir.path().join("s.redb"), Duration::from_secs(3600))
            .unwrap();
    let commits = (0..RECENTLY_FINISHED + 300).map(|n| {
        let mut commit = crate::suite::new_commit(&format!("done-{n:05}"), 0, 1);
        std::sync::Arc::make_mut(&mut commit.record)
            .task
            .status
            .state = sb_protocol::TaskState::Completed;
        let store = &store;
        async move { store.commit(commit).await }
    });
    for outcome in futures::future::join_all(commits).await {
        outcome.unwrap();
    }
    // A read of the file has the deferred commits applied.
    assert_eq!(
        store.list_all().await.unwrap().len(),
        RECENTLY_FINISHED + 300
    );
    let cached = store.hot.read().records.len();
    assert!(cached <= RECENTLY_FINISHED, "{cached} tasks cached");
}

/// Frames a reopen of the store at `path`, open as `store`, would replay.
fn pending(store: &RedbStore, path: &Path) -> usize {
    let epoch = super::tables::recorded_epoch(&*store.db);
    super::journal::frames_to_replay(&journal_of(path), epoch)
}

/// Frames a reopen of the closed store at `path` would replay (once its writer has let
/// go of the file).
async fn pending_closed(path: &Path) -> usize {
    for _ in 0..400 {
        if let Ok(db) = redb::ReadOnlyDatabase::open(path) {
            let epoch = super::tables::recorded_epoch(&db);
            return super::journal::frames_to_replay(&journal_of(path), epoch);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the store file stayed locked");
}

pub(super) fn journal_of(path: &Path) -> std::path::PathBuf {
    let mut journal = path.as_os_str().to_owned();
    journal.push(".journal");
    journal.into()
}

/// Opens the store again once the previous one has let go of the file.
pub(super) async fn reopen(path: &Path, checkpoint_every: Duration) -> RedbStore {
    for _ in 0..100 {
        if let Ok(store) = RedbStore::open_checkpointing(path, checkpoint_every) {
            return store;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the store did not reopen");
}

fn push_config(task_id: &str) -> PushConfigRecord {
    config_named(task_id, "c1")
}

fn config_named(task_id: &str, config_id: &str) -> PushConfigRecord {
    crate::suite::push_config_record(task_id, config_id)
}

/// A fresh store in its own directory, holding task `task_id` at seq 1.
async fn store_with_task(task_id: &str) -> (tempfile::TempDir, RedbStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
    store
        .commit(crate::suite::new_commit(task_id, 0, 1))
        .await
        .unwrap();
    (dir, store)
}

#[tokio::test]
async fn running_tasks_answer_from_memory_and_stay_exact() {
    let (_dir, store) = store_with_task("t1").await;
    assert!(
        store.hot.read().records.contains_key("t1"),
        "a running task is cached"
    );
    // A stale writer is refused from the cached sequence, as from the file.
    assert!(matches!(
        store.commit(crate::suite::new_commit("t1", 0, 1)).await,
        Err(StoreError::Conflict { current_seq: 1, .. })
    ));
    store
        .commit(crate::suite::new_commit("t1", 1, 2))
        .await
        .unwrap();
    assert_eq!(store.get("t1").await.unwrap().unwrap().seq, 2);
    assert!(store.events_after("t1", 2, 10).await.unwrap().is_empty());
    let after_first = store.events_after("t1", 1, 10).await.unwrap();
    assert_eq!(after_first.iter().map(|e| e.seq).collect::<Vec<_>>(), [2]);
    assert!(store.list_push_configs("t1").await.unwrap().is_empty());
    assert!(
        !store.may_have_push_configs("t1"),
        "the dispatcher skips it"
    );
    store.put_push_config(push_config("t1")).await.unwrap();
    assert_eq!(store.list_push_configs("t1").await.unwrap().len(), 1);
    assert!(store.may_have_push_configs("t1"));
    assert!(store.delete("t1").await.unwrap());
    assert!(store.get("t1").await.unwrap().is_none());
    assert!(!store.hot.read().records.contains_key("t1"));
}

#[tokio::test]
async fn recent_events_answer_from_memory_without_a_gap() {
    let (_dir, store) = store_with_task("t1").await;
    let last = RECENT_EVENTS as u64 + 4;
    for seq in 2..=last {
        let commit = crate::suite::new_commit("t1", seq - 1, seq);
        store.commit(commit).await.unwrap();
    }
    assert_eq!(store.hot.read().events["t1"].len(), RECENT_EVENTS);
    let seqs = |events: Vec<StoredEvent>| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    // Older than what memory keeps: read from the file, whole and in order.
    let all = store.events_after("t1", 0, 100).await.unwrap();
    assert_eq!(seqs(all), (1..=last).collect::<Vec<_>>());
    let from_memory = store.hot.read().events_after("t1", last - 3, 2).unwrap();
    assert_eq!(seqs(from_memory), [last - 2, last - 1]);
    assert!(store.hot.read().events_after("t1", 1, 100).is_none());
    assert!(store.delete("t1").await.unwrap());
    assert!(!store.hot.read().events.contains_key("t1"));
    assert!(store.events_after("t1", 0, 100).await.unwrap().is_empty());
}

#[tokio::test]
async fn events_in_memory_are_bounded_over_all_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
    // One event per task: the first tasks' events leave memory, not their records.
    let tasks = RECENT_EVENTS_IN_ALL + 10;
    for i in 0..tasks {
        let commit = crate::suite::new_commit(&format!("t{i}"), 0, 1);
        store.commit(commit).await.unwrap();
    }
    {
        let hot = store.hot.read();
        assert_eq!(hot.events.len(), RECENT_EVENTS_IN_ALL);
        assert!(!hot.events.contains_key("t0") && hot.records.contains_key("t0"));
        assert!(hot.events_after("t0", 0, 10).is_none(), "not from memory");
        let last = format!("t{}", tasks - 1);
        assert_eq!(hot.events_after(&last, 0, 10).unwrap().len(), 1);
    }
    // A task with newer events keeps them when its older ones are dropped.
    store
        .commit(crate::suite::new_commit("t10", 1, 2))
        .await
        .unwrap();
    for i in tasks..tasks + 20 {
        let commit = crate::suite::new_commit(&format!("t{i}"), 0, 1);
        store.commit(commit).await.unwrap();
    }
    let recent = |id: &str| store.hot.read().events.get(id).map(|e| e.len());
    assert_eq!(recent("t10"), Some(1), "seq 1 dropped, seq 2 kept");
    let from_file = store.events_after("t0", 0, 10).await.unwrap();
    assert_eq!(from_file.iter().map(|e| e.seq).collect::<Vec<_>>(), [1]);
    assert!(store.hot.read().events_in_order.len() <= RECENT_EVENTS_IN_ALL);
}

#[tokio::test]
async fn cached_push_configs_follow_every_change() {
    let (_dir, store) = store_with_task("t1").await;
    let ids = |configs: Vec<PushConfigRecord>| {
        configs
            .into_iter()
            .map(|c| c.config.id.unwrap_or_default())
            .collect::<Vec<_>>()
    };
    store
        .put_push_config(config_named("t1", "c2"))
        .await
        .unwrap();
    store
        .put_push_config(config_named("t1", "c1"))
        .await
        .unwrap();
    assert_eq!(ids(store.hot.read().push["t1"].clone()), ["c1", "c2"]);
    assert_eq!(
        ids(store.list_push_configs("t1").await.unwrap()),
        ["c1", "c2"]
    );

    store.advance_push_cursor("t1", "c2", 7).await.unwrap();
    let c2 = store.get_push_config("t1", "c2").await.unwrap().unwrap();
    assert_eq!(c2.from_seq, 7, "a moved cursor is seen at once");

    assert!(store.delete_push_config("t1", "c1").await.unwrap());
    assert!(store.get_push_config("t1", "c1").await.unwrap().is_none());
    assert_eq!(ids(store.list_push_configs("t1").await.unwrap()), ["c2"]);

    store.delete_push_configs("t1").await.unwrap();
    assert!(store.list_push_configs("t1").await.unwrap().is_empty());
    assert!(!store.hot.read().push.contains_key("t1"));

    // A task not in memory is answered from the file, never from a stale copy.
    store
        .put_push_config(config_named("cold", "c1"))
        .await
        .unwrap();
    assert!(!store.hot.read().push.contains_key("cold"));
    assert_eq!(ids(store.list_push_configs("cold").await.unwrap()), ["c1"]);
}

#[tokio::test]
async fn a_committed_record_is_shared_with_the_cache_and_keeps_its_json() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
    let mut commit = crate::suite::new_commit("t1", 0, 1);
    std::sync::Arc::make_mut(&mut commit.record)
        .task
        .status
        .state = sb_protocol::TaskState::Completed;
    let mine = commit.record.clone();
    assert!(mine.task_json().is_none());
    store.commit(commit).await.unwrap();
    let json = mine.task_json().expect("the store wrote this very state");
    assert_eq!(&**json, serde_json::to_string(&mine.task).unwrap());
    let cached = store.hot.read().records.get("t1").cloned().unwrap();
    assert!(std::sync::Arc::ptr_eq(&cached, &mine), "shared, not copied");
    assert_eq!(store.get("t1").await.unwrap().unwrap(), *mine);
}

#[tokio::test]
async fn a_forgotten_task_is_freed_once_the_file_has_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
    let finished = |id: &str| {
        let mut commit = crate::suite::new_commit(id, 0, 1);
        std::sync::Arc::make_mut(&mut commit.record)
            .task
            .status
            .state = sb_protocol::TaskState::Completed;
        commit
    };
    let first = finished("first");
    let watched = std::sync::Arc::downgrade(&first.record);
    store.commit(first).await.unwrap();
    for i in 0..RECENTLY_FINISHED + 8 {
        store.commit(finished(&format!("t{i}"))).await.unwrap();
    }
    // The file catches up, and the cache forgets what is beyond its bound.
    store.checkpoint().await.unwrap();
    assert!(!store.hot.read().records.contains_key("first"));
    let mut waited = 0;
    while watched.upgrade().is_some() && waited < 500 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        waited += 1;
    }
    assert!(
        watched.upgrade().is_none(),
        "the forgotten record is never freed"
    );
    assert_eq!(store.get("first").await.unwrap().unwrap().task.id, "first");
}
