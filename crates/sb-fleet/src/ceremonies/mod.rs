//! Ceremonies: scheduled invocations of the fleet's agents (the fleet guide's name).
//!
//! - [`definition`]: a ceremony, its checks, how an update applies.
pub mod definition;
