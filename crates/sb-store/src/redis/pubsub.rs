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

use std::sync::Arc;
use std::time::{Duration, Instant};

use ::redis::aio::{PubSubSink, PubSubStream};
use ::redis::{Client, Msg};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use super::{CONNECT_TIMEOUT, Keys, backend_error};
use crate::backoff::Backoff;
use crate::record::StoredEvent;
use crate::traits::{StoreError, StoreResult};
use crate::watchers::Watchers;

/// How many events a slow watcher may fall behind before it must refill from the log.
/// A watched task's channel holds its slots from the start (~0.1 KB each): at 256, a
/// fan-out node holding 10k idle streams kept ~240 MB of empty slots.
const CHANNEL_CAPACITY: usize = 32;
/// How often channels nobody watches any more are unsubscribed, besides when a new
/// subscription finds the routes doubled since the last sweep.
const SWEEP_EVERY: Duration = Duration::from_secs(10);
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

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

#[derive(Default)]
struct Control {
    conn: Option<Connection>,
    generations: u64,
    retry: Option<Retry>,
}

struct Connection {
    generation: u64,
    sink: PubSubSink,
    /// Stops this connection's reader, which closes the connection.
    stop: CancellationToken,
}

/// After a failed connect, when the next attempt may run.
struct Retry {
    /// Dropped on a success: the next failure waits the first delay.
    backoff: Backoff,
    retry_at: Instant,
    error: String,
}

#[derive(Default)]
struct Routes {
    /// The connection whose reader is running; `None` once it broke.
    live: Option<u64>,
    channels: crate::IdMap<String, Route>,
    /// A subscription sweeps when `channels` has grown to this (see
    /// [`crate::sweep_when_doubled`]): sweeping on every subscription walked every
    /// route, O(streams held) per new stream.
    sweep_at: usize,
}

enum Route {
    Events(broadcast::Sender<StoredEvent>),
    /// A signal channel: each message's payload is the key whose watchers it fires.
    Signals {
        /// Redis confirmed the SUBSCRIBE: watchers may attach without the control lock.
        confirmed: bool,
        watchers: Watchers,
    },
}

impl Route {
    fn watched(&mut self) -> bool {
        match self {
            Route::Events(sender) => sender.receiver_count() > 0,
            // Kept while the connection lives: the next wait comes soon enough.
            Route::Signals { .. } => true,
        }
    }
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
            Route::Signals { .. } => None,
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
            Route::Events(_) => None,
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

    /// The live connection, or a new one (after the backoff of a failed attempt).
    async fn connection(&self, control: &mut Control) -> StoreResult<(u64, PubSubSink)> {
        if let Some(conn) = &control.conn
            && self.routes.lock().live == Some(conn.generation)
        {
            return Ok((conn.generation, conn.sink.clone()));
        }
        if let Some(retry) = &control.retry
            && Instant::now() < retry.retry_at
        {
            return Err(StoreError::Backend(retry.error.clone()));
        }
        self.connect_now(control).await
    }

    async fn connect_now(&self, control: &mut Control) -> StoreResult<(u64, PubSubSink)> {
        self.drop_connection(control);
        let attempt = tokio::time::timeout(CONNECT_TIMEOUT, self.client.get_async_pubsub()).await;
        let pubsub = match attempt {
            Ok(Ok(pubsub)) => pubsub,
            Ok(Err(e)) => {
                let error = backend_error(&self.place, "pub/sub connect", &e);
                return Err(self.failed(control, error));
            }
            Err(_) => {
                let error = StoreError::Backend(format!(
                    "redis at {} unreachable (pub/sub connect): no answer within {CONNECT_TIMEOUT:?}",
                    self.place
                ));
                return Err(self.failed(control, error));
            }
        };
        control.retry = None;
        control.generations += 1;
        let generation = control.generations;
        let (sink, stream) = pubsub.split();
        {
            let mut routes = self.routes.lock();
            routes.live = Some(generation);
            // Any route left belongs to a replaced connection: dropping its senders makes
            // its watchers subscribe again.
            routes.channels.clear();
        }
        let stop = self.shutdown.child_token();
        let reader = read_messages(stream, generation, self.routes.clone(), stop.clone());
        tokio::spawn(reader);
        control.conn = Some(Connection {
            generation,
            sink: sink.clone(),
            stop,
        });
        Ok((generation, sink))
    }

