//! Lifecycle deadlines: a task waiting for input (or auth) too long is canceled, a task
//! whose agent went silent is failed, and a finished task is evicted after its TTL.
//!
//! [`DeadlineKeeper::run`] follows the bus and wires the two halves together:
//! - `timeouts`: the input and stall timeouts of running tasks, armed from each
//!   committed event (and from the stored tasks at the start), fired through the state
//!   machine's conditional update.
//! - `timers`: the heap those timeouts wait in, one timer per running task.
//! - `retention`: the sweeper that evicts finished tasks past their TTL.

mod retention;
mod timeouts;
mod timers;

#[cfg(test)]
mod test_world;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sb_store::backoff::Backoff;
use sb_store::{EventBus, PushConfigStore, TaskStore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::service::TaskService;

/// The bus group of deadline keepers: with several task-state replicas each event arms
/// the timer of one of them. Every expiry action is a conditional write, so a stale
/// timer on another replica (or two replicas firing) changes nothing twice.
pub const DEADLINES_GROUP: &str = "deadlines";

/// The pauses between attempts to follow the bus when it cannot be followed.
const FOLLOW_RETRY_FIRST: Duration = Duration::from_secs(1);
const FOLLOW_RETRY_MAX: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeadlineConfig {
    /// How long a finished task stays readable before it is evicted.
    pub terminal_ttl: Duration,
    /// How long a task may wait in input-required or auth-required.
    pub input_timeout: Duration,
    /// How long a submitted or working task may go without any event.
    pub stall_timeout: Duration,
}

impl Default for DeadlineConfig {
    fn default() -> Self {
        DeadlineConfig {
            terminal_ttl: Duration::from_secs(3600),
            input_timeout: Duration::from_secs(600),
            stall_timeout: Duration::from_secs(900),
        }
    }
}

#[derive(Debug, Clone)]
pub struct DeadlineKeeper {
    config: DeadlineConfig,
    tasks: Arc<dyn TaskService>,
    store: Arc<dyn TaskStore>,
    push: Arc<dyn PushConfigStore>,
    /// The wall clock read against tokio's at the start, so the sweeper's "now" follows
    /// tokio's clock (which tests pause and move) while comparing with stored times.
    started: (DateTime<Utc>, Instant),
}

impl DeadlineKeeper {
    pub fn new(
        config: DeadlineConfig,
        tasks: Arc<dyn TaskService>,
        store: Arc<dyn TaskStore>,
        push: Arc<dyn PushConfigStore>,
    ) -> DeadlineKeeper {
        DeadlineKeeper {
            config,
            tasks,
            store,
            push,
            started: (Utc::now(), Instant::now()),
        }
    }

    /// Runs until `shutdown`: loads every stored task's deadline, then follows the bus;
    /// the sweeper of finished tasks runs beside it. Subscribe first (`bus`), so nothing
    /// committed while loading is missed.
    pub async fn run(self, bus: Arc<dyn EventBus>, shutdown: CancellationToken) {
        let mut retries = Backoff::doubling(FOLLOW_RETRY_FIRST, FOLLOW_RETRY_MAX);
        let events = loop {
            match bus.subscribe_all(DEADLINES_GROUP).await {
                Ok(events) => break events,
                Err(e) => {
                    tracing::error!(error = %e, "deadline keeper cannot follow the bus; retrying");
                    let delay = retries.next_delay().unwrap_or(FOLLOW_RETRY_MAX);
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        () = tokio::time::sleep(delay) => {}
                    }
                }
            }
        };
        tokio::spawn(self.clone().sweep_finished(shutdown.clone()));
        self.enforce_timeouts(events, shutdown).await;
    }
}
