//! The scenarios. Each drives one server and returns [`Outcome`]s; the server's CPU
//! time and memory are read from `/proc` over the measured window only.

mod fanout;
mod idle;
mod stream;
mod unary;
mod webhook;

pub use fanout::{Ticks, fanout};
pub use idle::idle;
pub use stream::stream;
pub use unary::{Unary, unary};
pub use webhook::webhooks;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::http::{Connection, Target};
use crate::procstat;
use crate::stats::Outcome;

/// How hard and how long to push one server.
#[derive(Debug, Clone)]
pub struct Load {
    pub server: String,
    /// Connections are spread over these (several gateways of a split deployment).
    pub targets: Vec<Target>,
    /// The server's processes, whose CPU and memory are measured.
    pub pids: Vec<u32>,
    pub concurrency: usize,
    /// Time before measuring starts (connections warm, caches filled).
    pub warmup: Duration,
    pub duration: Duration,
}

impl Load {
    pub fn target(&self, worker: usize) -> &Target {
        &self.targets[worker % self.targets.len()]
    }
}

/// The measured window: when it opens and closes, and the CPU used inside it.
#[derive(Debug, Clone)]
struct Window {
    start: Instant,
    end: Instant,
}

impl Window {
    fn after_warmup(load: &Load) -> Window {
        let start = Instant::now() + load.warmup;
        Window {
            start,
            end: start + load.duration,
        }
    }

    fn contains(&self, began: Instant, ended: Instant) -> bool {
        began >= self.start && ended <= self.end
    }

    fn is_over(&self) -> bool {
        Instant::now() >= self.end
    }

    /// Server CPU time spent inside the window, waiting for it to close.
    async fn server_cpu(&self, pids: &[u32]) -> anyhow::Result<Duration> {
        tokio::time::sleep_until(self.start).await;
        let before = procstat::cpu_time(pids)?;
        tokio::time::sleep_until(self.end).await;
        Ok(procstat::cpu_time(pids)?.saturating_sub(before))
    }
}

/// Ids unique within one run, for message ids.
#[derive(Debug, Default, Clone)]
struct Ids(Arc<AtomicU64>);

impl Ids {
    fn next(&self, prefix: &str) -> String {
        format!("{prefix}-{}", self.0.fetch_add(1, Ordering::Relaxed))
    }
}

/// CPU per operation in microseconds, as an extra figure.
fn with_cpu(outcome: Outcome, cpu: Duration, operations: usize) -> Outcome {
    if operations == 0 {
        return outcome;
    }
    outcome.with("cpu_us", cpu.as_secs_f64() * 1e6 / operations as f64)
}

/// A worker's or a scenario's failures: how many counted, and the first reason (printed
/// once per scenario, so a misconfigured server explains itself).
#[derive(Debug, Default)]
struct Tally {
    errors: u64,
    first_error: Option<String>,
}

impl Tally {
    /// Notes a failure; `counted` says whether it falls in the measured window.
    fn note(&mut self, counted: bool, why: impl std::fmt::Display) {
        if counted {
            self.errors += 1;
        }
        self.first_error.get_or_insert_with(|| why.to_string());
    }

    fn merge(&mut self, other: Tally) {
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    fn print_first(&self, name: &str, server: &str) {
        if let Some(why) = &self.first_error {
            eprintln!("{name} {server}: first error: {why}");
        }
    }
}

/// The worker's connection, opened if it has none. When it cannot be opened the failure
/// is noted and, after a short pause, `None` comes back: the worker tries again.
async fn connected<'a>(
    slot: &'a mut Option<Connection>,
    target: &Target,
    tally: &mut Tally,
    counted: bool,
) -> Option<&'a mut Connection> {
    if slot.is_none() {
        match Connection::open(target).await {
            Ok(conn) => *slot = Some(conn),
            Err(e) => {
                tally.note(counted, e);
                tokio::time::sleep(Duration::from_millis(10)).await;
                return None;
            }
        }
    }
    slot.as_mut()
}
