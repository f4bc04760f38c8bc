//! [`EventBus`] over Redis: pub/sub for one task's events and for turn signals
//! (`pubsub.rs`), consumer groups on the global stream for every task's events
//! (`group.rs`).

use std::fmt;
use std::sync::Arc;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};
use async_trait::async_trait;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use super::group::{ClaimTiming, Groups};
use super::pubsub::PubSub;
use super::{CONNECT_TIMEOUT, Keys, RESPONSE_TIMEOUT, backend_error, open_client, probe};
use crate::record::{EventNotice, StoredEvent};
use crate::traits::{EventBus, StoreError, StoreResult};

/// The Redis event bus. Cheap to clone; the background tasks stop when the last clone is
/// dropped or on [`RedisBus::shutdown`].
#[derive(Clone)]
pub struct RedisBus {
    inner: Arc<BusInner>,
}

struct BusInner {
    pubsub: Arc<PubSub>,
    groups: Arc<Groups>,
    /// For PUBLISH and XGROUP CREATE.
    commands: ConnectionManager,
    keys: Keys,
    place: String,
    shutdown: CancellationToken,
}

impl Drop for BusInner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBus")
            .field("place", &self.inner.place)
            .field("prefix", &self.inner.keys.prefix)
            .field("consumer", &self.inner.groups.consumer())
            .finish_non_exhaustive()
    }
}

impl RedisBus {
    /// Connects to `url` (see [`super::RedisStore::connect`]) with the same `prefix` as the
    /// store whose commits it should carry. Opens the pub/sub connection now, so a bad URL
    /// or an unreachable server shows at startup.
    pub async fn connect(url: &str, prefix: &str) -> StoreResult<RedisBus> {
        RedisBus::connect_with(url, prefix, ClaimTiming::default()).await
    }

    pub(super) async fn connect_with(
        url: &str,
        prefix: &str,
        timing: ClaimTiming,
    ) -> StoreResult<RedisBus> {
        let (client, place) = open_client(url)?;
        let keys = Keys {
            prefix: prefix.to_owned(),
        };
        probe(&client, &place).await?;
        let shutdown = CancellationToken::new();
        let pubsub =
            PubSub::connect(client.clone(), keys.clone(), place.clone(), &shutdown).await?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(RESPONSE_TIMEOUT));
        // Lazy: the probe has just shown the server is reachable.
        let commands = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|e| backend_error(&place, "connect", &e))?;
        let groups = Groups::new(
            client,
            keys.clone(),
            place.clone(),
            commands.clone(),
            shutdown.clone(),
            timing,
        );
        Ok(RedisBus {
            inner: Arc::new(BusInner {
                pubsub,
                groups,
                commands,
                keys,
                place,
                shutdown,
            }),
        })
    }

    /// Stops the background tasks and closes every receiver (also done on drop).
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    fn check_running(&self) -> StoreResult<()> {
        if self.inner.shutdown.is_cancelled() {
            return Err(StoreError::Backend(
                "the Redis event bus was shut down".into(),
            ));
        }
        Ok(())
    }
}

#[async_trait]
impl EventBus for RedisBus {
    /// Nothing to do: the commit script publishes in the same step as the write, so an
    /// event is announced exactly when it is durable, whichever replica committed it.
    fn publish(&self, _event: &StoredEvent) {}

    /// When the pub/sub connection breaks, the receiver sees `RecvError::Closed` (events
    /// published meanwhile are lost to pub/sub): subscribe again and re-read the log.
    async fn subscribe(&self, task_id: &str) -> StoreResult<broadcast::Receiver<StoredEvent>> {
        self.check_running()?;
        self.inner.pubsub.events(task_id).await
    }

    async fn subscribe_all(&self, group: &str) -> StoreResult<broadcast::Receiver<EventNotice>> {
        self.check_running()?;
        self.inner.groups.subscribe(group).await
    }

    async fn announce_turn_over(&self, turn_key: &str) -> StoreResult<()> {
        self.check_running()?;
        ::redis::cmd("PUBLISH")
            .arg(self.inner.keys.turns_channel())
            .arg(turn_key)
            .query_async::<i64>(&mut self.inner.commands.clone())
            .await
            .map(drop)
            .map_err(|e| backend_error(&self.inner.place, "announce a turn's end", &e))
    }

    /// When the pub/sub connection breaks before the announcement, the receiver fails
    /// (its sender is dropped): the waiter cannot know, and should check the task.
    async fn watch_turn(&self, turn_key: &str) -> StoreResult<oneshot::Receiver<()>> {
        self.check_running()?;
        let channel = self.inner.keys.turns_channel();
        self.inner.pubsub.signal(channel, turn_key).await
    }

    /// Published by the commit script with the write that ends the task.
    async fn watch_end(&self, task_id: &str) -> StoreResult<oneshot::Receiver<()>> {
        self.check_running()?;
        let channel = self.inner.keys.ended_channel();
        self.inner.pubsub.signal(channel, task_id).await
    }
}
