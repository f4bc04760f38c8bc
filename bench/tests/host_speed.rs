//! The host-speed probes as `sb-bench run` takes them: the Python loop, and the cache walk
//! through the binary's own `cache-walk` subcommand, whose line the harness reads back.

use std::path::Path;
use std::process::Command;

use sb_bench::cache_walk::Walk;
use sb_bench::host_speed::probe;

const BIN: &str = env!("CARGO_BIN_EXE_sb-bench");

/// Small sets: at the default 128 MiB a debug build takes ~13 s to build the table.
#[test]
fn the_cache_walk_prints_a_line_the_harness_reads() {
    let output = Command::new(BIN)
        .args(["cache-walk", "--cache-mib", "1", "--memory-mib", "16"])
        .output()
        .expect("sb-bench runs");
    assert!(output.status.success(), "{output:?}");
    let line = String::from_utf8_lossy(&output.stdout);
    let walk = Walk::parse(line.trim()).unwrap_or_else(|| panic!("not a walk line: {line:?}"));
    // A dependent load takes at least a cycle and, even from memory on a busy host, well
    // under ten microseconds.
    for ns in [walk.cache_ns, walk.memory_ns] {
        assert!(ns > 0.1 && ns < 10_000.0, "{walk:?}");
    }
}

/// The loop runs where the harness does (python3 is one of its peers' needs) and reads a
/// plausible time, with or without the walk.
#[test]
fn a_probe_without_the_walk_still_times_the_loop() {
    let reading = probe(None, Path::new("/nonexistent/sb-bench"));
    assert!(reading.walk.is_none());
    let seconds = reading.loop_seconds.expect("python3 runs the loop");
    assert!(seconds > 0.0 && seconds < 30.0, "{seconds}");
    let summary = reading.summary();
    assert!(summary.contains("the cache walk –"), "{summary}");
}

#[test]
fn a_set_too_large_to_address_is_refused_before_any_allocation() {
    let output = Command::new(BIN)
        .args(["cache-walk", "--memory-mib", "99999999999"])
        .output()
        .expect("sb-bench runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not in 1..=4096"), "{stderr}");
}
