//! How the firing loop reports a store it cannot read: looked at every second, a down
//! store would otherwise write a warning a second. The first failure is a warning, the
//! ones after it a reminder a minute with how many looks failed, and the recovery one
//! line saying how long it lasted.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// How often a continuing outage is reported again.
const REMIND_EVERY: Duration = Duration::from_secs(60);

/// The state of one outage (none while the store answers).
#[derive(Debug, Default)]
pub(super) struct Outage {
    since: Option<Instant>,
    reminded: Option<Instant>,
    failures: u64,
}

/// What to say about one look.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Report {
    Nothing,
    /// The first failure of an outage.
    Started,
    /// A failure a minute or more after the last report.
    Continues {
        failures: u64,
        lasted: Duration,
    },
    /// The first success after an outage.
    Over {
        failures: u64,
        lasted: Duration,
    },
}

impl Outage {
    pub(super) fn failed(&mut self, now: Instant) -> Report {
        self.failures += 1;
        let Some(since) = self.since else {
            self.since = Some(now);
            self.reminded = Some(now);
            return Report::Started;
        };
        let reminded = self.reminded.unwrap_or(since);
        if now.duration_since(reminded) < REMIND_EVERY {
            return Report::Nothing;
        }
        self.reminded = Some(now);
        Report::Continues {
            failures: self.failures,
            lasted: now.duration_since(since),
        }
    }

    pub(super) fn succeeded(&mut self, now: Instant) -> Report {
        let Some(since) = self.since.take() else {
            return Report::Nothing;
        };
        let failures = std::mem::take(&mut self.failures);
        self.reminded = None;
        Report::Over {
            failures,
            lasted: now.duration_since(since),
        }
    }

    /// Logs what `report` says, `error` being the failure at hand.
    pub(super) fn log(report: Report, error: Option<&dyn Display>) {
        let error = error.map(ToString::to_string).unwrap_or_default();
        match report {
            Report::Nothing => {}
            Report::Started => {
                tracing::warn!(%error, "could not read the ceremonies; no ceremony fires until the store answers (looking again every second)");
            }
            Report::Continues { failures, lasted } => {
                tracing::warn!(%error, failures, lasted_secs = lasted.as_secs(), "still cannot read the ceremonies");
            }
            Report::Over { failures, lasted } => {
                tracing::info!(
                    failures,
                    lasted_secs = lasted.as_secs(),
                    "the ceremonies can be read again; firings missed meanwhile are caught up within the grace"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_reported_once_then_a_minute_apart_then_its_end() {
        let start = Instant::now();
        let mut outage = Outage::default();
        assert_eq!(outage.succeeded(start), Report::Nothing);
        assert_eq!(outage.failed(start), Report::Started);
        for second in 1..60 {
            let at = start + Duration::from_secs(second);
            assert_eq!(outage.failed(at), Report::Nothing, "second {second}");
        }
        let minute = start + Duration::from_secs(60);
        assert_eq!(
            outage.failed(minute),
            Report::Continues {
                failures: 61,
                lasted: Duration::from_secs(60)
            }
        );
        assert_eq!(
            outage.failed(minute + Duration::from_secs(1)),
            Report::Nothing
        );
        let back = minute + Duration::from_secs(5);
        assert_eq!(
            outage.succeeded(back),
            Report::Over {
                failures: 62,
                lasted: Duration::from_secs(65)
            }
        );
        assert_eq!(outage.succeeded(back), Report::Nothing);
        assert_eq!(outage.failed(back), Report::Started, "a new outage");
    }
}
