//! `conformance`: the behaviours the A2A TCK expects of a system under test.
//!
//! The 1.0 TCK (`scenarios/*.feature`) picks a behaviour by `messageId` prefix; every one
//! of its ids starts with `tck-`. The 0.3 TCK sends other ids and expects a task that goes
//! working and stays there until canceled or continued (its `FireAndForget` reference
//! agent). Prefixes are checked in the TCK's order: longer prefixes that share a start
//! (`tck-artifact-file-url` before `tck-artifact-file`) come first.

use std::time::Duration;

use async_trait::async_trait;
use sb_protocol::{Artifact, Message, Part, PartContent, Role, new_id};
use serde_json::json;

use crate::api::*;

#[derive(Debug, Clone)]
pub struct ConformanceAgent {
    /// How long `test-resubscribe-message-id` keeps its task busy before its second
    /// update (the 0.3 TCK resubscribes within twice its streaming timeout).
    pub resubscribe_pause: Duration,
}

impl Default for ConformanceAgent {
    fn default() -> Self {
        ConformanceAgent {
            resubscribe_pause: Duration::from_secs(3),
        }
    }
}

/// The behaviours, by messageId prefix, in matching order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Behaviour {
    StreamArtifactChunked,
    Resubscribe,
    StreamArtifactText,
    StreamArtifactFile,
    StreamOrdering,
    ArtifactFileUrl,
    MessageResponse,
    InputRequired,
    CompleteTask,
    ArtifactText,
    ArtifactFile,
    ArtifactData,
    RejectTask,
    Stream001,
    Stream002,
    Stream003,
    /// Any other `tck-` id: complete.
    OtherTck,
    /// Not a 1.0 TCK id: the 0.3 TCK's fire-and-forget task.
    FireAndForget,
}

const PREFIXES: [(&str, Behaviour); 16] = [
    (
        "tck-stream-artifact-chunked",
        Behaviour::StreamArtifactChunked,
    ),
    ("test-resubscribe-message-id", Behaviour::Resubscribe),
    ("tck-stream-artifact-text", Behaviour::StreamArtifactText),
    ("tck-stream-artifact-file", Behaviour::StreamArtifactFile),
    ("tck-stream-ordering-001", Behaviour::StreamOrdering),
    ("tck-artifact-file-url", Behaviour::ArtifactFileUrl),
    ("tck-message-response", Behaviour::MessageResponse),
    ("tck-input-required", Behaviour::InputRequired),
    ("tck-complete-task", Behaviour::CompleteTask),
    ("tck-artifact-text", Behaviour::ArtifactText),
    ("tck-artifact-file", Behaviour::ArtifactFile),
    ("tck-artifact-data", Behaviour::ArtifactData),
    ("tck-reject-task", Behaviour::RejectTask),
    ("tck-stream-001", Behaviour::Stream001),
    ("tck-stream-002", Behaviour::Stream002),
    ("tck-stream-003", Behaviour::Stream003),
];

fn behaviour(message_id: &str) -> Behaviour {
    for (prefix, behaviour) in PREFIXES {
        if message_id.starts_with(prefix) {
            return behaviour;
        }
    }
    if message_id.starts_with("tck-") {
        Behaviour::OtherTck
    } else {
        Behaviour::FireAndForget
    }
}

fn artifact(parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: new_id(),
        name: Some("response".into()),
        description: None,
        parts,
        metadata: None,
        extensions: Vec::new(),
    }
}

fn file_part(content: PartContent) -> Part {
    Part {
        content,
        metadata: None,
        filename: Some("output.txt".into()),
        media_type: Some("text/plain".into()),
    }
}

async fn finish_with_artifact(reporter: &Reporter, parts: Vec<Part>) -> Result<(), AgentError> {
    reporter.artifact(artifact(parts), false, true).await?;
    reporter.complete(None).await?;
    Ok(())
}

async fn stream_with_artifact(reporter: &Reporter, parts: Vec<Part>) -> Result<(), AgentError> {
    reporter.working(None).await?;
    finish_with_artifact(reporter, parts).await
}

