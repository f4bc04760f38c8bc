//! The pub/sub side of the bus: one dedicated connection per bus, one SUBSCRIBE per
//! channel however many local watchers, and local fan-out (a broadcast channel per watched
//! task; one-shot watchers by key on the two signal channels, turns over and tasks
//! ended, each subscribed once and kept: a SUBSCRIBE per awaited turn would be two more
//! round trips per task, taken one at a time under the control lock).
//!
//! When the connection breaks, every local sender is dropped: event receivers see
//! `RecvError::Closed`, which the fan-out treats as "subscribe again and re-read the log",
//! and the next subscription opens a new connection. Nothing is resubscribed behind the
//! watchers' backs, because what was published while the connection was down is gone from
//! pub/sub and only a re-read of the log finds it.
//!
//! A caller that must stay subscribed through breaks (the registry's watcher) subscribes
//! again itself, pausing as [`PubSub::until_retry`] says, and treats the break as "changes
//! may have been missed".
//!
//! Its parts: `pubsub/connection.rs`, the dedicated connection, its reader and its
//! reconnects; `pubsub/routes.rs`, the routes by channel that the reader hands messages
//! to, and the sweep that unsubscribes channels nobody watches any more.

mod connection;
mod routes;

use std::sync::Arc;

use ::redis::Client;
use parking_lot::Mutex;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use super::{Keys, backend_error};
use crate::record::StoredEvent;
use crate::traits::{StoreError, StoreResult};
use crate::watchers::Watchers;
use connection::Control;
use routes::{Route, Routes, Sweep, sweep_periodically};

/// How many events a slow watcher may fall behind before it must refill from the log.
/// A watched task's channel holds its slots from the start (~0.1 KB each): at 256, a
/// fan-out node holding 10k idle streams kept ~240 MB of empty slots.
const CHANNEL_CAPACITY: usize = 32;
/// How many names a [`PubSub::names`] receiver may fall behind (its reader only hands
/// them on to local receivers).
const NAMES_CAPACITY: usize = 256;

pub(super) struct PubSub {
    client: Client,
    keys: Keys,
    place: String,
    shutdown: CancellationToken,
    /// Held across each (un)subscribe until Redis confirms it, so a watcher is handed out
    /// only for a confirmed channel.
    control: tokio::sync::Mutex<Control>,
    /// By channel name; read by the connection's reader task for every message.
    routes: Arc<Mutex<Routes>>,
}

impl PubSub {
    /// Opens the connection now (so a bad URL shows at startup) and starts the sweeper.
    pub(super) async fn connect(
        client: Client,
        keys: Keys,
        place: String,
        shutdown: &CancellationToken,
    ) -> StoreResult<Arc<PubSub>> {
        let pubsub = Arc::new(PubSub {
            client,
            keys,
            place,
            shutdown: shutdown.clone(),
            control: tokio::sync::Mutex::default(),
            routes: Arc::default(),
        });
        pubsub
            .connect_now(&mut *pubsub.control.lock().await)
            .await?;
        tokio::spawn(sweep_periodically(pubsub.clone(), shutdown.clone()));
        Ok(pubsub)
    }

    pub(super) async fn events(
        &self,
        task_id: &str,
    ) -> StoreResult<broadcast::Receiver<StoredEvent>> {
        let channel = self.keys.channel(task_id);
        let new = || Route::Events(broadcast::channel(CHANNEL_CAPACITY).0);
        self.watch(channel, new, |route| match route {
            Route::Events(sender) => Some(sender.subscribe()),
            Route::Names(_) | Route::Signals { .. } => None,
        })
        .await
    }

    /// Every message on `channel` from now on, as text. Like [`PubSub::events`], the
    /// receiver closes when the connection breaks (what was published meanwhile is lost).
    pub(super) async fn names(&self, channel: String) -> StoreResult<broadcast::Receiver<String>> {
        let new = || Route::Names(broadcast::channel(NAMES_CAPACITY).0);
        self.watch(channel, new, |route| match route {
            Route::Names(sender) => Some(sender.subscribe()),
            Route::Events(_) | Route::Signals { .. } => None,
        })
        .await
    }

    /// Fires at the next message on `channel` whose payload is `key`.
    pub(super) async fn signal(
        &self,
        channel: String,
        key: &str,
    ) -> StoreResult<oneshot::Receiver<()>> {
        {
            let mut routes = self.routes.lock();
            if routes.live.is_some()
                && let Some(Route::Signals {
                    confirmed: true,
                    watchers,
                }) = routes.channels.get_mut(&channel)
            {
                return Ok(watchers.watch(key));
            }
        }
        let new = || Route::Signals {
            confirmed: false,
            watchers: Watchers::default(),
        };
        self.watch(channel, new, |route| match route {
            Route::Signals { watchers, .. } => Some(watchers.watch(key)),
            Route::Events(_) | Route::Names(_) => None,
        })
        .await
    }

    /// Attaches a watcher to `channel`'s route, subscribing the channel first if nobody
    /// watches it yet. Returns once Redis confirmed the subscription.
    async fn watch<T>(
        &self,
        channel: String,
        new: impl Fn() -> Route,
        attach: impl Fn(&mut Route) -> Option<T>,
    ) -> StoreResult<T> {
        let mut control = self.control.lock().await;
        self.sweep(&mut control, Sweep::WhenDoubled).await;
        // A connection can break between being checked and being used; try a fresh one
        // once before giving up.
        for _ in 0..2 {
            let (generation, mut sink) = self.connection(&mut control).await?;
            let watcher = {
                let mut routes = self.routes.lock();
                if routes.live != Some(generation) {
                    drop(routes);
                    self.drop_connection(&mut control);
                    continue;
                }
                if let Some(route) = routes.channels.get_mut(&channel) {
                    // Present under `control` means confirmed.
                    return attach(route).ok_or_else(|| mixed_up(&channel));
                }
                // Routed before SUBSCRIBE, so the first message after the confirmation
                // already finds its way.
                let mut route = new();
                let watcher = attach(&mut route).ok_or_else(|| mixed_up(&channel))?;
                routes.channels.insert(channel.clone(), route);
                watcher
            };
            match sink.subscribe(&channel).await {
                Ok(()) => {
                    if let Some(Route::Signals { confirmed, .. }) =
                        self.routes.lock().channels.get_mut(&channel)
                    {
                        *confirmed = true;
                    }
                    return Ok(watcher);
                }
                Err(e) => {
                    self.routes.lock().channels.remove(&channel);
                    self.drop_connection(&mut control);
                    return Err(backend_error(&self.place, "subscribe", &e));
                }
            }
        }
        Err(StoreError::Backend(format!(
            "redis at {} unreachable (subscribe): the pub/sub connection keeps dropping",
            self.place
        )))
    }
}

fn mixed_up(channel: &str) -> StoreError {
    StoreError::Backend(format!(
        "redis channel {channel:?} carries another kind of signal"
    ))
}
