//! Time in fleet health: outcomes are counted in buckets of fixed spans, and a rolling
//! window is the last buckets of one span. Two spans, so neither window reads much: the
//! last hour from 60 one-minute buckets, the last day from 96 quarter-hour buckets (each
//! window rolls on by its bucket, and the current bucket is still filling).

use serde::{Deserialize, Serialize};

/// A bucket span: its length and how long its buckets are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Span {
    Minute,
    QuarterHour,
}

impl Span {
    pub const ALL: [Span; 2] = [Span::Minute, Span::QuarterHour];

    pub fn millis(self) -> u64 {
        match self {
            Span::Minute => 60_000,
            Span::QuarterHour => 900_000,
        }
    }

    /// How long a bucket is kept after it ends: longer than any window reads it.
    fn kept_millis(self) -> u64 {
        match self {
            Span::Minute => 2 * 3_600_000,
            Span::QuarterHour => 25 * 3_600_000,
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Span::Minute => "1m",
            Span::QuarterHour => "15m",
        }
    }

    /// The bucket of this span that `at_ms` falls in.
    pub fn bucket(self, at_ms: u64) -> Bucket {
        Bucket {
            span: self,
            index: at_ms / self.millis(),
        }
    }
}

/// One bucket: a span and its index since the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bucket {
    span: Span,
    index: u64,
}

impl Bucket {
    /// Its key in the [`sb_store::FleetStore`] counters.
    pub fn key(&self) -> String {
        format!("health:{}:{}", self.span.tag(), self.index)
    }

    /// When the store may forget it, in milliseconds since the epoch.
    pub fn expires_at_ms(&self) -> u64 {
        (self.index + 1) * self.span.millis() + self.span.kept_millis()
    }
}

/// A rolling window of fleet health.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Window {
    #[serde(rename = "1h")]
    LastHour,
    #[serde(rename = "24h")]
    LastDay,
}

impl Window {
    pub const ALL: [Window; 2] = [Window::LastHour, Window::LastDay];

    pub fn name(self) -> &'static str {
        match self {
            Window::LastHour => "1h",
            Window::LastDay => "24h",
        }
    }

    pub fn parse(text: &str) -> Option<Window> {
        Window::ALL.into_iter().find(|w| w.name() == text)
    }

    fn span(self) -> Span {
        match self {
            Window::LastHour => Span::Minute,
            Window::LastDay => Span::QuarterHour,
        }
    }

    pub fn millis(self) -> u64 {
        match self {
            Window::LastHour => 3_600_000,
            Window::LastDay => 24 * 3_600_000,
        }
    }

    /// The buckets the window reads at `now_ms`, the current one last.
    pub fn buckets(self, now_ms: u64) -> Vec<Bucket> {
        let span = self.span();
        let count = self.millis() / span.millis();
        let last = span.bucket(now_ms).index;
        (last.saturating_sub(count - 1)..=last)
            .map(|index| Bucket { span, index })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_read_their_last_buckets() {
        let now = 1_800_000_000_000 + 30_000;
        let hour = Window::LastHour.buckets(now);
        assert_eq!(hour.len(), 60);
        assert_eq!(hour.last(), Some(&Span::Minute.bucket(now)));
        assert_eq!(hour[0], Span::Minute.bucket(now - 59 * 60_000));
        let day = Window::LastDay.buckets(now);
        assert_eq!(day.len(), 96);
        assert_eq!(day.last(), Some(&Span::QuarterHour.bucket(now)));
    }

    #[test]
    fn a_bucket_outlives_every_window_that_reads_it() {
        let now = 1_800_000_000_000;
        for window in Window::ALL {
            let first = window.buckets(now)[0];
            assert!(first.expires_at_ms() > now, "{window:?}");
        }
        assert_ne!(
            Span::Minute.bucket(now).key(),
            Span::QuarterHour.bucket(now).key()
        );
    }
}