    fn failed(&self, control: &mut Control, error: StoreError) -> StoreError {
        let mut backoff = control.retry.take().map_or_else(
            || Backoff::doubling(MIN_BACKOFF, MAX_BACKOFF),
            |retry| retry.backoff,
        );
        let delay = backoff.next_delay().unwrap_or(MAX_BACKOFF);
        tracing::warn!(error = %error, retry_in = ?delay, "redis pub/sub connection failed");
        control.retry = Some(Retry {
            backoff,
            retry_at: Instant::now() + delay,
            error: error.to_string(),
        });
        error
    }

    fn drop_connection(&self, control: &mut Control) {
        if let Some(conn) = control.conn.take() {
            conn.stop.cancel();
        }
    }

    /// Unsubscribes the channels nobody watches any more.
    async fn sweep(&self, control: &mut Control, when: Sweep) {
        let Some(conn) = &control.conn else {
            return;
        };
        let idle: Vec<String> = {
            let mut routes = self.routes.lock();
            if routes.live != Some(conn.generation) {
                return;
            }
            let routes = &mut *routes;
            if when == Sweep::Now {
                routes.sweep_at = 0;
            }
            let mut idle = Vec::new();
            crate::sweep_when_doubled(
                &mut routes.channels,
                &mut routes.sweep_at,
                |channel, route| {
                    let watched = route.watched();
                    if !watched {
                        idle.push(channel.clone());
                    }
                    watched
                },
            );
            idle
        };
        if idle.is_empty() {
            return;
        }
        if let Err(e) = conn.sink.clone().unsubscribe(&idle).await {
            // The reader notices a broken connection; anything else only costs messages
            // that no route wants.
            tracing::debug!(error = %e, "redis unsubscribe failed");
        }
    }
}

/// Whether a sweep walks the routes whatever their number.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sweep {
    Now,
    WhenDoubled,
}

fn mixed_up(channel: &str) -> StoreError {
    StoreError::Backend(format!(
        "redis channel {channel:?} carries another kind of signal"
    ))
}

/// Hands each message to its channel's watchers until the connection ends, then drops
/// every route.
async fn read_messages(
    mut stream: PubSubStream,
    generation: u64,
    routes: Arc<Mutex<Routes>>,
    stop: CancellationToken,
) {
    loop {
        let msg = tokio::select! {
            () = stop.cancelled() => break,
            msg = stream.next() => msg,
        };
        let Some(msg) = msg else {
            tracing::warn!("redis pub/sub connection lost; watchers will subscribe again");
            break;
        };
        route(&routes, &msg);
    }
    let mut routes = routes.lock();
    if routes.live == Some(generation) {
        routes.live = None;
        routes.channels.clear();
    }
}

fn route(routes: &Mutex<Routes>, msg: &Msg) {
    let channel = msg.get_channel_name();
    let sender = match routes.lock().channels.get_mut(channel) {
        Some(Route::Signals { watchers, .. }) => {
            match std::str::from_utf8(msg.get_payload_bytes()) {
                Ok(key) => watchers.fire(key),
                Err(_) => tracing::warn!(channel, "a signal on redis pub/sub with a non-UTF-8 key"),
            }
            return;
        }
        Some(Route::Events(sender)) => sender.clone(),
        None => return,
    };
    match serde_json::from_slice::<StoredEvent>(msg.get_payload_bytes()) {
        // No receivers left is fine: the sweep unsubscribes.
        Ok(event) => drop(sender.send(event)),
        Err(e) => tracing::warn!(channel, error = %e, "undecodable event on redis pub/sub"),
    }
}

async fn sweep_periodically(pubsub: Arc<PubSub>, stop: CancellationToken) {
    // The first sweep one period after the start (an interval's first tick is at once,
    // which swept at some arbitrary point of the first subscriptions).
    let first = tokio::time::Instant::now() + SWEEP_EVERY;
    let mut ticks = tokio::time::interval_at(first, SWEEP_EVERY);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => pubsub.sweep(&mut *pubsub.control.lock().await, Sweep::Now).await,
        }
    }
}
