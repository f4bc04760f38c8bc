//! Encoding results for each dialect, and SSE framing (axum's `Sse`, which does the
//! `data:`/`id:` framing and keep-alive comments).

use std::convert::Infallible;
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use sb_protocol::v03::{self, Dialect03};
use sb_protocol::{A2AError, SendMessageResponse, Task, TaskPushNotificationConfig, Version};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::ops::{Frame, FrameStream};

/// The JSON shape a response is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    V1,
    V03(Dialect03),
}

impl Wire {
    pub fn version(self) -> Version {
        match self {
            Wire::V1 => Version::V1_0,
            Wire::V03(_) => Version::V0_3,
        }
    }

    pub fn task(self, task: &Task) -> Value {
        match self {
            Wire::V1 => serde_json::to_value(task).unwrap_or(Value::Null),
            Wire::V03(d) => v03::task_to_v03(task, d),
        }
    }

    /// A SendMessage result: 1.0 and 0.3 REST wrap it in `{"task":…}`; 0.3 JSON-RPC
    /// returns the bare task with `kind`.
    pub fn send_result(self, result: &SendMessageResponse) -> Value {
        match (self, result) {
            (Wire::V03(Dialect03::KindJson), SendMessageResponse::Task(task)) => {
                v03::task_to_v03(task, Dialect03::KindJson)
            }
            (Wire::V03(Dialect03::KindJson), SendMessageResponse::Message(m)) => {
                v03::message_to_v03(m, Dialect03::KindJson)
            }
            (Wire::V1, result) => serde_json::to_value(result).unwrap_or(Value::Null),
            (Wire::V03(d), SendMessageResponse::Task(task)) => {
                json!({"task": v03::task_to_v03(task, d)})
            }
            (Wire::V03(d), SendMessageResponse::Message(m)) => {
                json!({"message": v03::message_to_v03(m, d)})
            }
        }
    }

    /// [`Wire::send_result`] as JSON text; 1.0 serialises straight from the type, with no
    /// `Value` tree in between (the hot path: every SendMessage reply).
    pub fn send_result_text(self, result: &SendMessageResponse) -> String {
        match self {
            Wire::V1 => serde_json::to_string(result).unwrap_or_else(|_| "null".to_owned()),
            Wire::V03(_) => self.send_result(result).to_string(),
        }
    }

    /// The SendMessage result that is a task whose 1.0 JSON is at hand, in 1.0 (`None`
    /// in 0.3, whose shape differs): no serialisation.
    pub fn task_result_text(self, task_json: &str) -> Option<String> {
        match self {
            Wire::V1 => {
                // Pieces put together, not `format!`: this is every blocking send's answer.
                const HEAD: &str = r#"{"task":"#;
                let mut text = String::with_capacity(HEAD.len() + task_json.len() + 1);
                text.push_str(HEAD);
                text.push_str(task_json);
                text.push('}');
                Some(text)
            }
            Wire::V03(_) => None,
        }
    }

    /// [`Wire::task`] as JSON text, straight from the type in 1.0.
    pub fn task_text(self, task: &Task) -> String {
        match self {
            Wire::V1 => serde_json::to_string(task).unwrap_or_else(|_| "null".to_owned()),
            Wire::V03(_) => self.task(task).to_string(),
        }
    }

    /// A stream event's JSON text: in 1.0 made once per event for all its streams.
    pub fn frame_json(self, frame: &Frame) -> std::sync::Arc<str> {
        match self {
            Wire::V1 => frame.json.render(&frame.event),
            Wire::V03(_) => self.frame(frame).to_string().into(),
        }
    }

    pub fn frame(self, frame: &Frame) -> Value {
        match self {
            Wire::V1 => serde_json::to_value(&frame.event).unwrap_or(Value::Null),
            Wire::V03(d) => v03::stream_event_to_v03(&frame.event, frame.event.ends_stream(), d),
        }
    }

    pub fn push_config(self, config: &TaskPushNotificationConfig) -> Value {
        match self {
            Wire::V1 => serde_json::to_value(config).unwrap_or(Value::Null),
            Wire::V03(d) => v03::push_config_to_v03(config, d),
        }
    }
}

