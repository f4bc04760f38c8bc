//! `conformance`: the behaviours the A2A TCK expects of a system under test.

use async_trait::async_trait;

use crate::api::*;

#[derive(Debug, Default)]
pub struct ConformanceAgent;

#[async_trait]
impl Agent for ConformanceAgent {
    fn describe(&self) -> AgentDescriptor {
        AgentDescriptor {
            description: "Implements the behaviours the A2A conformance suite (TCK) drives.".into(),
            skills: vec![super::skill(
                "conformance",
                "Conformance",
                "TCK system-under-test behaviours",
                &["tck"],
                &[],
            )],
            input_modes: super::text_modes(),
            output_modes: super::text_modes(),
        }
    }

    async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
        let text = ctx.message.text();
        reporter.working(None).await?;
        reporter
            .artifact(
                text_artifact("response", "response", text.clone()),
                false,
                true,
            )
            .await?;
        reporter.complete(Some(text)).await?;
        Ok(())
    }
}
