//! The fleet layer in Redis beyond the shared suite (which runs in `tests.rs`): where its
//! keys go, and that Redis itself drops what has expired.

use std::collections::BTreeMap;

use super::RedisStore;
use super::testing::TestRedis;
use crate::fleet::{FleetStore, now_ms};

async fn store(redis: &TestRedis, name: &str) -> (RedisStore, String) {
    let prefix = TestRedis::prefix(name);
    let store = RedisStore::connect(redis.url(), &prefix).await.unwrap();
    (store, prefix)
}

async fn key_type(redis: &TestRedis, key: &str) -> String {
    let reply = redis.command(&["TYPE", key]).await;
    ::redis::from_redis_value(reply).unwrap()
}

#[tokio::test]
async fn fleet_keys_live_under_the_prefix_one_per_primitive() {
    let redis = TestRedis::shared();
    let (store, prefix) = store(redis, "fleet-keys").await;
    let later = now_ms() + 3_600_000;
    store
        .add_counters("x", &[("n".to_owned(), 1)], later)
        .await
        .unwrap();
    store.set_put("x", "m", 2).await.unwrap();
    store.doc_put("x", "d", b"v".to_vec()).await.unwrap();
    assert!(store.claim("x", "holder", later).await.unwrap());
    let pattern = format!("{prefix}*");
    let reply = redis.command(&["KEYS", &pattern]).await;
    let mut keys: Vec<String> = ::redis::from_redis_value(reply).unwrap();
    keys.sort();
    let expected =
        ["fleet:c:x", "fleet:d:x", "fleet:k:x", "fleet:s:x"].map(|k| format!("{prefix}{k}"));
    assert_eq!(keys, expected);
    let types = [
        ("fleet:c:x", "hash"),
        ("fleet:d:x", "hash"),
        ("fleet:k:x", "string"),
        ("fleet:s:x", "zset"),
    ];
    for (key, kind) in types {
        assert_eq!(
            key_type(redis, &format!("{prefix}{key}")).await,
            kind,
            "{key}"
        );
    }
    let ttl = redis
        .command(&["PTTL", &format!("{prefix}fleet:c:x")])
        .await;
    let ttl: i64 = ::redis::from_redis_value(ttl).unwrap();
    assert!(ttl > 3_000_000, "the map expires when asked: {ttl} ms left");
}

#[tokio::test]
async fn counters_expiring_in_the_past_leave_no_key() {
    let redis = TestRedis::shared();
    let (store, prefix) = store(redis, "fleet-past").await;
    let later = now_ms() + 3_600_000;
    let one = [("n".to_owned(), 1)];
    store.add_counters("h", &one, later).await.unwrap();
    store.add_counters("h", &one, 0).await.unwrap();
    store.add_counters("never", &one, 0).await.unwrap();
    for key in ["h", "never"] {
        let exists = redis
            .command(&["EXISTS", &format!("{prefix}fleet:c:{key}")])
            .await;
        assert_eq!(
            ::redis::from_redis_value::<i64>(exists).unwrap(),
            0,
            "{key}"
        );
    }
    let maps = store.read_counters(&["h".to_owned()]).await.unwrap();
    assert_eq!(maps, [BTreeMap::new()]);
}

/// Scores are exact as far as a double is: any time in milliseconds, and negatives.
#[tokio::test]
async fn set_scores_come_back_exact() {
    let redis = TestRedis::shared();
    let (store, _) = store(redis, "fleet-scores").await;
    let scores = [-(1 << 53), -1, 0, 1_767_225_600_000, 1 << 53];
    for (n, score) in scores.iter().enumerate() {
        store.set_put("s", &format!("m{n}"), *score).await.unwrap();
    }
    let members = store.set_members("s").await.unwrap();
    let got: Vec<i64> = members.iter().map(|(_, s)| *s).collect();
    assert_eq!(got, scores);
}