#[async_trait]
impl Agent for ConformanceAgent {
    fn describe(&self) -> AgentDescriptor {
        AgentDescriptor {
            description: "Implements the behaviours the A2A conformance suite (TCK) drives, chosen by messageId prefix.".into(),
            skills: vec![super::skill("conformance", "Conformance", "TCK system-under-test behaviours", &["tck", "conformance"], &["tck-complete-task"])],
            input_modes: super::text_modes(),
            output_modes: super::text_modes(),
        }
    }

    fn direct_reply(&self, message: &Message) -> Option<Message> {
        (behaviour(&message.message_id) == Behaviour::MessageResponse).then(|| Message {
            role: Role::Agent,
            ..Message::agent_text("Direct message response")
        })
    }

    async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
        let text = |t: &str| vec![Part::text(t)];
        match behaviour(&ctx.message.message_id) {
            Behaviour::CompleteTask => {
                drop(reporter.complete(Some("Hello from TCK".into())).await?)
            }
            Behaviour::ArtifactText => {
                finish_with_artifact(&reporter, text("Generated text content")).await?
            }
            Behaviour::ArtifactFile => {
                finish_with_artifact(
                    &reporter,
                    vec![file_part(PartContent::Raw(b"tck".to_vec()))],
                )
                .await?
            }
            Behaviour::ArtifactFileUrl => {
                let url = PartContent::Url("https://example.com/output.txt".into());
                finish_with_artifact(&reporter, vec![file_part(url)]).await?;
            }
            Behaviour::ArtifactData => {
                let data = PartContent::Data(json!({"key": "value", "count": 42}));
                finish_with_artifact(
                    &reporter,
                    vec![Part {
                        content: data,
                        metadata: None,
                        filename: None,
                        media_type: None,
                    }],
                )
                .await?;
            }
            Behaviour::InputRequired => drop(
                reporter
                    .input_required("Please provide more input".into())
                    .await?,
            ),
            Behaviour::RejectTask => drop(reporter.reject("rejected".into()).await?),
            Behaviour::Stream001 => {
                stream_with_artifact(&reporter, text("Stream hello from TCK")).await?
            }
            Behaviour::Stream002 => drop(reporter.complete(Some("Stream complete".into())).await?),
            Behaviour::Stream003 => {
                stream_with_artifact(&reporter, text("Stream task lifecycle")).await?
            }
            Behaviour::StreamOrdering => {
                stream_with_artifact(&reporter, text("Ordered output")).await?
            }
            Behaviour::StreamArtifactText => {
                stream_with_artifact(&reporter, text("Streamed text content")).await?
            }
            Behaviour::StreamArtifactFile => {
                stream_with_artifact(
                    &reporter,
                    vec![file_part(PartContent::Raw(b"tck".to_vec()))],
                )
                .await?;
            }
            Behaviour::StreamArtifactChunked => {
                reporter.working(None).await?;
                let mut chunk = artifact(text("chunk-1 "));
                reporter.artifact(chunk.clone(), true, false).await?;
                chunk.parts = text("chunk-2");
                reporter.artifact(chunk, true, true).await?;
                reporter.complete(None).await?;
            }
            Behaviour::Resubscribe => {
                reporter.working(None).await?;
                tokio::select! {
                    () = tokio::time::sleep(self.resubscribe_pause) => {}
                    () = ctx.cancel.cancelled() => return Ok(()),
                }
                reporter.working(Some("still working".into())).await?;
                reporter.keep_open();
            }
            Behaviour::MessageResponse | Behaviour::OtherTck => {
                let reply = format!("Unhandled messageId prefix: {}", ctx.message.message_id);
                reporter.complete(Some(reply)).await?;
            }
            Behaviour::FireAndForget => {
                reporter.working(None).await?;
                reporter.keep_open();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_in_tck_order() {
        assert_eq!(
            behaviour("tck-artifact-file-url-1234"),
            Behaviour::ArtifactFileUrl
        );
        assert_eq!(behaviour("tck-artifact-file-1234"), Behaviour::ArtifactFile);
        assert_eq!(
            behaviour("tck-stream-artifact-chunked-x"),
            Behaviour::StreamArtifactChunked
        );
        assert_eq!(behaviour("tck-send-003"), Behaviour::OtherTck);
        assert_eq!(
            behaviour("test-resubscribe-message-id-9"),
            Behaviour::Resubscribe
        );
        assert_eq!(behaviour("msg-123"), Behaviour::FireAndForget);
    }
}
