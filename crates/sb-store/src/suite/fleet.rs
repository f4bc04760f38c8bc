//! The [`FleetStore`] part of the conformance suite: counter maps that expire, scored
//! sets, documents with compare-and-set, and claims only one caller wins.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::fleet::{FleetStore, now_ms};

/// An expiry far enough ahead that no test outlives it.
fn later() -> u64 {
    now_ms() + 3_600_000
}

/// An expiry a test waits out with [`wait_out`] (Redis expires by the millisecond, but
/// a loaded machine may take a while between the write and the read).
fn soon() -> u64 {
    now_ms() + 300
}

/// Waits until what expired [`soon`] before this call has expired.
async fn wait_out() {
    tokio::time::sleep(Duration::from_millis(1_200)).await;
}

fn deltas(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(f, d)| ((*f).to_owned(), *d)).collect()
}

async fn add(store: &dyn FleetStore, key: &str, pairs: &[(&str, i64)], expires_at_ms: u64) {
    let deltas = deltas(pairs);
    store
        .add_counters(key, &deltas, expires_at_ms)
        .await
        .unwrap();
}

fn map(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(f, v)| ((*f).to_owned(), *v)).collect()
}

async fn read_one(store: &dyn FleetStore, key: &str) -> BTreeMap<String, i64> {
    let mut maps = store.read_counters(&[key.to_owned()]).await.unwrap();
    assert_eq!(maps.len(), 1, "one map per key");
    maps.remove(0)
}

/// Values that are not UTF-8 and hold a zero byte, so a backend that stores text, or
/// stops at the zero, fails.
fn doc(tag: u8) -> Vec<u8> {
    vec![tag, 0, 0xff, 0xfe, tag]
}

pub async fn counters_accumulate_across_calls(store: &dyn FleetStore) {
    add(store, "h", &[("ok", 1)], later()).await;
    add(store, "h", &[("ok", 2)], later()).await;
    add(store, "h", &[("ok", 4)], later()).await;
    assert_eq!(read_one(store, "h").await, map(&[("ok", 7)]));
}

pub async fn counters_take_several_fields_per_call(store: &dyn FleetStore) {
    let first = deltas(&[("ok", 1), ("failed", 2), ("slow", 3)]);
    store.add_counters("h", &first, later()).await.unwrap();
    let second = deltas(&[("failed", 10), ("timeout", 5)]);
    store.add_counters("h", &second, later()).await.unwrap();
    assert_eq!(
        read_one(store, "h").await,
        map(&[("failed", 12), ("ok", 1), ("slow", 3), ("timeout", 5)]),
        "every field of each call, the ones absent before starting at 0"
    );
}

pub async fn counters_take_negative_deltas(store: &dyn FleetStore) {
    let up = deltas(&[("inflight", 5), ("other", 1)]);
    store.add_counters("h", &up, later()).await.unwrap();
    let down = deltas(&[("inflight", -7), ("fresh", -3)]);
    store.add_counters("h", &down, later()).await.unwrap();
    assert_eq!(
        read_one(store, "h").await,
        map(&[("fresh", -3), ("inflight", -2), ("other", 1)])
    );
}

pub async fn counters_of_several_keys_come_in_order(store: &dyn FleetStore) {
    add(store, "b", &[("n", 2)], later()).await;
    add(store, "a", &[("n", 1)], later()).await;
    let keys = ["b", "absent", "a", "b"].map(str::to_owned);
    assert_eq!(
        store.read_counters(&keys).await.unwrap(),
        [
            map(&[("n", 2)]),
            map(&[]),
            map(&[("n", 1)]),
            map(&[("n", 2)])
        ],
        "the keys' order, an absent key empty"
    );
    assert!(store.read_counters(&[]).await.unwrap().is_empty());
}

