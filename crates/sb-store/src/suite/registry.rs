//! The [`RegistryStore`] part of the conformance suite: agents by name, the signing key
//! stored once, and the watchers told of every change.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use crate::traits::RegistryStore;

/// How long a watcher may wait for a name (Redis delivers it through pub/sub).
const WAIT: Duration = Duration::from_secs(10);

/// Values that are not UTF-8 (and hold a zero byte), so a backend that stores them as
/// text, or stops at the zero, fails.
fn value(tag: u8) -> Vec<u8> {
    vec![b'{', tag, 0, 0xff, 0xfe, b'}']
}

fn entry(name: &str, tag: u8) -> (String, Vec<u8>) {
    (name.to_owned(), value(tag))
}

/// The next name a watcher is told, failing the test after 10 s.
pub async fn next_name(rx: &mut broadcast::Receiver<String>) -> String {
    match tokio::time::timeout(WAIT, rx.recv()).await {
        Ok(Ok(name)) => name,
        Ok(Err(e)) => panic!("the watcher failed: {e}"),
        Err(_) => panic!("no name within {WAIT:?}"),
    }
}

pub async fn agents_are_put_replaced_listed_and_removed(store: &dyn RegistryStore) {
    assert!(store.list_agents().await.unwrap().is_empty(), "a new store");
    store.put_agent("beta", value(1)).await.unwrap();
    store.put_agent("alpha", value(2)).await.unwrap();
    store.put_agent("gamma", value(3)).await.unwrap();
    assert_eq!(
        store.list_agents().await.unwrap(),
        [entry("alpha", 2), entry("beta", 1), entry("gamma", 3)],
        "sorted by name, values byte for byte"
    );
    store.put_agent("beta", value(4)).await.unwrap();
    assert_eq!(
        store.list_agents().await.unwrap(),
        [entry("alpha", 2), entry("beta", 4), entry("gamma", 3)],
        "a put replaces"
    );
    assert!(store.remove_agent("beta").await.unwrap());
    assert!(!store.remove_agent("beta").await.unwrap(), "already gone");
    assert!(!store.remove_agent("never").await.unwrap());
    assert_eq!(
        store.list_agents().await.unwrap(),
        [entry("alpha", 2), entry("gamma", 3)]
    );
    // A name put again after its removal is there again.
    store.put_agent("beta", value(5)).await.unwrap();
    assert_eq!(
        store.list_agents().await.unwrap(),
        [entry("alpha", 2), entry("beta", 5), entry("gamma", 3)]
    );
}

pub async fn the_signing_key_is_stored_once(store: &dyn RegistryStore) {
    let first = vec![0, 1, 2, 0xff, 0];
    assert_eq!(store.signing_key(first.clone()).await.unwrap(), first);
    assert_eq!(
        store.signing_key(vec![9, 9, 9]).await.unwrap(),
        first,
        "the key stored first, not the one generated now"
    );
    assert_eq!(store.signing_key(Vec::new()).await.unwrap(), first);
    // Agents do not touch the key, nor the key the agents.
    store.put_agent("a", value(1)).await.unwrap();
    assert_eq!(store.signing_key(vec![7]).await.unwrap(), first);
    assert_eq!(store.list_agents().await.unwrap(), [entry("a", 1)]);
}

/// Replicas starting together: each generates its own key, all end up with one.
pub async fn racing_first_starts_agree_on_one_key(store: Arc<dyn RegistryStore>) {
    let racers = (0u8..8).map(|n| {
        let store = store.clone();
        tokio::spawn(async move { store.signing_key(vec![n; 32]).await })
    });
    let mut keys = Vec::new();
    for racer in racers {
        keys.push(racer.await.unwrap().unwrap());
    }
    let winner = keys[0].clone();
    assert!(
        keys.iter().all(|k| *k == winner),
        "every racer got the same key: {keys:?}"
    );
    assert!(
        (0u8..8).any(|n| winner == vec![n; 32]),
        "one of the generated keys: {winner:?}"
    );
    assert_eq!(store.signing_key(vec![42; 32]).await.unwrap(), winner);
}

pub async fn watchers_are_told_every_put_and_removal(store: &dyn RegistryStore) {
    let mut first = store.watch_agents().await.unwrap();
    let mut second = store.watch_agents().await.unwrap();
    store.put_agent("alpha", value(1)).await.unwrap();
    store.put_agent("beta", value(2)).await.unwrap();
    store.put_agent("alpha", value(3)).await.unwrap();
    assert!(store.remove_agent("beta").await.unwrap());
    for rx in [&mut first, &mut second] {
        let mut names = Vec::new();
        for _ in 0..4 {
            names.push(next_name(rx).await);
        }
        assert_eq!(names, ["alpha", "beta", "alpha", "beta"], "in order");
    }
    // A watcher hears of changes from when it started, not before.
    let mut late = store.watch_agents().await.unwrap();
    drop(first);
    store.put_agent("gamma", value(4)).await.unwrap();
    assert_eq!(next_name(&mut late).await, "gamma");
    assert_eq!(next_name(&mut second).await, "gamma");
    // Nothing else: the signing key is no agent.
    store.signing_key(vec![1]).await.unwrap();
    store.put_agent("delta", value(5)).await.unwrap();
    assert_eq!(next_name(&mut late).await, "delta");
}

/// The tests above for one backend, inside [`crate::store_test_suite!`]'s module (which
/// defines `make`, the backend's constructor).
#[doc(hidden)]
#[macro_export]
macro_rules! registry_test_suite {
    () => {
        #[tokio::test]
        async fn registry_agents_are_put_replaced_listed_and_removed() {
            $crate::suite::registry::agents_are_put_replaced_listed_and_removed(&make().await)
                .await;
        }

        #[tokio::test]
        async fn registry_signing_key_is_stored_once() {
            $crate::suite::registry::the_signing_key_is_stored_once(&make().await).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn registry_racing_first_starts_agree_on_one_key() {
            $crate::suite::registry::racing_first_starts_agree_on_one_key(std::sync::Arc::new(
                make().await,
            ))
            .await;
        }

        #[tokio::test]
        async fn registry_watchers_are_told_every_put_and_removal() {
            $crate::suite::registry::watchers_are_told_every_put_and_removal(&make().await).await;
        }
    };
}
