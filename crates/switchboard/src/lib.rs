//! The `switchboard` binary's library: command line, configuration and the wiring of the
//! services. `main.rs` only calls [`main`]; tests drive [`serve()`] directly.
//!
//! # Layout
//! - [`cli`]: the command line (`serve`, `worker`, `health`), logging and signals;
//!   `client_cli`: the A2A client commands (`card`, `send`, `task`, …; docs/cli.md).
//! - [`config`]: the configuration tree and its pure loader.
//! - [`serve()`]: the all-in-one deployment (the default), running until shutdown;
//!   [`Switchboard`] runs it inside a program of your own, with agents written in Rust.
//! - [`split`]: any subset of the services, sharing state through Redis and calling
//!   each other over the internal gRPC API; [`worker`] runs agents as a remote worker,
//!   and `worker_fleet` the registry's bridged agents on it, as they join and leave.
//! - `wiring`: what both deployments build the same way (the task-state service, the
//!   dispatcher, deadlines, a gateway's state, serving until shutdown).
//! - `agents`: the kinds of agent a deployment runs and their code, authentication;
//!   `fleet`: the registry in a deployment (its signer, its routes) and the follower
//!   that keeps the served agents and their authentication in step with it.
//! - `ceremonies`: scheduled invocations on a gateway (their API and firing loop).
//! - `mcp`: the fleet's agents as MCP tools (`/mcp`, `switchboard mcp` over stdio).
//! - `router`: the routing agent bound to a gateway (and, split, run in its worker
//!   session).
//! - `backend`, `observe`: where state lives (the store and bus), metrics.
//! - `mux`: HTTP and gRPC on one port, routed by content type; `http`: the server loop.

mod agents;
mod backend;
mod bridges;
mod ceremonies;
pub mod cli;
mod client_cli;
pub mod config;
mod fleet;
mod http;
mod mcp;
mod mux;
mod observe;
mod router;
pub mod serve;
pub mod split;
mod wiring;
pub mod worker;
mod worker_fleet;

pub use cli::main;
/// The agent API, for programs that embed Switchboard with agents of their own.
pub use sb_agent;
pub use serve::{Switchboard, serve};
