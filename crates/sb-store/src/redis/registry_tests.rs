#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The registry in Redis, against a real redis-server: replicas sharing it see each
//! other's changes, the keys are the documented ones, and a watcher is told to reload
//! after its connection breaks. (The shared suite runs in `tests.rs`.)

use std::time::Duration;

use tokio::sync::broadcast::error::TryRecvError;

use super::RedisStore;
use super::testing::TestRedis;
use crate::suite::registry::next_name;
use crate::traits::RegistryStore;

async fn get_bytes(redis: &TestRedis, args: &[&str]) -> Option<Vec<u8>> {
    ::redis::from_redis_value(redis.command(args).await).unwrap()
}

#[tokio::test]
async fn two_replicas_see_each_others_changes() {
    let redis = TestRedis::shared();
    let prefix = TestRedis::prefix("registry-pair");
    let here = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let there = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let elsewhere = RedisStore::connect(redis.url(), &TestRedis::prefix("registry-other"))
        .await
        .unwrap();
    let mut watched_there = there.watch_agents().await.unwrap();
    let mut watched_here = here.watch_agents().await.unwrap();
    let mut watched_elsewhere = elsewhere.watch_agents().await.unwrap();

    here.put_agent("alpha", vec![1, 0, 0xff]).await.unwrap();
    assert_eq!(
        next_name(&mut watched_there).await,
        "alpha",
        "the other replica"
    );
    assert_eq!(next_name(&mut watched_here).await, "alpha", "this one too");
    assert_eq!(
        there.list_agents().await.unwrap(),
        [("alpha".to_owned(), vec![1, 0, 0xff])]
    );
    assert!(there.remove_agent("alpha").await.unwrap());
    assert_eq!(next_name(&mut watched_here).await, "alpha");
    assert_eq!(next_name(&mut watched_there).await, "alpha");
    assert!(!here.remove_agent("alpha").await.unwrap(), "removed there");
    assert!(here.list_agents().await.unwrap().is_empty());

    assert_eq!(here.signing_key(b"first".to_vec()).await.unwrap(), b"first");
    assert_eq!(
        there.signing_key(b"second".to_vec()).await.unwrap(),
        b"first",
        "the key the first replica stored"
    );

    // Another prefix is another registry.
    assert!(elsewhere.list_agents().await.unwrap().is_empty());
    assert_eq!(
        elsewhere.signing_key(b"own".to_vec()).await.unwrap(),
        b"own"
    );
    assert!(matches!(
        watched_elsewhere.try_recv(),
        Err(TryRecvError::Empty)
    ));
}

#[tokio::test]
async fn the_registry_is_kept_under_the_documented_keys() {
    let redis = TestRedis::shared();
    let prefix = TestRedis::prefix("registry-keys");
    let store = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    let agents = format!("{prefix}registry:agents");
    let key = format!("{prefix}registry:signing-key");
    let channel = format!("{prefix}registry:changes");
    let _watching = store.watch_agents().await.unwrap();
    let numsub = redis.command(&["PUBSUB", "NUMSUB", &channel]).await;
    let (_, subscribers): (String, i64) = ::redis::from_redis_value(numsub).unwrap();
    assert_eq!(subscribers, 1, "one subscription, on the changes channel");

    store
        .put_agent("alpha", b"{\"a\":1}".to_vec())
        .await
        .unwrap();
    assert_eq!(
        get_bytes(redis, &["HGET", &agents, "alpha"]).await,
        Some(b"{\"a\":1}".to_vec())
    );
    store.signing_key(vec![0, 0xff]).await.unwrap();
    assert_eq!(get_bytes(redis, &["GET", &key]).await, Some(vec![0, 0xff]));
    assert!(store.remove_agent("alpha").await.unwrap());
    assert_eq!(get_bytes(redis, &["HGET", &agents, "alpha"]).await, None);
}

#[tokio::test]
async fn a_watcher_is_told_to_reload_after_its_connection_is_killed() {
    // Private: CLIENT KILL would hit every test's pub/sub connection on a shared server.
    let redis = TestRedis::spawn();
    let store = RedisStore::connect(redis.url(), "p:").await.unwrap();
    let other = RedisStore::connect(redis.url(), "p:").await.unwrap();
    let mut watcher = store.watch_agents().await.unwrap();
    redis.command(&["CLIENT", "KILL", "TYPE", "pubsub"]).await;
    assert_eq!(next_name(&mut watcher).await, "", "reload everything");
    // Subscribed again: changes reach the same receiver.
    other.put_agent("alpha", b"a".to_vec()).await.unwrap();
    assert_eq!(next_name(&mut watcher).await, "alpha");
}

#[tokio::test]
async fn a_watcher_comes_back_once_redis_is_back() {
    let mut redis = TestRedis::spawn();
    let store = RedisStore::connect(redis.url(), "p:").await.unwrap();
    let mut watcher = store.watch_agents().await.unwrap();
    redis.stop();
    // Down long enough for a few failed attempts.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(matches!(watcher.try_recv(), Err(TryRecvError::Empty)));
    redis.resume();
    assert_eq!(next_name(&mut watcher).await, "", "reload everything");
    // The store's command connection may fail once while it reconnects.
    let mut put = false;
    for _ in 0..50 {
        if store.put_agent("alpha", b"a".to_vec()).await.is_ok() {
            put = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(put, "the store reconnected");
    assert_eq!(next_name(&mut watcher).await, "alpha");
}
