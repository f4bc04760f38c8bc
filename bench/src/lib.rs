//! The benchmark harness (`scripts/bench.sh` runs it): measures Switchboard against the
//! official A2A SDK servers and a bare axum ceiling, side by side, in one run.
//!
//! - [`http`]: the load generator's connections (hyper, one per worker);
//! - [`a2a`]: the A2A 1.0 JSON-RPC requests and what answers must contain;
//! - [`scenarios`]: B1–B6, each returning [`stats::Outcome`]s;
//! - [`servers`]: starting each server pinned to its core, knowing its processes;
//! - [`suite`]: the whole run, B7 scaling included; [`bridged`]: B8, the bridge's cost;
//!   [`report`]: `docs/performance.md`;
//! - [`ceiling`]: the fixed-answer axum server; [`procstat`]: CPU and memory from `/proc`;
//!   [`host_speed`]: how fast the host ran on the day, with [`cache_walk`] for the shared
//!   cache.

pub mod a2a;
pub mod bridged;
pub mod cache_walk;
pub mod ceiling;
pub mod host_speed;
pub mod http;
pub mod procstat;
pub mod report;
pub mod scenarios;
pub mod servers;
pub mod stats;
pub mod suite;
