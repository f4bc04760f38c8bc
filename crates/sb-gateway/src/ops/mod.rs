//! The A2A operations, independent of binding and version: every binding decodes its
//! request into these calls and encodes what they return.
//!
//! - `send`: SendMessage and SendStreamingMessage: a task created or resumed, its
//!   agent's turn started, and the answer (blocking, non-blocking or streamed).
//! - `streams`: the frames of a stream: snapshot then live events, where a stream
//!   ends, SubscribeToTask with the resume cursor.
//! - `tasks`: GetTask, ListTasks, CancelTask.
//! - `push`: the push-notification config operations.
//! - `card`: GetExtendedAgentCard.

mod card;
mod push;
mod send;
mod streams;
mod tasks;

use futures::stream::BoxStream;
use sb_protocol::{A2AError, StreamResponse};

pub use card::extended_card;
pub use push::{create_push_config, delete_push_config, get_push_config, list_push_configs};
pub use send::{Sent, send, send_streaming};
pub use streams::{RESUME_EXTENSION, Subscription, subscribe, tag_with_seq, until_end};
pub use tasks::{cancel_task, get_task, list_tasks};

/// One frame of an outgoing stream: the event and the sequence number it carries as the
/// SSE `id` (0 for a message reply, which is no task event and gets no id).
#[derive(Clone, Debug)]
pub struct Frame {
    pub seq: u64,
    /// Shared with the bus and every other stream of the task.
    pub event: std::sync::Arc<StreamResponse>,
    /// The event's 1.0 JSON, shared with every other stream sending the same event.
    pub json: sb_store::EventJson,
}

pub type FrameStream = BoxStream<'static, Result<Frame, A2AError>>;