/// A JSON response with the given status.
pub fn json_response(status: StatusCode, body: &Value) -> Response {
    json_text_response(status, body.to_string())
}

/// A response whose body is JSON text already.
pub fn json_text_response(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// How often an idle stream sends a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Streams frames as SSE. `render` turns each item into an event's JSON text; frames
/// carry their sequence number as the SSE `id`. The stream ends
/// with the frames, or when the server shuts down (the client resumes elsewhere).
pub fn sse(
    frames: FrameStream,
    shutdown: CancellationToken,
    render: impl Fn(Result<&Frame, &A2AError>) -> String + Send + 'static,
) -> Response {
    let events = frames
        .enumerate()
        .map(move |(index, item)| {
            let mut event = match &item {
                // A message reply is no task event: it carries no id.
                Ok(frame) if frame.seq == 0 => Event::default().data(render(Ok(frame))),
                Ok(frame) => Event::default()
                    .id(frame.seq.to_string())
                    .data(render(Ok(frame))),
                Err(err) => Event::default().event("error").data(render(Err(err))),
            };
            if index == 0 {
                // EventSource clients reconnect (with Last-Event-ID) after this long.
                event = event.retry(Duration::from_millis(1000));
            }
            Ok::<Event, Infallible>(event)
        })
        .take_until(shutdown.cancelled_owned());
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // Proxies must not buffer the stream.
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    crate::metrics::tag(response, "unknown", "stream")
}

/// An SSE stream under the resume extension: when the client activated it (or resumed
/// with a cursor), each task event also carries its seq in metadata, and the response
/// echoes the extension so the client knows its cursor was understood.
pub fn resumable_sse(
    req: &crate::Request,
    frames: FrameStream,
    resumed: bool,
    shutdown: CancellationToken,
    render: impl Fn(Result<&Frame, &A2AError>) -> String + Send + 'static,
) -> Response {
    let active = resumed || req.activates(crate::ops::RESUME_EXTENSION);
    if !active {
        return sse(frames, shutdown, render);
    }
    let tagged = frames
        .map(|item| item.map(crate::ops::tag_with_seq))
        .boxed();
    let mut response = sse(tagged, shutdown, render);
    // 1.0 clients read A2A-Extensions, 0.3 clients X-A2A-Extensions.
    for name in ["a2a-extensions", "x-a2a-extensions"] {
        response
            .headers_mut()
            .insert(name, HeaderValue::from_static(crate::ops::RESUME_EXTENSION));
    }
    response
}

/// A single-event SSE stream carrying an error (0.3 resubscribe to a finished task).
pub fn sse_error(
    shutdown: CancellationToken,
    render: impl Fn(Result<&Frame, &A2AError>) -> String + Send + 'static,
    error: A2AError,
) -> Response {
    sse(
        futures::stream::once(async move { Err(error) }).boxed(),
        shutdown,
        render,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sb_protocol::{Message, TaskState, TaskStatus};

    /// The text replies are the `Value` replies, byte for byte, in every dialect.
    #[test]
    fn text_results_match_value_results() {
        let mut message = Message::agent_text("done");
        message.context_id = Some("c".into());
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: Some(message.clone()),
                timestamp: None,
            },
            artifacts: vec![],
            history: vec![message.clone()],
            metadata: Some([("k".to_owned(), json!({"n": 1.5}))].into_iter().collect()),
        };
        let wires = [
            Wire::V1,
            Wire::V03(Dialect03::KindJson),
            Wire::V03(Dialect03::ProtoJson),
        ];
        for wire in wires {
            assert_eq!(wire.task_text(&task), wire.task(&task).to_string());
            for result in [
                SendMessageResponse::Task(task.clone()),
                SendMessageResponse::Message(message.clone()),
            ] {
                let text = wire.send_result_text(&result);
                assert_eq!(text, wire.send_result(&result).to_string(), "{wire:?}");
            }
            // From the store's JSON of the task: the same reply, where there is one.
            let task_json = serde_json::to_string(&task).unwrap();
            if let Some(text) = wire.task_result_text(&task_json) {
                let result = SendMessageResponse::Task(task.clone());
                assert_eq!(text, wire.send_result(&result).to_string(), "{wire:?}");
            }
        }
    }
}
