//! How fast the host runs on the day of a run, measured on the servers' core before and
//! after it. Every figure in time moves with the host, the peers' as much as ours
//! (`bench/profile.md`), so the report says how fast the host ran beside them. Two probes,
//! because a shared host slows down in two ways: a slower core slows the Python loop, and
//! other tenants taking the shared cache slow the [`cache_walk`](crate::cache_walk), which
//! the loop cannot see.

use std::path::Path;

use crate::cache_walk::{CACHE_MIB, MEMORY_MIB, Walk};
use crate::servers::pinned;

/// 3 M additions: the probe `bench/profile.md` has compared days with all along.
const LOOP: &str = "import time\nt = time.perf_counter()\ns = 0\nfor i in range(3_000_000):\n    s += i\nprint(time.perf_counter() - t)";

/// Both probes at one moment; `None` where one could not run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reading {
    /// The Python loop's seconds, the fastest of three.
    pub loop_seconds: Option<f64>,
    pub walk: Option<Walk>,
}

/// The probes before and after a run.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostSpeed {
    pub before: Reading,
    pub after: Reading,
}

impl Reading {
    /// What `sb-bench run` prints when it starts, so a slow host can be stopped early.
    pub fn summary(&self) -> String {
        let seconds = self
            .loop_seconds
            .map_or_else(|| "–".to_owned(), |s| format!("{s:.3} s"));
        let walk = self.walk.map_or_else(
            || "–".to_owned(),
            |w| {
                format!(
                    "{:.1} ns vs {:.1} ns ({:.2} of memory's latency)",
                    w.cache_ns,
                    w.memory_ns,
                    w.cache_to_memory()
                )
            },
        );
        format!("the probe loop took {seconds}; the cache walk {walk}")
    }
}

impl HostSpeed {
    /// The report's sentence on it.
    pub fn sentence(&self) -> String {
        let (before, after) = (self.before, self.after);
        if before.loop_seconds.is_none()
            && after.loop_seconds.is_none()
            && before.walk.is_none()
            && after.walk.is_none()
        {
            return "not measured".to_owned();
        }
        let seconds = |s: Option<f64>| s.map_or_else(|| "–".to_owned(), |s| format!("{s:.3} s"));
        let ns = |w: Option<Walk>, f: fn(&Walk) -> f64| {
            w.map_or_else(|| "–".to_owned(), |w| format!("{:.1} ns", f(&w)))
        };
        let ratio = |w: Option<Walk>| {
            w.map_or_else(|| "–".to_owned(), |w| format!("{:.2}", w.cache_to_memory()))
        };
        format!(
            "a Python loop of 3 M additions (the fastest of three, on the servers' core) took {} \
             before the run and {} after it; a random walk over {} MiB took {} a step before \
             and {} after, against {} and {} over {} MiB, that is {} and {} of memory's \
             latency (about 0.1 when the shared cache is ours, near 1 when other tenants of \
             the host have it, which slows big servers more than the loop shows); figures in \
             time move with both",
            seconds(before.loop_seconds),
            seconds(after.loop_seconds),
            CACHE_MIB,
            ns(before.walk, |w| w.cache_ns),
            ns(after.walk, |w| w.cache_ns),
            ns(before.walk, |w| w.memory_ns),
            ns(after.walk, |w| w.memory_ns),
            MEMORY_MIB,
            ratio(before.walk),
            ratio(after.walk),
        )
    }
}

/// Both probes on `cpus`: the Python loop, and the cache walk run by `bench_bin`
/// (`sb-bench cache-walk`) so that it too walks on the servers' core.
pub fn probe(cpus: Option<&str>, bench_bin: &Path) -> Reading {
    Reading {
        loop_seconds: (0..3)
            .filter_map(|_| loop_once(cpus))
            .min_by(f64::total_cmp),
        walk: walk(cpus, bench_bin),
    }
}

fn loop_once(cpus: Option<&str>) -> Option<f64> {
    let output = pinned(cpus, Path::new("python3"))
        .args(["-c", LOOP])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

fn walk(cpus: Option<&str>, bench_bin: &Path) -> Option<Walk> {
    let output = pinned(cpus, bench_bin).arg("cache-walk").output().ok()?;
    if !output.status.success() {
        return None;
    }
    Walk::parse(String::from_utf8_lossy(&output.stdout).trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loop runs where the harness does (python3 is one of its peers' needs) and reads
    /// a plausible time. `tests/host_speed.rs` runs both probes through the binary.
    #[test]
    fn the_loop_is_timed() {
        let seconds = loop_once(None).expect("python3 runs the loop");
        assert!(seconds > 0.0 && seconds < 30.0, "{seconds}");
    }

    #[test]
    fn a_missing_figure_reads_as_a_dash() {
        let speed = HostSpeed {
            before: Reading {
                loop_seconds: Some(0.1834),
                walk: Some(Walk {
                    cache_ns: 130.5,
                    memory_ns: 195.8,
                }),
            },
            after: Reading::default(),
        };
        let sentence = speed.sentence();
        assert!(
            sentence.contains("took 0.183 s before the run and – after it"),
            "{sentence}"
        );
        assert!(
            sentence.contains("over 8 MiB took 130.5 ns a step before and – after, against 195.8 ns and – over 128 MiB, that is 0.67 and – of memory's"),
            "{sentence}"
        );
    }

    #[test]
    fn nothing_measured_says_so() {
        assert_eq!(HostSpeed::default().sentence(), "not measured");
    }
}
