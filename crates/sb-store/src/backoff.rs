//! The one backoff of the workspace: the pauses between attempts at something that may
//! work later (a server that went away, a webhook receiver that failed, a task service
//! that is restarting). Exponential schedules come from backon, the library the redis
//! client reconnects with; a configured list of delays (the webhook retries) is taken as
//! it is. Either way each delay is stretched by a random share of itself, up to as much
//! again, so the replicas or receivers that failed together do not retry together.

use std::sync::Arc;
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// A schedule of delays, jittered, that a success starts over. See the module doc.
#[derive(Debug)]
pub struct Backoff {
    schedule: Schedule,
    attempt: usize,
}

#[derive(Debug)]
enum Schedule {
    Exponential {
        builder: ExponentialBuilder,
        delays: ExponentialBackoff,
    },
    Listed(Arc<[Duration]>),
}

impl Backoff {
    /// Delays that double from `first` up to `max`, and never run out.
    pub fn doubling(first: Duration, max: Duration) -> Backoff {
        Backoff::exponential(
            ExponentialBuilder::new()
                .with_min_delay(first)
                .with_max_delay(max)
                .with_jitter()
                .without_max_times(),
        )
    }

    /// Delays that double from `first` up to `max`, `retries` of them.
    pub fn doubling_times(first: Duration, max: Duration, retries: usize) -> Backoff {
        Backoff::exponential(
            ExponentialBuilder::new()
                .with_min_delay(first)
                .with_max_delay(max)
                .with_jitter()
                .with_max_times(retries),
        )
    }

    /// These delays, in order (each jittered), then no more.
    pub fn listed(delays: impl Into<Arc<[Duration]>>) -> Backoff {
        Backoff {
            schedule: Schedule::Listed(delays.into()),
            attempt: 0,
        }
    }

    fn exponential(builder: ExponentialBuilder) -> Backoff {
        Backoff {
            schedule: Schedule::Exponential {
                builder,
                delays: builder.build(),
            },
            attempt: 0,
        }
    }

    /// How long to wait before the next attempt; `None` once the schedule has run out.
    pub fn next_delay(&mut self) -> Option<Duration> {
        let attempt = self.attempt;
        self.attempt += 1;
        match &mut self.schedule {
            Schedule::Exponential { delays, .. } => delays.next(),
            Schedule::Listed(delays) => delays.get(attempt).copied().map(jittered),
        }
    }

    /// After a success: the next failure waits the first delay again.
    pub fn reset(&mut self) {
        self.attempt = 0;
        if let Schedule::Exponential { builder, delays } = &mut self.schedule {
            *delays = builder.build();
        }
    }

    /// Runs `op` until it succeeds or the schedule runs out, waiting between attempts;
    /// the last attempt's error when it runs out.
    pub async fn retry<T, E, F, Fut>(mut self, mut op: F) -> Result<T, E>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        loop {
            match op().await {
                Ok(value) => return Ok(value),
                Err(err) => match self.next_delay() {
                    Some(delay) => tokio::time::sleep(delay).await,
                    None => return Err(err),
                },
            }
        }
    }
}

/// The delay stretched by a random share of itself, up to as much again: backon's rule,
/// for the delays backon does not make.
fn jittered(delay: Duration) -> Duration {
    delay.mul_f64(1.0 + fastrand::f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(5);

    /// Each delay lies between its step of the schedule and twice that.
    fn assert_step(delay: Option<Duration>, step: Duration) {
        let delay = delay.unwrap_or_default();
        assert!(
            delay >= step && delay <= step * 2,
            "{delay:?} outside {step:?}..={:?}",
            step * 2
        );
    }

    #[test]
    fn delays_double_up_to_the_cap_and_start_over_after_a_success() {
        let mut backoff = Backoff::doubling(FIRST, MAX);
        let mut step = FIRST;
        for _ in 0..12 {
            assert_step(backoff.next_delay(), step);
            step = (step * 2).min(MAX);
        }
        assert_eq!(step, MAX, "twelve failures reach the cap");
        backoff.reset();
        assert_step(backoff.next_delay(), FIRST);
    }

    #[test]
    fn a_limited_schedule_runs_out_and_starts_over_after_a_success() {
        let mut doubling = Backoff::doubling_times(FIRST, MAX, 2);
        assert_step(doubling.next_delay(), FIRST);
        assert_step(doubling.next_delay(), FIRST * 2);
        assert_eq!(doubling.next_delay(), None);
        doubling.reset();
        assert_step(doubling.next_delay(), FIRST);

        let steps = [Duration::from_secs(1), Duration::from_secs(3)];
        let mut listed = Backoff::listed(steps);
        assert_step(listed.next_delay(), steps[0]);
        assert_step(listed.next_delay(), steps[1]);
        assert_eq!(listed.next_delay(), None);
        listed.reset();
        assert_step(listed.next_delay(), steps[0]);
    }

    #[test]
    fn replicas_that_fail_together_do_not_retry_together() {
        for make in [
            || Backoff::doubling(FIRST, MAX),
            || Backoff::listed([FIRST]),
        ] {
            let delays: Vec<Option<Duration>> = (0..8).map(|_| make().next_delay()).collect();
            let first = delays[0];
            assert!(
                delays.iter().any(|d| *d != first),
                "eight replicas all wait {first:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retry_stops_at_the_first_success_or_when_the_schedule_runs_out() {
        let mut calls = 0;
        let found: Result<u32, &str> = Backoff::doubling_times(FIRST, MAX, 4)
            .retry(|| {
                calls += 1;
                let outcome = if calls == 3 { Ok(7) } else { Err("not yet") };
                async move { outcome }
            })
            .await;
        assert_eq!((found, calls), (Ok(7), 3));

        let mut calls = 0;
        let gave_up: Result<u32, &str> = Backoff::doubling_times(FIRST, MAX, 2)
            .retry(|| {
                calls += 1;
                async { Err("down") }
            })
            .await;
        assert_eq!(
            (gave_up, calls),
            (Err("down"), 3),
            "one try and two retries"
        );
    }
}
