//! The fleet layer in the embedded store beyond the shared suite (which runs in
//! `tests.rs`): kept across a close, replayed from the journal after a crash, expired
//! entries reclaimed by later writes, and the journal's older entries unchanged.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use redb::{ReadableTableMetadata, TableDefinition};

use super::fleet_writes::RECLAIM_PER_WRITE;
use super::journal::{Entry, FleetEntry, entries};
use super::tests::{journal_of, reopen};
use super::{FLEET_CLAIMS, FLEET_COUNTERS, FLEET_EXPIRY, RedbStore, writer};
use crate::fleet::{FleetStore, now_ms};

/// Set in the child process [`fleet_values_are_replayed_from_the_journal_after_a_kill_9`]
/// starts.
const CRASH_DIR: &str = "SB_STORE_FLEET_CRASH_DIR";
/// What the child prints once every write of [`write_fleet`] is acknowledged.
const WRITTEN: &str = "fleet written";

fn later() -> u64 {
    now_ms() + 3_600_000
}

fn counters(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(f, d)| ((*f).to_owned(), *d)).collect()
}

/// Writes, replaces and removes some of each primitive; what is left is
/// [`assert_fleet`]'s.
async fn write_fleet(store: &RedbStore) {
    let expires = later();
    store
        .add_counters("h", &counters(&[("ok", 1), ("failed", 2)]), expires)
        .await
        .unwrap();
    store
        .add_counters("h", &counters(&[("ok", 3)]), expires)
        .await
        .unwrap();
    store
        .add_counters("gone", &counters(&[("ok", 1)]), expires)
        .await
        .unwrap();
    store
        .add_counters("gone", &counters(&[("ok", 1)]), 1)
        .await
        .unwrap();
    store.set_put("inbox", "b", 2).await.unwrap();
    store.set_put("inbox", "a", 9).await.unwrap();
    store.set_put("inbox", "c", 1).await.unwrap();
    store.set_put("inbox", "a", 1).await.unwrap();
    assert!(store.set_remove("inbox", "c").await.unwrap());
    store.doc_put("runs", "r1", vec![0, 0xff]).await.unwrap();
    store.doc_put("runs", "r2", b"x".to_vec()).await.unwrap();
    assert!(
        store
            .doc_swap("runs", "r3", None, Some(b"new".to_vec()))
            .await
            .unwrap()
    );
    assert!(
        store
            .doc_swap("runs", "r2", Some(b"x"), None)
            .await
            .unwrap()
    );
    assert!(store.claim("fire", "replica-1", expires).await.unwrap());
}

async fn assert_fleet(store: &RedbStore) {
    let keys = ["h", "gone"].map(str::to_owned);
    let expected: BTreeMap<String, i64> =
        counters(&[("failed", 2), ("ok", 4)]).into_iter().collect();
    assert_eq!(
        store.read_counters(&keys).await.unwrap(),
        [expected, BTreeMap::new()]
    );
    assert_eq!(
        store.set_members("inbox").await.unwrap(),
        [("a".to_owned(), 1), ("b".to_owned(), 2)]
    );
    assert_eq!(
        store.doc_list("runs").await.unwrap(),
        [
            ("r1".to_owned(), vec![0, 0xff]),
            ("r3".to_owned(), b"new".to_vec())
        ]
    );
    assert!(
        !store.claim("fire", "replica-2", later()).await.unwrap(),
        "the claim is still held"
    );
}

#[tokio::test]
async fn fleet_values_survive_a_close_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.redb");
    {
        let store = RedbStore::open(&path).unwrap();
        write_fleet(&store).await;
    }
    let store = reopen(&path, writer::CHECKPOINT_EVERY).await;
    assert_fleet(&store).await;
    // And it takes writes again.
    store
        .add_counters("h", &counters(&[("ok", 1)]), later())
        .await
        .unwrap();
    assert_eq!(
        store.read_counters(&["h".to_owned()]).await.unwrap()[0]["ok"],
        5
    );
}

