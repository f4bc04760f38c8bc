//! The fleet's agents as tools for LLMs, over the Model Context Protocol (the official
//! Rust SDK, `rmcp`): each agent of the registry is a tool `A2A_<agent>` whose
//! description comes from its card; a call sends the agent a message and answers the
//! way the guide for LLMs calling `A2A_` tools expects (`kind: message` with
//! `contents`, or `kind: task` with `taskId`, `contextId`, `status.state`, the question
//! when it asks one, the artifacts once completed), waiting a bounded time for an end
//! or a question. Identifiers an LLM did not get from an answer are refused. A question
//! is put to the person at the client when it takes elicitations (during the call, or,
//! on 2026-07-28, in an input-required result it calls again with); work that outlasts
//! the wait comes back as an MCP task to a client that declared the tasks extension,
//! which then polls, answers and cancels the A2A task through `tasks/*`.
//!
//! The server is an A2A client of a Switchboard (its registry and agent endpoints), so
//! the same code serves `switchboard mcp --url …` over stdio and `/mcp` on a gateway,
//! where each call carries the caller's own credentials to the agent it reaches.
//!
//! # Layout
//! - [`catalog`]: the agents as tools (names, descriptions, the input schema), and
//!   where the list comes from (the registry followed in process, or polled over
//!   HTTP), each change announced to the clients.
//! - [`call`]: one tool call: its arguments checked, the message sent, the task waited
//!   for.
//! - [`answer`]: the answers shaped as the guide for LLMs describes them.
//! - [`question`]: an agent's question as an MCP form, and the answer read back.
//! - [`rounds`]: a question returned in an input-required result on 2026-07-28, and the
//!   client's retry with the answer.
//! - [`tasks`]: MCP tasks standing for A2A tasks (ids, states, `tasks/*`).
//! - [`server`]: [`FleetTools`], the MCP server handler, and the two transports.
//! - [`refusals`]: request bodies `/mcp` cannot read, answered as JSON-RPC errors.

pub mod answer;
pub mod call;
pub mod catalog;
pub mod question;
pub mod refusals;
pub mod rounds;
pub mod server;
pub mod tasks;

pub use catalog::{Catalog, CatalogFeed};
pub use server::{FleetTools, Settings, http_service, serve_stdio};
