//! Reading a reply back: a status as the failure it stands for (the server's
//! [`A2AError`], or the call not getting through), a reply message in the model, and a
//! stream's events, each with the seq a Switchboard server tags it with as its id.

use futures::StreamExt;
use sb_a2a_grpc::{convert, pb, refusal};
use sb_protocol::card::RESUME_EXTENSION;
use sb_protocol::{A2AError, StreamResponse};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::transport::{CallError, EventStream, StreamItem};

use super::GrpcTransport;

impl GrpcTransport {
    pub(super) fn events(
        &self,
        method: &'static str,
        events: tonic::Streaming<pb::StreamResponse>,
    ) -> EventStream {
        let url = self.chosen.url.clone();
        let tap = self.tap.clone();
        events
            .map(move |item| {
                let message = item.map_err(|status| refused(method, &url, &status))?;
                tap.message(method, false, &message);
                let event: StreamResponse = to_model(method, &message)?;
                Ok(StreamItem {
                    id: seq_of(&event),
                    event,
                })
            })
            .boxed()
    }
}

/// The failure a status stands for: the server's A2A error, or the call not getting
/// through.
pub(super) fn refused(method: &str, url: &str, status: &tonic::Status) -> CallError {
    match refusal::error_of(status) {
        Some(error) => CallError::A2A(error),
        None => CallError::Transport(format!(
            "{method} to {url}: {:?}: {}",
            status.code(),
            status.message()
        )),
    }
}

/// A reply message in the model.
pub(super) fn to_model<M: Serialize, T: DeserializeOwned>(
    method: &str,
    message: &M,
) -> Result<T, CallError> {
    convert::to_model(message).map_err(|e: A2AError| {
        CallError::Transport(format!("{method}: an unreadable result: {}", e.message))
    })
}

/// The seq a Switchboard server tags a task event with under the resume extension.
fn seq_of(event: &StreamResponse) -> Option<String> {
    let metadata = match event {
        StreamResponse::Task(task) => &task.metadata,
        StreamResponse::StatusUpdate(update) => &update.metadata,
        StreamResponse::ArtifactUpdate(update) => &update.metadata,
        StreamResponse::Message(_) => return None,
    };
    let seq = metadata.as_ref()?.get(RESUME_EXTENSION)?.get("seq")?;
    seq.as_u64().map(|seq| seq.to_string())
}
