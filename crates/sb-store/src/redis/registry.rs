//! [`RegistryStore`] over Redis: agents in one hash, the signing key set once by a
//! script, and each change published by name (see the key list in `mod.rs`).
//!
//! Watching uses a pub/sub connection of the store's own ([`PubSub`]), opened by the
//! first `watch_agents` and kept subscribed by one task ([`forward`]) that hands every
//! name to the local receivers. Pub/sub loses what is published while its connection is
//! down, so after subscribing again that task sends `""`: reload everything.

use std::collections::BTreeMap;
use std::sync::Arc;

use ::redis::Client;
use async_trait::async_trait;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use super::pubsub::PubSub;
use super::{Keys, RedisStore, scripts};
use crate::traits::{AGENT_CHANGES_CAPACITY, RegistryStore, StoreResult};

/// What the store's clones share for watching the registry. The forwarding task stops
/// when the last clone is dropped.
pub(super) struct RegistryWatch {
    client: Client,
    /// Every name heard on `P registry:changes`, and `""` after a break.
    local: broadcast::Sender<String>,
    /// Set once the subscription is in place and its forwarding task runs.
    started: tokio::sync::OnceCell<()>,
    stop: CancellationToken,
}

impl RegistryWatch {
    pub(super) fn new(client: Client) -> RegistryWatch {
        RegistryWatch {
            client,
            local: broadcast::channel(AGENT_CHANGES_CAPACITY).0,
            started: tokio::sync::OnceCell::new(),
            stop: CancellationToken::new(),
        }
    }

    /// Opens the pub/sub connection, subscribes, and starts [`forward`]; returns once
    /// Redis has confirmed the subscription.
    async fn start(&self, keys: &Keys, place: &str) -> StoreResult<()> {
        // A failed start leaves nothing running (the connection's reader, its sweeper).
        let stop = self.stop.child_token();
        let started = async {
            let pubsub =
                PubSub::connect(self.client.clone(), keys.clone(), place.to_owned(), &stop).await?;
            let channel = keys.registry_changes();
            let upstream = pubsub.names(channel.clone()).await?;
            Ok((pubsub, channel, upstream))
        };
        match started.await {
            Ok((pubsub, channel, upstream)) => {
                let local = self.local.clone();
                tokio::spawn(forward(pubsub, channel, upstream, local, stop));
                Ok(())
            }
            Err(e) => {
                stop.cancel();
                Err(e)
            }
        }
    }
}

impl Drop for RegistryWatch {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Hands every name from `upstream` to `local`; when the connection breaks, subscribes
/// again (pausing between attempts as the connection's backoff says) and sends `""`.
async fn forward(
    pubsub: Arc<PubSub>,
    channel: String,
    mut upstream: broadcast::Receiver<String>,
    local: broadcast::Sender<String>,
    stop: CancellationToken,
) {
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return,
            next = upstream.recv() => next,
        };
        // No local receiver is fine: nobody watches right now.
        match next {
            Ok(name) => drop(local.send(name)),
            Err(RecvError::Lagged(_)) => drop(local.send(String::new())),
            Err(RecvError::Closed) => {
                upstream = tokio::select! {
                    () = stop.cancelled() => return,
                    upstream = resubscribe(&pubsub, &channel) => upstream,
                };
                // Whatever was published while the connection was down is gone.
                drop(local.send(String::new()));
            }
        }
    }
}

/// Subscribes `channel` again, however long it takes.
async fn resubscribe(pubsub: &PubSub, channel: &str) -> broadcast::Receiver<String> {
    loop {
        match pubsub.names(channel.to_owned()).await {
            Ok(upstream) => return upstream,
            Err(e) => {
                let pause = pubsub.until_retry().await;
                tracing::warn!(error = %e, retry_in = ?pause, "cannot watch the agent registry in redis");
                tokio::time::sleep(pause).await;
            }
        }
    }
}

#[async_trait]
impl RegistryStore for RedisStore {
    async fn list_agents(&self) -> StoreResult<Vec<(String, Vec<u8>)>> {
        let mut cmd = ::redis::cmd("HGETALL");
        cmd.arg(self.keys.registry_agents());
        // A BTreeMap: sorted by name, as the trait says.
        let agents: BTreeMap<String, Vec<u8>> = self.read(&cmd, "list agents").await?;
        Ok(agents.into_iter().collect())
    }

    async fn put_agent(&self, name: &str, value: Vec<u8>) -> StoreResult<()> {
        // One MULTI: no put without its announcement, even if we die in between.
        let mut pipe = ::redis::pipe();
        pipe.atomic()
            .cmd("HSET")
            .arg(self.keys.registry_agents())
            .arg(name)
            .arg(value)
            .ignore()
            .cmd("PUBLISH")
            .arg(self.keys.registry_changes())
            .arg(name)
            .ignore();
        match pipe.query_async::<()>(&mut self.conn()).await {
            // The connection dropped (Redis restarted): sending it again is safe, a put
            // leaves the same state however often it runs.
            Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                pipe.query_async::<()>(&mut self.conn()).await
            }
            other => other,
        }
        .map_err(self.err("store an agent"))
    }

    async fn remove_agent(&self, name: &str) -> StoreResult<bool> {
        let mut pipe = ::redis::pipe();
        pipe.atomic()
            .cmd("HDEL")
            .arg(self.keys.registry_agents())
            .arg(name)
            .cmd("PUBLISH")
            .arg(self.keys.registry_changes())
            .arg(name)
            .ignore();
        // Not sent again on a dropped connection: a second run would report the agent
        // as absent after the first removed it.
        let (removed,): (i64,) = pipe
            .query_async(&mut self.conn())
            .await
            .map_err(self.err("remove an agent"))?;
        Ok(removed > 0)
    }

    async fn signing_key(&self, generated: Vec<u8>) -> StoreResult<Vec<u8>> {
        let mut invocation = scripts::SIGNING_KEY.prepare_invoke();
        invocation
            .key(self.keys.registry_signing_key())
            .arg(generated);
        // Safe to send again: a second run returns the key the first stored.
        match invocation.invoke_async(&mut self.conn()).await {
            Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                invocation.invoke_async(&mut self.conn()).await
            }
            other => other,
        }
        .map_err(self.err("read the signing key"))
    }

    async fn watch_agents(&self) -> StoreResult<broadcast::Receiver<String>> {
        // Before the subscription is confirmed: a name published after this returns
        // reaches this receiver.
        let receiver = self.registry.local.subscribe();
        self.registry
            .started
            .get_or_try_init(|| self.registry.start(&self.keys, &self.place))
            .await?;
        Ok(receiver)
    }
}
