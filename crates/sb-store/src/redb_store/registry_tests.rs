//! The registry's records in the embedded store: kept across a close, replayed from the
//! journal after a crash, readable in a file from before they were stored, and journal
//! entries of before still read the same. (The shared suite runs in `tests.rs`.)

use std::path::Path;
use std::time::Duration;

use super::journal::{Entry, entries};
use super::tests::{journal_of, reopen};
use super::{RedbStore, registry, writer};
use crate::traits::{RegistryStore, TaskStore};

/// Set in the child process [`the_registry_is_replayed_from_the_journal_after_a_kill_9`]
/// starts.
const CRASH_DIR: &str = "SB_STORE_REGISTRY_CRASH_DIR";
/// What the child prints once every write of [`write_registry`] is acknowledged.
const WRITTEN: &str = "registry written";

const FIRST_KEY: &[u8] = &[1, 0, 0xff, 2];

/// Puts, replaces and removes agents and stores the signing key; what is left is
/// [`assert_registry`]'s.
async fn write_registry(store: &RedbStore) {
    store.put_agent("alpha", b"a1".to_vec()).await.unwrap();
    store.put_agent("beta", b"b1".to_vec()).await.unwrap();
    store.put_agent("gamma", vec![0, 0xff]).await.unwrap();
    assert!(store.remove_agent("beta").await.unwrap());
    store.put_agent("alpha", b"a2".to_vec()).await.unwrap();
    assert_eq!(
        store.signing_key(FIRST_KEY.to_vec()).await.unwrap(),
        FIRST_KEY
    );
    assert_eq!(store.signing_key(vec![7; 8]).await.unwrap(), FIRST_KEY);
}

async fn assert_registry(store: &RedbStore) {
    assert_eq!(
        store.list_agents().await.unwrap(),
        [
            ("alpha".to_owned(), b"a2".to_vec()),
            ("gamma".to_owned(), vec![0, 0xff]),
        ]
    );
    assert_eq!(
        store.signing_key(vec![9; 8]).await.unwrap(),
        FIRST_KEY,
        "the key stored before, not a new one"
    );
}

#[tokio::test]
async fn the_registry_survives_a_close_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        write_registry(&store).await;
    }
    let store = reopen(&path, writer::CHECKPOINT_EVERY).await;
    assert_registry(&store).await;
    // And it takes writes again.
    assert!(store.remove_agent("gamma").await.unwrap());
    assert_eq!(
        store.list_agents().await.unwrap(),
        [("alpha".to_owned(), b"a2".to_vec())]
    );
}

/// The child of [`the_registry_is_replayed_from_the_journal_after_a_kill_9`] (ignored on
/// its own): writes the registry with no checkpoint, says so, and waits to be killed.
#[tokio::test]
#[ignore = "run as a child process by the_registry_is_replayed_from_the_journal_after_a_kill_9"]
async fn registry_crash_child() {
    let dir = std::env::var(CRASH_DIR).expect("started by the crash test");
    let never = Duration::from_secs(24 * 3600);
    let store = RedbStore::open_checkpointing(&Path::new(&dir).join("s.redb"), never).unwrap();
    write_registry(&store).await;
    println!("{WRITTEN}");
    tokio::time::sleep(never).await;
}

/// A real crash after the registry's writes were acknowledged and before any checkpoint:
/// the reopen finds them, replayed from the journal.
#[tokio::test]
async fn the_registry_is_replayed_from_the_journal_after_a_kill_9() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "redb_store::registry_tests::registry_crash_child",
        ])
        .args(["--nocapture", "--test-threads=1"])
        .env(CRASH_DIR, dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let written = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        // With one test thread, libtest puts the test's name on the same line first.
        .any(|line| line.ends_with(WRITTEN));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(written, "the child wrote the registry");
    let path = dir.path().join("s.redb");
    // The child never checkpointed: its store file records the first epoch, 0.
    let frames = super::journal::frames_to_replay(&journal_of(&path), 0);
    assert!(
        frames > 0,
        "the kill came before a checkpoint: the journal holds the writes"
    );

    let store = RedbStore::open(&path).unwrap();
    assert_registry(&store).await;
}

/// A file written before the registry was stored has no registry tables: opening it
/// creates them, so it reads empty and takes the registry's writes.
#[tokio::test]
async fn a_file_from_before_the_registry_reads_empty_and_takes_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        let commit = crate::suite::new_commit("t1", 0, 1);
        store.commit(commit).await.unwrap();
    }
    // The writer thread holds the database until its queue closes.
    let db = loop {
        match redb::Database::open(&path) {
            Ok(db) => break db,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    registry::forget_registry_tables(&db);
    drop(db);
    let store = reopen(&path, writer::CHECKPOINT_EVERY).await;
    assert!(store.list_agents().await.unwrap().is_empty());
    assert_eq!(
        store.signing_key(FIRST_KEY.to_vec()).await.unwrap(),
        FIRST_KEY
    );
    store.put_agent("alpha", b"a1".to_vec()).await.unwrap();
    assert_eq!(
        store.list_agents().await.unwrap(),
        [("alpha".to_owned(), b"a1".to_vec())]
    );
    assert_eq!(store.get("t1").await.unwrap().unwrap().seq, 1, "tasks kept");
}

/// The registry's entries went at the end of the enum: an entry journaled before keeps
/// its number (postcard writes the variant's index first), and reads the same.
#[test]
fn journal_entries_of_before_the_registry_decode_the_same() {
    // `RemoveUnfinished { id: "t" }` as a journal written before the registry holds it.
    let old = [11, 1, b't'];
    assert_eq!(
        entries(&old).unwrap(),
        [Entry::RemoveUnfinished { id: "t" }]
    );
    let index = |entry: &Entry<'_>| postcard::to_allocvec(entry).unwrap()[0];
    assert_eq!(
        index(&Entry::PutAgent {
            name: "a",
            value: b"v"
        }),
        12
    );
    assert_eq!(index(&Entry::RemoveAgent { name: "a" }), 13);
    assert_eq!(
        index(&Entry::PutRegistryMeta {
            key: "k",
            value: b"v"
        }),
        14
    );
    let new = postcard::to_allocvec(&Entry::PutAgent {
        name: "a",
        value: &[0, 0xff],
    })
    .unwrap();
    assert_eq!(
        entries(&new).unwrap(),
        [Entry::PutAgent {
            name: "a",
            value: &[0, 0xff]
        }]
    );
}
