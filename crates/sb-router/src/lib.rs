//! The fleet's routing agent (`kind = "router"`, served at `/agents/fleet/` by
//! default): its card lists every skill of the fleet; a message to it names a skill
//! (`metadata.skill`, or the fleet guide's `metadata.skillHint`) or is matched to one by
//! its text, and goes on as a new task to an agent that declares the skill, chosen by
//! the fleet's health. The routing agent's own task mirrors that task (its progress,
//! questions, artifacts and end), so the caller follows it like any other; a task that
//! fails or is rejected is sent on to another agent with the skill, at most
//! `max_reroutes` times (seed I6's bounded execution), and every attempt is recorded.
//!
//! # Layout
//! - [`access`]: [`RouterAccess`], what the routing agent works through (the gateway's
//!   operations, the fleet's health), bound once the gateway is built.
//! - [`routing`]: [`Routing`], what a routed task keeps of its routing (durable, in its
//!   metadata): the skill, the principal, every attempt.
//! - [`choice`]: which agents may take a skill, and the pick among them by health.
//! - [`agent`]: [`RouterAgent`], the [`sb_agent::Agent`]: the skill decided when the
//!   conversation opens, and each turn's attempts, followed and mirrored.
//!
//! Where it runs: its turns call the gateway's operations in process, so they run in
//! gateway processes: in the all-in-one's agent host, and in the split deployment in a
//! worker session each gateway opens to the task-state service (leased and reassigned
//! like any worker's turns).

pub mod access;
pub mod agent;
pub mod choice;
pub mod routing;

pub use access::{RouterAccess, RouterHandle};
pub use agent::RouterAgent;
pub use routing::{Attempt, Routing};
