//! The `switchboard` binary's library: command line, configuration and the wiring of the
//! services. `main.rs` only calls [`main`]; tests drive [`serve`] directly.
//!
//! # Layout
//! - [`cli`]: the command line (`serve`, `health`), logging and signals.
//! - [`config`]: the configuration tree and its pure loader.
//! - [`serve`]: builds the store, the services and the gateway, and runs until shutdown.

pub mod cli;
pub mod config;
pub mod serve;

pub use cli::main;
pub use serve::serve;
