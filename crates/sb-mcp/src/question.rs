//! An agent's question as an MCP form with one field, `answer`, put to the person at the
//! client during a tool call (`elicitation/create`, [`crate::server`]).

use serde::Deserialize;

/// What the person at the client is asked for: the answer to an agent's question.
#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Reply {
    /// Your answer to the agent's question.
    pub answer: String,
}

rmcp::elicit_safe!(Reply);
