//! The per-principal limit on open streams of this gateway node.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use parking_lot::Mutex;
use sb_protocol::{A2AError, ErrorKind};
use sb_tasks::Scope;

use crate::ops::FrameStream;

/// The default number of streams one principal may hold open on one node.
pub const DEFAULT_MAX_STREAMS: usize = 10_000;

#[derive(Debug)]
pub struct StreamLimits {
    max: usize,
    /// Open streams of every caller, exported as a metric.
    gauge: prometheus_client::metrics::gauge::Gauge,
    // A plain mutex: held for a counter update, never across an await.
    open: Mutex<HashMap<(String, String), usize>>,
}

/// One open stream; dropping it (when the stream ends or the client leaves) frees it.
#[derive(Debug)]
pub struct StreamSlot {
    limits: Arc<StreamLimits>,
    key: (String, String),
}

impl StreamLimits {
    pub fn new(max: usize) -> Arc<StreamLimits> {
        StreamLimits::with_gauge(max, Default::default())
    }

    /// Limits that also keep `gauge` at the number of open streams.
    pub fn with_gauge(
        max: usize,
        gauge: prometheus_client::metrics::gauge::Gauge,
    ) -> Arc<StreamLimits> {
        Arc::new(StreamLimits {
            max,
            gauge,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// Claims a stream for the caller, or refuses with a retryable error.
    pub fn open(self: &Arc<Self>, scope: &Scope) -> Result<StreamSlot, A2AError> {
        let key = (scope.agent.clone(), scope.owner.clone());
        let mut open = self.open.lock();
        let count = open.entry(key.clone()).or_default();
        if *count >= self.max {
            return Err(A2AError::new(
                ErrorKind::ResourceExhausted,
                format!(
                    "{} streams are already open for this caller (the limit); close one first",
                    self.max
                ),
            ));
        }
        *count += 1;
        self.gauge.inc();
        Ok(StreamSlot {
            limits: self.clone(),
            key,
        })
    }

    /// Streams the caller holds open now.
    pub fn open_count(&self, scope: &Scope) -> usize {
        self.open
            .lock()
            .get(&(scope.agent.clone(), scope.owner.clone()))
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.limits.gauge.dec();
        let mut open = self.limits.open.lock();
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// Claims one of the caller's stream slots for `frames`, before the first byte is sent,
/// so a caller over the limit gets a plain error response.
pub fn claim(
    state: &crate::AppState,
    scope: &Scope,
    frames: FrameStream,
) -> Result<FrameStream, A2AError> {
    let slot = state.streams.open(scope)?;
    Ok(hold(frames, slot))
}

/// Keeps `slot` claimed for as long as `frames` is alive.
pub fn hold(frames: FrameStream, slot: StreamSlot) -> FrameStream {
    frames
        .map(move |frame| {
            let _held = &slot;
            frame
        })
        .boxed()
}
