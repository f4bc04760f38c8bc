//! The answers the guide for LLMs calling `A2A_` tools describes: `kind: message` with
//! its `contents`, or `kind: task` with `taskId`, `contextId`, `status.state`, the
//! question when it asks one and the artifacts once completed. A tool call returns one;
//! so does a finished MCP task (`tasks/get`), in the same tool result shape.

use rmcp::model::{CallToolResult, ContentBlock};
use sb_protocol::{Artifact, Message, Part, PartContent, Task, TaskState};
use serde_json::{Value, json};

/// The tool result carrying `answer`: as structured content, and as its JSON text for
/// clients that read only text.
pub fn tool_result(answer: Value) -> CallToolResult {
    let text = answer.to_string();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(answer);
    result
}

/// A part as the LLM reads it.
fn content(part: &Part) -> Value {
    match &part.content {
        PartContent::Text(text) => json!({"type": "text", "text": text}),
        PartContent::Data(data) => json!({"type": "data", "data": data}),
        PartContent::Url(url) => json!({
            "type": "file", "uri": url, "mediaType": part.media_type, "name": part.filename
        }),
        PartContent::Raw(bytes) => json!({
            "type": "file", "bytes": bytes.len(), "mediaType": part.media_type, "name": part.filename,
            "note": "binary content, not shown"
        }),
    }
}

/// The answer for an agent's message reply.
pub fn message_answer(reply: &Message) -> Value {
    json!({
        "kind": "message",
        "contextId": reply.context_id,
        "contents": reply.parts.iter().map(content).collect::<Vec<_>>(),
    })
}

fn artifact(artifact: &Artifact) -> Value {
    json!({
        "artifactId": artifact.artifact_id,
        "name": artifact.name,
        "contents": artifact.parts.iter().map(content).collect::<Vec<_>>(),
    })
}

/// The answer for a task as it stands.
pub fn task_answer(task: &Task) -> Value {
    let state = task.status.state;
    let said = task.status.message.as_ref().map(Message::text);
    let mut status = json!({"state": state.as_v03_str()});
    if let Some(text) = said.as_ref().filter(|t| !t.is_empty()) {
        status["message"] = json!(text);
    }
    let mut answer = json!({
        "kind": "task",
        "taskId": task.id,
        "contextId": task.context_id,
        "status": status,
    });
    if state.is_interrupted() {
        answer["question"] = json!(said.unwrap_or_default());
        answer["next"] =
            json!("Answer with the same taskId and contextId, and the requested input as text.");
    }
    if state == TaskState::Completed {
        answer["artifacts"] = json!(task.artifacts.iter().map(artifact).collect::<Vec<_>>());
    }
    if !state.is_terminal() && !state.is_interrupted() {
        answer["next"] = json!(
            "The agent did not finish in time. Do not wait for it here; tell the user the taskId."
        );
    }
    answer
}