/// The child of [`fleet_values_are_replayed_from_the_journal_after_a_kill_9`] (ignored
/// on its own): writes the fleet's values with no checkpoint, says so, and waits to be
/// killed.
#[tokio::test]
#[ignore = "run as a child process by fleet_values_are_replayed_from_the_journal_after_a_kill_9"]
async fn fleet_crash_child() {
    let dir = std::env::var(CRASH_DIR).expect("started by the crash test");
    let never = Duration::from_secs(24 * 3600);
    let store = RedbStore::open_checkpointing(&Path::new(&dir).join("s.redb"), never).unwrap();
    write_fleet(&store).await;
    println!("{WRITTEN}");
    tokio::time::sleep(never).await;
}

/// A real crash after the fleet's writes were acknowledged and before any checkpoint:
/// the reopen finds them, replayed from the journal.
#[tokio::test]
async fn fleet_values_are_replayed_from_the_journal_after_a_kill_9() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "redb_store::fleet_tests::fleet_crash_child",
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
        .any(|line| line.ends_with(WRITTEN));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(written, "the child wrote the fleet's values");
    let path = dir.path().join("s.redb");
    let frames = super::journal::frames_to_replay(&journal_of(&path), 0);
    assert!(
        frames > 0,
        "the kill came before a checkpoint: the journal holds the writes"
    );

    let store = RedbStore::open(&path).unwrap();
    assert_fleet(&store).await;
}

/// How many rows `table` has.
async fn rows<K: redb::Key + Send + 'static, V: redb::Value + Send + 'static>(
    store: &RedbStore,
    table: TableDefinition<'static, K, V>,
) -> u64 {
    let count = store.read(move |txn| {
        let table = txn.open_table(table).map_err(crate::StoreError::backend)?;
        table.len().map_err(crate::StoreError::backend)
    });
    count.await.unwrap()
}

/// Expired counter maps and claims leave the file as later writes go by, a bounded
/// number per write, with no read needed.
#[tokio::test]
async fn expired_fleet_entries_are_reclaimed_by_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("s.redb")).unwrap();
    // Far enough ahead that none expires while they are written.
    let soon = now_ms() + 1_500;
    let one = counters(&[("n", 1)]);
    for n in 0..20 {
        store
            .add_counters(&format!("h{n}"), &one, soon)
            .await
            .unwrap();
    }
    for n in 0..5 {
        assert!(store.claim(&format!("k{n}"), "h", soon).await.unwrap());
    }
    store.add_counters("live", &one, later()).await.unwrap();
    assert_eq!(rows(&store, FLEET_EXPIRY).await, 26);
    tokio::time::sleep(Duration::from_millis(soon + 100 - now_ms())).await;
    assert_eq!(
        rows(&store, FLEET_COUNTERS).await,
        21,
        "nothing reclaimed without a write"
    );

    store.add_counters("live", &one, later()).await.unwrap();
    let left = 25 - RECLAIM_PER_WRITE as u64;
    assert_eq!(rows(&store, FLEET_EXPIRY).await, left + 1);
    let counted = rows(&store, FLEET_COUNTERS).await + rows(&store, FLEET_CLAIMS).await;
    assert_eq!(counted, left + 1, "each with its index entry");

    // A claim reclaims too: the rest, claims included.
    assert!(store.claim("k-new", "h", later()).await.unwrap());
    assert_eq!(rows(&store, FLEET_EXPIRY).await, 2);
    assert_eq!(rows(&store, FLEET_COUNTERS).await, 1);
    assert_eq!(rows(&store, FLEET_CLAIMS).await, 1);
    assert_eq!(
        store.read_counters(&["live".to_owned()]).await.unwrap()[0]["n"],
        2
    );
}

/// The fleet's entries went at the end of the enum, in one variant: every entry
/// journaled before keeps its number (postcard writes the variant's index first).
#[test]
fn journal_entries_of_before_the_fleet_decode_the_same() {
    let index = |entry: &Entry<'_>| postcard::to_allocvec(entry).unwrap()[0];
    let meta = Entry::PutRegistryMeta {
        key: "k",
        value: b"v",
    };
    assert_eq!(index(&meta), 14, "the last entry of before");
    let claim = Entry::Fleet(FleetEntry::PutClaim {
        key: "k",
        holder: "h",
        expires_at_ms: 7,
    });
    assert_eq!(index(&claim), 15);
    let bytes = postcard::to_allocvec(&claim).unwrap();
    assert_eq!(entries(&bytes).unwrap(), [claim]);
}
