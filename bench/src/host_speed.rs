//! How fast the host runs on the day of a run: a fixed Python loop timed on the servers'
//! core before and after it. Every figure in time moves with the host, the peers' as much
//! as ours (`bench/profile.md`), so the report says how fast the host ran beside them.

use std::path::Path;

use crate::servers::pinned;

/// 3 M additions: the probe `bench/profile.md` has compared days with all along.
const LOOP: &str = "import time\nt = time.perf_counter()\ns = 0\nfor i in range(3_000_000):\n    s += i\nprint(time.perf_counter() - t)";

/// The probe before and after a run, in seconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostSpeed {
    pub before: Option<f64>,
    pub after: Option<f64>,
}

impl HostSpeed {
    /// The report's sentence on it.
    pub fn sentence(&self) -> String {
        if self.before.is_none() && self.after.is_none() {
            return "not measured".to_owned();
        }
        let seconds = |s: Option<f64>| s.map_or_else(|| "–".to_owned(), |s| format!("{s:.3} s"));
        format!(
            "a Python loop of 3 M additions (the fastest of three, on the servers' core) took {} \
             before the run and {} after it; figures in time move with it",
            seconds(self.before),
            seconds(self.after)
        )
    }
}

/// Seconds the loop takes on `cpus`, the fastest of three; `None` where python3 (or
/// taskset) cannot run.
pub fn probe(cpus: Option<&str>) -> Option<f64> {
    (0..3).filter_map(|_| once(cpus)).min_by(f64::total_cmp)
}

fn once(cpus: Option<&str>) -> Option<f64> {
    let output = pinned(cpus, Path::new("python3"))
        .args(["-c", LOOP])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe runs where the harness does (python3 is one of its peers' needs) and
    /// reads a plausible time.
    #[test]
    fn the_probe_times_the_loop() {
        let seconds = probe(None).expect("python3 runs the loop");
        assert!(seconds > 0.0 && seconds < 30.0, "{seconds}");
    }

    #[test]
    fn a_missing_figure_reads_as_a_dash() {
        let speed = HostSpeed {
            before: Some(0.1834),
            after: None,
        };
        assert!(
            speed
                .sentence()
                .contains("took 0.183 s before the run and – after it")
        );
    }
}