pub async fn counters_expiring_in_the_past_read_empty(store: &dyn FleetStore) {
    let past = now_ms() - 1_000;
    add(store, "born-expired", &[("n", 1)], past).await;
    assert_eq!(read_one(store, "born-expired").await, map(&[]));
    // A live map moved into the past is gone too.
    add(store, "h", &[("n", 1)], later()).await;
    add(store, "h", &[("n", 1)], past).await;
    assert_eq!(read_one(store, "h").await, map(&[]));
    // And added to again, it starts from nothing.
    add(store, "h", &[("n", 5)], later()).await;
    assert_eq!(read_one(store, "h").await, map(&[("n", 5)]));
}

/// Maps expire when their time comes, with no write after them, unless a later call
/// moved their expiry.
pub async fn counters_expire_unless_a_later_call_moves_it(store: &dyn FleetStore) {
    let one = deltas(&[("n", 1)]);
    store.add_counters("expires", &one, soon()).await.unwrap();
    store.add_counters("moved", &one, soon()).await.unwrap();
    store.add_counters("moved", &one, later()).await.unwrap();
    wait_out().await;
    let keys = ["expires", "moved"].map(str::to_owned);
    assert_eq!(
        store.read_counters(&keys).await.unwrap(),
        [map(&[]), map(&[("n", 2)])]
    );
    store.add_counters("expires", &one, later()).await.unwrap();
    assert_eq!(
        read_one(store, "expires").await,
        map(&[("n", 1)]),
        "an expired map starts again from 0"
    );
}

pub async fn set_members_come_by_score_then_member(store: &dyn FleetStore) {
    assert!(store.set_members("inbox").await.unwrap().is_empty());
    for (member, score) in [("c", 20), ("a", 20), ("d", -5), ("b", 7), ("e", 20)] {
        store.set_put("inbox", member, score).await.unwrap();
    }
    store.set_put("other", "z", -100).await.unwrap();
    let expected = [("d", -5), ("b", 7), ("a", 20), ("c", 20), ("e", 20)];
    assert_eq!(
        store.set_members("inbox").await.unwrap(),
        expected.map(|(m, s)| (m.to_owned(), s)),
        "lowest score first, equal scores by member, no member of another set"
    );
}

pub async fn set_put_replaces_the_score(store: &dyn FleetStore) {
    store.set_put("s", "a", 1).await.unwrap();
    store.set_put("s", "b", 2).await.unwrap();
    store.set_put("s", "a", 3).await.unwrap();
    assert_eq!(
        store.set_members("s").await.unwrap(),
        [("b".to_owned(), 2), ("a".to_owned(), 3)],
        "one entry per member, with its last score"
    );
}

pub async fn set_remove_says_whether_present(store: &dyn FleetStore) {
    store.set_put("s", "a", 1).await.unwrap();
    store.set_put("s", "b", 2).await.unwrap();
    assert!(store.set_remove("s", "a").await.unwrap());
    assert!(!store.set_remove("s", "a").await.unwrap(), "already gone");
    assert!(!store.set_remove("s", "never").await.unwrap());
    assert!(!store.set_remove("no-such-set", "b").await.unwrap());
    assert_eq!(store.set_members("s").await.unwrap(), [("b".to_owned(), 2)]);
    assert!(store.set_remove("s", "b").await.unwrap());
    assert!(store.set_members("s").await.unwrap().is_empty());
}

