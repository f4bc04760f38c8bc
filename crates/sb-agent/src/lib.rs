//! The agent API: what an agent implements ([`Agent`]), what it is given
//! ([`TaskContext`]) and how it reports ([`Reporter`]), plus the in-process host that
//! runs agents for tasks and the built-in agents.
//!
//! # Layout
//! - [`api`]: the trait, the context and the reporter. Agents are invoked once per user
//!   message (the first one, and each answer to an input request) with the task's full
//!   history, so an agent keeps no state between turns and survives restarts.
//! - `outbox`: how a reporter pipelines an agent's updates into as few commits as
//!   the store's pace allows.
//! - [`host`]: [`AgentHost`], which owns each run (never the HTTP request), watches for
//!   cancellation and fails runs that end without a final state. A new task's agent
//!   starts while the task's creation is on its way to the store, so the creation and
//!   the agent's first reports are one commit
//!   ([`AgentHost::create_with_first_reports`]).
//! - [`turn`]: one agent turn, wherever it runs ([`turn::run_turn`]), and the one place
//!   a task its turn left running is failed ([`turn::fail_unsettled`]).
//! - [`roster`]: [`Roster`], the agents a process serves, replaced whole when the
//!   registry changes.
//! - [`runner`]: [`TurnRunner`], how the edge starts turns wherever agents run.
//! - [`builtin`]: `echo`, `consolidate`, `conformance` and `bench`.

pub mod api;
pub mod builtin;
pub mod host;
mod outbox;
pub mod roster;
pub mod runner;
#[cfg(test)]
mod testing;
pub mod turn;

pub use api::*;
/// The attribute an [`Agent`] implementation needs (its `execute` is an async trait method).
pub use async_trait::async_trait;
pub use host::AgentHost;
pub use roster::Roster;
pub use runner::{TurnOver, TurnRunner, read_until_settled, task_after_turn, turn_over_signal};
