//! The pauses between attempts to reach a server that went away (Redis, the task-state
//! service): [`Reconnect`], on backon's exponential backoff, the library the redis client
//! uses for its own reconnects.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// Delays that double from `first` up to `max`, each stretched by a random share of
/// itself (up to as much again), so that the replicas that lost the same server do not
/// come back in step. It never runs out; a success starts it over.
#[derive(Debug)]
pub struct Reconnect {
    builder: ExponentialBuilder,
    delays: ExponentialBackoff,
    max: Duration,
}

impl Reconnect {
    pub fn new(first: Duration, max: Duration) -> Reconnect {
        let builder = ExponentialBuilder::new()
            .with_min_delay(first)
            .with_max_delay(max)
            .with_jitter()
            .without_max_times();
        Reconnect {
            builder,
            delays: builder.build(),
            max,
        }
    }

    /// How long to wait before the next attempt.
    pub fn next_delay(&mut self) -> Duration {
        // Without a cap on attempts the iterator never ends; `max` is only a fallback.
        self.delays.next().unwrap_or(self.max)
    }

    /// After a success: the next failure waits the first delay again.
    pub fn reset(&mut self) {
        self.delays = self.builder.build();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);

    /// Each delay lies between its step of the doubling and twice that.
    fn assert_step(delay: Duration, step: Duration) {
        assert!(
            delay >= step && delay <= step * 2,
            "{delay:?} outside {step:?}..={:?}",
            step * 2
        );
    }

    #[test]
    fn delays_double_up_to_the_cap_and_start_over_after_a_success() {
        let mut reconnect = Reconnect::new(FIRST, MAX);
        let mut step = FIRST;
        for _ in 0..12 {
            assert_step(reconnect.next_delay(), step);
            step = (step * 2).min(MAX);
        }
        assert_eq!(step, MAX, "twelve failures reach the cap");
        reconnect.reset();
        assert_step(reconnect.next_delay(), FIRST);
    }

    #[test]
    fn replicas_that_fail_together_do_not_retry_together() {
        let delays: Vec<Duration> = (0..8)
            .map(|_| Reconnect::new(FIRST, MAX).next_delay())
            .collect();
        let first = delays[0];
        assert!(
            delays.iter().any(|d| *d != first),
            "eight replicas all wait {first:?}"
        );
    }
}
