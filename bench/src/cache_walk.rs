//! A random pointer walk: how long one dependent load takes over a working set of a given
//! size. Over a set the host's shared cache should hold it reads the cache's latency;
//! when other tenants of the host have taken that cache, it reads close to memory's. Busy
//! servers (a Python interpreter, V8, Switchboard's heap) then run at a fraction of their
//! speed while a loop that stays in L1, like `host_speed`'s Python loop, runs as fast
//! as ever.

use std::hint::black_box;
use std::time::Instant;

/// A quarter of the 32 MiB L3 the benchmark machine reports: the cache should hold it.
pub const CACHE_MIB: usize = 8;
/// Four times that L3: memory's latency, whatever the cache does.
pub const MEMORY_MIB: usize = 128;

/// Nanoseconds per step of the walk over both sets, the fastest of three walks each (the
/// first also brings the set into the cache, when it fits).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Walk {
    pub cache_ns: f64,
    pub memory_ns: f64,
}

impl Walk {
    /// Walks a `cache_mib` set and a `memory_mib` one: about two seconds at the default
    /// sizes, most of it building the larger table.
    pub fn measure(cache_mib: usize, memory_mib: usize) -> Walk {
        Walk {
            cache_ns: nanos_per_step(cache_mib << 20, 2_000_000),
            memory_ns: nanos_per_step(memory_mib << 20, 1_000_000),
        }
    }

    /// How close the cache-sized walk came to memory's latency: ~0.1 when the cache was
    /// ours, near 1 when other tenants had it.
    pub fn cache_to_memory(&self) -> f64 {
        self.cache_ns / self.memory_ns
    }

    /// The line `sb-bench cache-walk` prints and [`Walk::parse`] reads.
    pub fn line(&self) -> String {
        format!("{:.1} {:.1}", self.cache_ns, self.memory_ns)
    }

    pub fn parse(line: &str) -> Option<Walk> {
        let mut figures = line.split_whitespace().map(str::parse::<f64>);
        let walk = Walk {
            cache_ns: figures.next()?.ok()?,
            memory_ns: figures.next()?.ok()?,
        };
        figures.next().is_none().then_some(walk)
    }
}

/// Nanoseconds per step over a `bytes`-sized [`cycle`], the fastest of three walks (the
/// first also brings the table into the cache, when it fits).
fn nanos_per_step(bytes: usize, steps: u32) -> f64 {
    let next = cycle(u32::try_from(bytes / size_of::<u32>()).unwrap_or(u32::MAX));
    (0..3)
        .map(|_| {
            let mut at = 0_u32;
            let started = Instant::now();
            for _ in 0..steps {
                at = next[at as usize];
            }
            black_box(at);
            started.elapsed().as_secs_f64() * 1e9 / f64::from(steps)
        })
        .fold(f64::INFINITY, f64::min)
}

/// A table whose `slot -> next[slot]` visits every slot once, in random order, so that each
/// load of the walk depends on the one before and no prefetcher can guess the next.
fn cycle(slots: u32) -> Vec<u32> {
    let mut next: Vec<u32> = (0..slots.max(2)).collect();
    let mut rng = fastrand::Rng::with_seed(1);
    // Sattolo's shuffle: unlike Fisher–Yates, `i` never stays in place, which leaves one
    // cycle through every slot rather than several shorter ones.
    for i in (1..next.len()).rev() {
        next.swap(i, rng.usize(..i));
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_one_cycle_through_every_slot() {
        for slots in [2_u32, 3, 17, 4096] {
            let next = cycle(slots);
            let mut seen = vec![false; next.len()];
            let mut at = 0_u32;
            for _ in 0..slots {
                assert!(
                    !seen[at as usize],
                    "slot {at} came round early with {slots} slots"
                );
                seen[at as usize] = true;
                at = next[at as usize];
            }
            assert_eq!(
                at, 0,
                "the walk is back where it started after {slots} steps"
            );
            assert!(
                seen.iter().all(|&s| s),
                "every one of {slots} slots was visited"
            );
        }
    }

    #[test]
    fn a_set_that_fits_in_l1_walks_faster_than_memory() {
        let small = nanos_per_step(16 << 10, 1_000_000);
        let large = nanos_per_step(16 << 20, 200_000);
        assert!(small > 0.0 && small < large, "{small} ns vs {large} ns");
    }

    #[test]
    fn the_printed_line_reads_back() {
        let walk = Walk {
            cache_ns: 14.5,
            memory_ns: 190.0,
        };
        assert_eq!(walk.line(), "14.5 190.0");
        assert_eq!(Walk::parse(&walk.line()), Some(walk));
        assert_eq!(Walk::parse("14.2"), None);
        assert_eq!(Walk::parse("14.2 190 3"), None);
        assert_eq!(Walk::parse("fast slow"), None);
    }
}
