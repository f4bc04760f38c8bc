//! Ceremonies: scheduled invocations of the fleet's agents (the fleet guide's name).
//!
//! - [`definition`]: a ceremony, its checks, how an update applies.
//! - [`book`]: the ceremonies in force (files' and API's) and who may change which.
//! - [`files`]: ceremonies defined in a directory of YAML files, read again on change.
//! - [`schedule`]: which firings are due, claimed once across replicas, with catch-up.
//! - [`runs`]: each run (or missed firing) kept with its tasks and their outcomes.
//! - [`notify`]: each run's notice posted to the ceremony's `notifyChannel`, once.
//! - `stored`: documents several replicas change (read, change, compare-and-set).

pub mod book;
pub mod definition;
pub mod files;
pub mod notify;
pub mod runs;
pub mod schedule;
mod stored;