pub async fn docs_are_put_got_listed_and_removed(store: &dyn FleetStore) {
    assert!(store.doc_list("c").await.unwrap().is_empty());
    assert_eq!(store.doc_get("c", "x").await.unwrap(), None);
    store.doc_put("c", "b", doc(1)).await.unwrap();
    store.doc_put("c", "a", doc(2)).await.unwrap();
    store.doc_put("c", "c", Vec::new()).await.unwrap();
    store.doc_put("other", "a", doc(9)).await.unwrap();
    store.doc_put("c", "b", doc(3)).await.unwrap();
    assert_eq!(
        store.doc_get("c", "b").await.unwrap(),
        Some(doc(3)),
        "put replaces"
    );
    assert_eq!(
        store.doc_get("c", "c").await.unwrap(),
        Some(Vec::new()),
        "an empty document is a document"
    );
    assert_eq!(
        store.doc_list("c").await.unwrap(),
        [
            ("a".to_owned(), doc(2)),
            ("b".to_owned(), doc(3)),
            ("c".to_owned(), Vec::new())
        ],
        "sorted by id, byte for byte, none of another collection"
    );
    assert!(store.doc_remove("c", "a").await.unwrap());
    assert!(!store.doc_remove("c", "a").await.unwrap(), "already gone");
    assert!(!store.doc_remove("none", "a").await.unwrap());
    assert_eq!(store.doc_get("c", "a").await.unwrap(), None);
    assert_eq!(store.doc_get("other", "a").await.unwrap(), Some(doc(9)));
    assert_eq!(store.doc_list("c").await.unwrap().len(), 2);
}

pub async fn doc_swap_creates_only_if_absent(store: &dyn FleetStore) {
    assert!(store.doc_swap("c", "d", None, Some(doc(1))).await.unwrap());
    assert!(
        !store.doc_swap("c", "d", None, Some(doc(2))).await.unwrap(),
        "a second create fails"
    );
    assert_eq!(store.doc_get("c", "d").await.unwrap(), Some(doc(1)));
}

pub async fn doc_swap_needs_the_stored_value(store: &dyn FleetStore) {
    store.doc_put("c", "d", doc(1)).await.unwrap();
    assert!(
        !store
            .doc_swap("c", "d", Some(&doc(7)), Some(doc(2)))
            .await
            .unwrap()
    );
    assert!(
        !store.doc_swap("c", "d", Some(&[]), None).await.unwrap(),
        "an empty expected value is not a wildcard"
    );
    assert!(
        !store
            .doc_swap("c", "absent", Some(&doc(1)), Some(doc(2)))
            .await
            .unwrap(),
        "an absent document is not the expected one"
    );
    assert_eq!(store.doc_get("c", "d").await.unwrap(), Some(doc(1)));
    assert_eq!(store.doc_get("c", "absent").await.unwrap(), None);
    assert!(
        store
            .doc_swap("c", "d", Some(&doc(1)), Some(doc(2)))
            .await
            .unwrap()
    );
    assert_eq!(store.doc_get("c", "d").await.unwrap(), Some(doc(2)));
}

pub async fn doc_swap_to_none_deletes(store: &dyn FleetStore) {
    store.doc_put("c", "d", doc(1)).await.unwrap();
    store.doc_put("c", "e", doc(2)).await.unwrap();
    assert!(store.doc_swap("c", "d", Some(&doc(1)), None).await.unwrap());
    assert_eq!(store.doc_get("c", "d").await.unwrap(), None);
    assert_eq!(
        store.doc_list("c").await.unwrap(),
        [("e".to_owned(), doc(2))]
    );
    assert!(
        !store.doc_swap("c", "d", Some(&doc(1)), None).await.unwrap(),
        "gone already"
    );
}

/// Replicas advancing one run together: exactly one moves it from what they all read.
pub async fn racing_doc_swaps_have_one_winner(store: Arc<dyn FleetStore>) {
    store.doc_put("runs", "r", doc(0)).await.unwrap();
    let racers = (1u8..=16).map(|n| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .doc_swap("runs", "r", Some(&doc(0)), Some(doc(n)))
                .await
        })
    });
    let mut winners = 0;
    for racer in racers {
        winners += usize::from(racer.await.unwrap().unwrap());
    }
    assert_eq!(winners, 1);
    assert_ne!(store.doc_get("runs", "r").await.unwrap(), Some(doc(0)));
}

