//! An agent written in Rust, served in process by Switchboard with everything
//! `switchboard serve` gives the built-in ones.
//!
//! ```text
//! cargo run --release -p switchboard --example embedded_agent
//! curl -s localhost:8080/agents/shout/.well-known/agent-card.json
//! curl -s localhost:8080/agents/shout -H 'content-type: application/json' -H 'A2A-Version: 1.0' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":
//!        {"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'
//! ```
//!
//! The configuration is `switchboard serve`'s (a file in `SWITCHBOARD_CONFIG`, else the
//! defaults); an `[[agents]]` entry named `shout` (kind `embedded`) would set its card
//! and auth.

use switchboard::sb_agent::async_trait;
use switchboard::sb_agent::text_artifact;
use switchboard::sb_agent::{Agent, AgentDescriptor, AgentError, Reporter, TaskContext};

/// Answers with the text it was sent, in capitals (`tests/embedded.rs` serves it too).
#[derive(Debug)]
pub(crate) struct Shout;

#[async_trait]
impl Agent for Shout {
    fn describe(&self) -> AgentDescriptor {
        AgentDescriptor {
            description: "Answers with the text it was sent, in capitals.".into(),
            skills: Vec::new(),
            input_modes: vec!["text/plain".into()],
            output_modes: vec!["text/plain".into()],
        }
    }

    async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
        let loud = ctx.message.text().to_uppercase();
        reporter.working(None).await?;
        reporter
            .artifact(text_artifact("shout", "shout", loud.clone()), false, true)
            .await?;
        reporter.complete(Some(loud)).await?;
        Ok(())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let file = std::env::var("SWITCHBOARD_CONFIG")
        .ok()
        .map(std::fs::read_to_string)
        .transpose()?;
    let config = switchboard::config::load(file.as_deref(), Default::default())
        .map_err(anyhow::Error::msg)?;
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    eprintln!("serving /agents/shout on http://{}", listener.local_addr()?);
    switchboard::Switchboard::new(config)
        .agent("shout", Shout)
        .serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
