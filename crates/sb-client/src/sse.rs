//! A streaming answer's body read as server-sent events (framing by
//! `eventsource-stream`), each event's data turned into a [`StreamItem`] by the
//! binding's reader. A body that is not `text/event-stream` is read as the binding's
//! error answer instead.

use eventsource_stream::Eventsource;
use futures::StreamExt;
use sb_protocol::StreamResponse;

use crate::transport::{CallError, EventStream, StreamItem};
use crate::wire::Tap;

/// The events of `response` (an answer to `call`), each shown to `tap` and read by
/// `read` from its data.
pub fn events(
    response: reqwest::Response,
    call: String,
    tap: Tap,
    read: impl Fn(&str) -> Result<StreamResponse, CallError> + Send + 'static,
) -> EventStream {
    response
        .bytes_stream()
        .eventsource()
        .map(move |event| {
            let event =
                event.map_err(|e| CallError::Transport(format!("the stream broke: {e}")))?;
            let id = Some(event.id).filter(|id| !id.is_empty());
            tap.event(&call, id.as_deref(), &event.data);
            Ok(StreamItem {
                id,
                event: read(&event.data)?,
            })
        })
        .boxed()
}

/// Whether `response` carries an event stream (else it is an error answer).
pub fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}
