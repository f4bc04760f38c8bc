//! The pub/sub connection: opened on demand, its reader task handing each message to the
//! routes, and after a failed attempt a backoff before the next.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ::redis::aio::{PubSubSink, PubSubStream};
use futures::StreamExt;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::PubSub;
use super::routes::{Routes, route};
use crate::backoff::Backoff;
use crate::redis::{CONNECT_TIMEOUT, backend_error};
use crate::traits::{StoreError, StoreResult};

const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

#[derive(Default)]
pub(super) struct Control {
    pub(super) conn: Option<Connection>,
    generations: u64,
    retry: Option<Retry>,
}

pub(super) struct Connection {
    pub(super) generation: u64,
    pub(super) sink: PubSubSink,
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

impl PubSub {
    /// The live connection, or a new one (after the backoff of a failed attempt).
    pub(super) async fn connection(&self, control: &mut Control) -> StoreResult<(u64, PubSubSink)> {
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

    pub(super) async fn connect_now(
        &self,
        control: &mut Control,
    ) -> StoreResult<(u64, PubSubSink)> {
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

    /// How long until a new connection may be attempted: the failed connection's
    /// backoff, so a caller subscribing again after a failure follows the same schedule
    /// (a failure that recorded none, a refused SUBSCRIBE, waits the first delay).
    pub(in crate::redis) async fn until_retry(&self) -> Duration {
        let control = self.control.lock().await;
        control.retry.as_ref().map_or(MIN_BACKOFF, |retry| {
            retry.retry_at.saturating_duration_since(Instant::now())
        })
    }

    pub(super) fn drop_connection(&self, control: &mut Control) {
        if let Some(conn) = control.conn.take() {
            conn.stop.cancel();
        }
    }
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
