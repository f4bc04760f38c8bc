//! What a scenario measured, and the one line it prints.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Latencies in microseconds, summarised by percentile.
#[derive(Debug, Default, Clone)]
pub struct Latencies(Vec<u64>);

impl Latencies {
    pub fn record(&mut self, d: Duration) {
        self.0
            .push(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    pub fn record_micros(&mut self, micros: u64) {
        self.0.push(micros);
    }

    pub fn merge(&mut self, other: Latencies) {
        self.0.extend(other.0);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `p`-th percentile in milliseconds (nearest rank); `None` without samples.
    pub fn percentile_ms(&mut self, p: f64) -> Option<f64> {
        if self.0.is_empty() {
            return None;
        }
        self.0.sort_unstable();
        let rank = ((p / 100.0) * self.0.len() as f64).ceil() as usize;
        let index = rank.clamp(1, self.0.len()) - 1;
        Some(self.0[index] as f64 / 1000.0)
    }
}

/// One scenario against one server: the printed line and the row of the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Outcome {
    /// Scenario id with its parameters, e.g. `B1 c=32`.
    pub name: String,
    pub server: String,
    /// Completed operations per second (requests, streams, deliveries).
    pub rps: f64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub errors: u64,
    /// Further figures by name, e.g. `cpu_us` (server CPU per operation), `first_p99_ms`.
    #[serde(default)]
    pub extra: Vec<(String, f64)>,
    /// Why a scenario did not run for this server.
    #[serde(default)]
    pub skipped: Option<String>,
}

impl Outcome {
    pub fn skipped(name: &str, server: &str, why: &str) -> Outcome {
        Outcome {
            name: name.to_owned(),
            server: server.to_owned(),
            skipped: Some(why.to_owned()),
            ..Outcome::default()
        }
    }

    /// A scenario that does not apply to this server (not a failure).
    pub fn not_applicable(name: &str, server: &str, why: &str) -> Outcome {
        Outcome::skipped(name, server, &format!("n/a: {why}"))
    }

    /// Skipped for a reason other than not applying, with errors, or with nothing
    /// completed in its window.
    pub fn failed(&self) -> bool {
        self.errors > 0
            || (self.skipped.is_none() && self.rps <= 0.0)
            || self
                .skipped
                .as_ref()
                .is_some_and(|why| !why.starts_with("n/a"))
    }

    pub fn with(mut self, key: &str, value: f64) -> Outcome {
        self.extra.push((key.to_owned(), value));
        self
    }

    pub fn get(&self, key: &str) -> Option<f64> {
        match key {
            "rps" => Some(self.rps).filter(|_| self.skipped.is_none()),
            "p50_ms" => self.p50_ms,
            "p99_ms" => self.p99_ms,
            _ => self.extra.iter().find(|(k, _)| k == key).map(|(_, v)| *v),
        }
    }

    /// Reads back a [`Outcome::line`] (to render a report from a saved run's output).
    pub fn parse_line(line: &str) -> Option<Outcome> {
        let (name, rest) = line.split_once(" server=")?;
        let (server, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let mut outcome = Outcome {
            name: name.to_owned(),
            server: server.to_owned(),
            ..Outcome::default()
        };
        if let Some(why) = rest.strip_prefix("skipped=") {
            outcome.skipped = Some(why.trim_matches('"').to_owned());
            return Some(outcome);
        }
        for pair in rest.split_whitespace() {
            let (key, value) = pair.split_once('=')?;
            let number = value.parse::<f64>().ok();
            match key {
                "rps" => outcome.rps = number?,
                "p50_ms" => outcome.p50_ms = number,
                "p99_ms" => outcome.p99_ms = number,
                "errors" => outcome.errors = value.parse().ok()?,
                _ => outcome.extra.push((key.to_owned(), number?)),
            }
        }
        Some(outcome)
    }

    /// `NAME server=… rps=… p50_ms=… p99_ms=… errors=…` and the extra figures.
    pub fn line(&self) -> String {
        if let Some(why) = &self.skipped {
            return format!("{} server={} skipped=\"{why}\"", self.name, self.server);
        }
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
        let mut line = format!(
            "{} server={} rps={:.1} p50_ms={} p99_ms={} errors={}",
            self.name,
            self.server,
            self.rps,
            ms(self.p50_ms),
            ms(self.p99_ms),
            self.errors
        );
        for (key, value) in &self.extra {
            if key.ends_with("_ms") {
                line.push_str(&format!(" {key}={value:.3}"));
            } else {
                line.push_str(&format!(" {key}={value:.1}"));
            }
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let mut l = Latencies::default();
        for ms in 1..=100 {
            l.record(Duration::from_millis(ms));
        }
        assert_eq!(l.percentile_ms(50.0), Some(50.0));
        assert_eq!(l.percentile_ms(99.0), Some(99.0));
        assert_eq!(Latencies::default().percentile_ms(50.0), None);
    }

    /// The smoke run fails on these: it must prove every scenario still completes work.
    #[test]
    fn nothing_completed_errors_and_skips_are_failures_but_not_applicable_is_not() {
        let ran = |rps: f64, errors: u64| Outcome {
            name: "B1 c=256".into(),
            server: "split".into(),
            rps,
            errors,
            ..Outcome::default()
        };
        assert!(!ran(12.5, 0).failed());
        assert!(ran(0.0, 0).failed(), "nothing completed in the window");
        assert!(ran(12.5, 1).failed());
        assert!(Outcome::skipped("B1", "js", "did not start").failed());
        assert!(!Outcome::not_applicable("B5", "ceiling", "no tasks").failed());
    }

    #[test]
    fn the_line_has_every_figure() {
        let o = Outcome {
            name: "B1 c=32".into(),
            server: "python".into(),
            rps: 397.04,
            p50_ms: Some(80.0),
            p99_ms: Some(170.5),
            errors: 2,
            ..Outcome::default()
        }
        .with("cpu_us", 2521.0);
        assert_eq!(
            o.line(),
            "B1 c=32 server=python rps=397.0 p50_ms=80.000 p99_ms=170.500 errors=2 cpu_us=2521.0"
        );
        assert_eq!(o.get("cpu_us"), Some(2521.0));
        let back = Outcome::parse_line(&o.line()).unwrap();
        assert_eq!(back.line(), o.line());
        let skipped = Outcome::not_applicable("B5", "ceiling", "no tasks");
        assert_eq!(
            Outcome::parse_line(&skipped.line()).unwrap().line(),
            skipped.line()
        );
        assert!(Outcome::parse_line("== python: pids [1]").is_none());
    }
}
