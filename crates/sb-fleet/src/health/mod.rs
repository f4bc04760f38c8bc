//! Fleet health: outcomes counted per agent and skill into time buckets shared by every
//! replica, read back as rolling windows.
//!
//! - [`window`]: bucket spans, bucket keys, the 1 h and 24 h windows;
//! - [`skill_names`]: the name a task's skill is counted under, a bounded number per
//!   agent;
//! - [`tally`]: the summed outcomes of one agent and skill, and their counter fields;
//! - [`recorder`]: [`OutcomeRecorder`](recorder::OutcomeRecorder), which counts in
//!   memory and flushes to the store;
//! - [`metrics`]: the same outcomes as Prometheus metrics;
//! - [`report`]: the `/fleet/health` report.

pub mod metrics;
pub mod recorder;
pub mod report;
pub mod skill_names;
pub mod tally;
pub mod window;
