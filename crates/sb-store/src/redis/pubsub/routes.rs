//! The routes of the pub/sub connection: by channel, the local senders its messages go
//! to, and the sweep that unsubscribes the channels nobody watches any more.

use std::sync::Arc;
use std::time::Duration;

use ::redis::Msg;
use parking_lot::Mutex;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::PubSub;
use super::connection::Control;
use crate::record::StoredEvent;
use crate::watchers::Watchers;

/// How often channels nobody watches any more are unsubscribed, besides when a new
/// subscription finds the routes doubled since the last sweep.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

#[derive(Default)]
pub(super) struct Routes {
    /// The connection whose reader is running; `None` once it broke.
    pub(super) live: Option<u64>,
    pub(super) channels: crate::IdMap<String, Route>,
    /// A subscription sweeps when `channels` has grown to this (see
    /// [`crate::sweep_when_doubled`]): sweeping on every subscription walked every
    /// route, O(streams held) per new stream.
    sweep_at: usize,
}

pub(super) enum Route {
    Events(broadcast::Sender<StoredEvent>),
    /// Each message's payload as text (the registry's changes: agent names).
    Names(broadcast::Sender<String>),
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
            Route::Names(sender) => sender.receiver_count() > 0,
            // Kept while the connection lives: the next wait comes soon enough.
            Route::Signals { .. } => true,
        }
    }
}

impl PubSub {
    /// Unsubscribes the channels nobody watches any more.
    pub(super) async fn sweep(&self, control: &mut Control, when: Sweep) {
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
pub(super) enum Sweep {
    Now,
    WhenDoubled,
}

pub(super) fn route(routes: &Mutex<Routes>, msg: &Msg) {
    let channel = msg.get_channel_name();
    let sender = match routes.lock().channels.get_mut(channel) {
        Some(Route::Signals { watchers, .. }) => {
            match std::str::from_utf8(msg.get_payload_bytes()) {
                Ok(key) => watchers.fire(key),
                Err(_) => tracing::warn!(channel, "a signal on redis pub/sub with a non-UTF-8 key"),
            }
            return;
        }
        Some(Route::Names(sender)) => {
            match std::str::from_utf8(msg.get_payload_bytes()) {
                // No receivers left is fine: the sweep unsubscribes.
                Ok(name) => drop(sender.send(name.to_owned())),
                Err(_) => tracing::warn!(channel, "a name on redis pub/sub that is not UTF-8"),
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

pub(super) async fn sweep_periodically(pubsub: Arc<PubSub>, stop: CancellationToken) {
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
