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
        let walk = or_dash(self.walk, |w| {
            format!(
                "{:.1} ns vs {:.1} ns ({} of memory's latency)",
                w.cache_ns,
                w.memory_ns,
                ratio(w)
            )
        });
        format!(
            "the probe loop took {}; the cache walk {walk}",
            self.seconds()
        )
    }

    fn seconds(&self) -> String {
        or_dash(self.loop_seconds, |s| format!("{s:.3} s"))
    }

    fn ns(&self, latency: fn(&Walk) -> f64) -> String {
        or_dash(self.walk, |w| format!("{:.1} ns", latency(&w)))
    }

    fn ratio(&self) -> String {
        or_dash(self.walk, ratio)
    }

    fn is_empty(&self) -> bool {
        self.loop_seconds.is_none() && self.walk.is_none()
    }
}

fn ratio(walk: Walk) -> String {
    format!("{:.2}", walk.cache_to_memory())
}

/// A figure, or a dash where its probe could not run.
fn or_dash<T>(figure: Option<T>, show: impl FnOnce(T) -> String) -> String {
    figure.map_or_else(|| "–".to_owned(), show)
}

impl HostSpeed {
    /// The report's sentence on it.
    pub fn sentence(&self) -> String {
        let (before, after) = (self.before, self.after);
        if before.is_empty() && after.is_empty() {
            return "not measured".to_owned();
        }
        format!(
            "a Python loop of 3 M additions (the fastest of three, on the servers' core) took {} \
             before the run and {} after it; a random walk over {} MiB took {} a step before \
             and {} after, against {} and {} over {} MiB, that is {} and {} of memory's \
             latency (about 0.1 when the shared cache is ours, near 1 when other tenants of \
             the host have it, which slows big servers more than the loop shows); figures in \
             time move with both",
            before.seconds(),
            after.seconds(),
            CACHE_MIB,
            before.ns(|w| w.cache_ns),
            after.ns(|w| w.cache_ns),
            before.ns(|w| w.memory_ns),
            after.ns(|w| w.memory_ns),
            MEMORY_MIB,
            before.ratio(),
            after.ratio(),
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
