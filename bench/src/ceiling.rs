//! The ceiling: a minimal axum server that answers every JSON-RPC POST with a fixed
//! answer the size of an echo task, and every streaming request with a fixed 3-event
//! SSE stream (one event and then silence for `hold`). What HTTP alone costs here.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::json;

use crate::a2a::contains;

#[derive(Debug)]
struct Fixed {
    task: Bytes,
    events: [String; 3],
}

fn fixed() -> Fixed {
    let id = "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
    let context = "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c";
    let message = |role: &str, text: &str| {
        json!({"messageId": "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d", "role": role,
               "parts": [{"text": text}], "taskId": id, "contextId": context})
    };
    let artifact = json!({"artifactId": "echo", "name": "echo", "parts": [{"text": "hello"}]});
    let status = |state: &str| {
        json!({"state": state, "message": message("ROLE_AGENT", "hello"),
               "timestamp": "2026-11-22T09:00:00.000Z"})
    };
    let task = json!({"jsonrpc": "2.0", "id": 1, "result": {"task": {
        "id": id, "contextId": context, "status": status("TASK_STATE_COMPLETED"),
        "artifacts": [artifact], "history": [message("ROLE_USER", "hello")],
    }}});
    let update = |state: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "result": {"statusUpdate": {
            "taskId": id, "contextId": context, "status": status(state)}}})
        .to_string()
    };
    let artifact_update = json!({"jsonrpc": "2.0", "id": 1, "result": {"artifactUpdate": {
        "taskId": id, "contextId": context, "artifact": artifact, "lastChunk": true}}});
    Fixed {
        task: Bytes::from(task.to_string()),
        events: [
            update("TASK_STATE_WORKING"),
            artifact_update.to_string(),
            update("TASK_STATE_COMPLETED"),
        ],
    }
}

async fn answer(State(fixed): State<Arc<Fixed>>, body: Bytes) -> Response {
    if !contains(&body, b"SendStreamingMessage") {
        return (
            [(http::header::CONTENT_TYPE, "application/json")],
            fixed.task.clone(),
        )
            .into_response();
    }
    let event = |data: &String| Ok::<_, Infallible>(Event::default().data(data.as_str()));
    if contains(&body, b"\"hold\"") {
        let first = futures::stream::iter([event(&fixed.events[0])]);
        return Sse::new(first.chain(futures::stream::pending())).into_response();
    }
    let events: Vec<_> = fixed.events.iter().map(event).collect();
    Sse::new(futures::stream::iter(events)).into_response()
}

/// Serves the ceiling on `listener` until the process ends.
pub async fn serve(listener: tokio::net::TcpListener) -> anyhow::Result<()> {
    let app = axum::Router::new()
        .fallback(axum::routing::post(answer))
        .with_state(Arc::new(fixed()));
    axum::serve(listener, app).await?;
    Ok(())
}