pub async fn the_first_claim_wins_until_it_expires(store: &dyn FleetStore) {
    assert!(store.claim("fire", "replica-1", later()).await.unwrap());
    assert!(!store.claim("fire", "replica-2", later()).await.unwrap());
    assert!(
        !store.claim("fire", "replica-1", later()).await.unwrap(),
        "held: not even its holder claims it again"
    );
    assert!(
        store.claim("fire-2", "replica-2", later()).await.unwrap(),
        "another key is free"
    );
}

pub async fn an_expired_claim_can_be_taken_again(store: &dyn FleetStore) {
    assert!(store.claim("fire", "replica-1", soon()).await.unwrap());
    assert!(!store.claim("fire", "replica-2", later()).await.unwrap());
    wait_out().await;
    assert!(store.claim("fire", "replica-2", later()).await.unwrap());
    assert!(!store.claim("fire", "replica-1", later()).await.unwrap());
}

/// A claim whose expiry has passed already is won, and holds the key for no time.
pub async fn a_claim_expiring_in_the_past_leaves_the_key_free(store: &dyn FleetStore) {
    let past = now_ms() - 1_000;
    assert!(store.claim("fire", "replica-1", past).await.unwrap());
    assert!(store.claim("fire", "replica-2", later()).await.unwrap());
    assert!(!store.claim("fire", "replica-3", past).await.unwrap());
}

pub async fn concurrent_claims_have_one_winner(store: Arc<dyn FleetStore>) {
    let expires = later();
    let racers = (0..16).map(|n| {
        let store = store.clone();
        tokio::spawn(async move { store.claim("fire", &format!("replica-{n}"), expires).await })
    });
    let mut winners = 0;
    for racer in racers {
        winners += usize::from(racer.await.unwrap().unwrap());
    }
    assert_eq!(winners, 1);
}

/// One name used by every primitive is four things, not one.
pub async fn primitives_keep_their_names_apart(store: &dyn FleetStore) {
    add(store, "x", &[("n", 1)], later()).await;
    store.set_put("x", "n", 2).await.unwrap();
    store.doc_put("x", "n", doc(3)).await.unwrap();
    assert!(store.claim("x", "h", later()).await.unwrap());
    assert_eq!(read_one(store, "x").await, map(&[("n", 1)]));
    assert_eq!(store.set_members("x").await.unwrap(), [("n".to_owned(), 2)]);
    assert_eq!(
        store.doc_list("x").await.unwrap(),
        [("n".to_owned(), doc(3))]
    );
}

/// The tests above for one backend, inside [`crate::store_test_suite!`]'s module (which
/// defines `make`, the backend's constructor).
#[doc(hidden)]
#[macro_export]
macro_rules! fleet_test_suite {
    () => {
        mod fleet {
            use super::make;

            $crate::fleet_test_suite!(@each
                counters_accumulate_across_calls,
                counters_take_several_fields_per_call,
                counters_take_negative_deltas,
                counters_of_several_keys_come_in_order,
                counters_expiring_in_the_past_read_empty,
                counters_expire_unless_a_later_call_moves_it,
                set_members_come_by_score_then_member,
                set_put_replaces_the_score,
                set_remove_says_whether_present,
                docs_are_put_got_listed_and_removed,
                doc_swap_creates_only_if_absent,
                doc_swap_needs_the_stored_value,
                doc_swap_to_none_deletes,
                the_first_claim_wins_until_it_expires,
                an_expired_claim_can_be_taken_again,
                a_claim_expiring_in_the_past_leaves_the_key_free,
                primitives_keep_their_names_apart,
            );

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn racing_doc_swaps_have_one_winner() {
                $crate::suite::fleet::racing_doc_swaps_have_one_winner(std::sync::Arc::new(
                    make().await,
                ))
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn concurrent_claims_have_one_winner() {
                $crate::suite::fleet::concurrent_claims_have_one_winner(std::sync::Arc::new(
                    make().await,
                ))
                .await;
            }
        }
    };
    (@each $($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                $crate::suite::fleet::$name(&make().await).await;
            }
        )*
    };
}
