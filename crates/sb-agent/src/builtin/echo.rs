//! `echo`: completes with the text it was sent.

use async_trait::async_trait;

use crate::api::{Agent, AgentDescriptor, AgentError, Reporter, TaskContext, text_artifact};

#[derive(Debug, Default)]
pub struct EchoAgent;

#[async_trait]
impl Agent for EchoAgent {
    fn describe(&self) -> AgentDescriptor {
        AgentDescriptor {
            description:
                "Replies with the text it was sent: a task that completes with one artifact.".into(),
            skills: vec![super::skill(
                "echo",
                "Echo",
                "Returns the message text unchanged",
                &["echo", "test"],
                &["hello"],
            )],
            input_modes: super::text_modes(),
            output_modes: super::text_modes(),
        }
    }

    async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
        let text = ctx.message.text();
        reporter.working(None).await?;
        reporter
            .artifact(text_artifact("echo", "echo", text.clone()), false, true)
            .await?;
        reporter.complete(Some(text)).await?;
        Ok(())
    }
}
