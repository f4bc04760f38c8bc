//! The human-in-the-loop inbox: `GET /fleet/inbox` lists the tasks waiting for a person
//! (input-required, auth-required) that the caller may see, with the question and by
//! when it must be answered; `POST /fleet/inbox/{taskId}/answer` resumes one with the
//! answer, through the same send operation as the task owner's own message, so the
//! agent cannot tell the two apart.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Duration, Utc};
use sb_protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use sb_protocol::{A2AError, Message, Part, Role, TaskState, Version, new_id};
use sb_store::TaskRecord;
use sb_tasks::Scope;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{FleetEdge, error, unavailable};
use crate::ops;

#[derive(Debug, Deserialize)]
pub(super) struct InboxQuery {
    agent: Option<String>,
}

/// One waiting task as the inbox lists it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Waiting<'a> {
    agent: &'a str,
    task_id: &'a str,
    context_id: &'a str,
    state: TaskState,
    /// The principal it waits for (`""`: anonymous).
    owner: &'a str,
    /// The question, as text.
    question: String,
    /// The whole status message (data parts and all).
    message: Option<&'a Message>,
    since: DateTime<Utc>,
    waiting_secs: i64,
    /// When the input timeout cancels it, unanswered.
    deadline: DateTime<Utc>,
}

pub(super) async fn list(
    State(edge): State<FleetEdge>,
    Query(query): Query<InboxQuery>,
    headers: HeaderMap,
) -> Response {
    let waiting = match visible_waiting(&edge, &headers).await {
        Ok(waiting) => waiting,
        Err(refusal) => return *refusal,
    };
    let now = Utc::now();
    let timeout =
        Duration::seconds(i64::try_from(edge.input_timeout_secs).unwrap_or(i64::MAX / 1000));
    let listed: Vec<Waiting<'_>> = waiting
        .iter()
        .filter(|r| query.agent.as_ref().is_none_or(|a| *a == r.agent))
        .map(|record| {
            let since = record.status_time();
            let message = record.task.status.message.as_ref();
            Waiting {
                agent: &record.agent,
                task_id: &record.task.id,
                context_id: &record.task.context_id,
                state: record.state(),
                owner: &record.owner,
                question: message.map(Message::text).unwrap_or_default(),
                message,
                since,
                waiting_secs: (now - since).num_seconds().max(0),
                deadline: since + timeout,
            }
        })
        .collect();
    axum::Json(json!({ "tasks": listed })).into_response()
}

/// The body of an answer.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Answer {
    text: Option<String>,
    data: Option<Value>,
    /// Wait for the task to settle again (ended or waiting) before answering.
    #[serde(default)]
    wait: bool,
}

pub(super) async fn answer(
    State(edge): State<FleetEdge>,
    Path(task_id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let answer: Answer = match serde_json::from_slice(&body) {
        Ok(answer) => answer,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the answer must be a JSON object {{\"text\": …, \"data\": …}}: {e}"),
            );
        }
    };
    let mut parts = Vec::new();
    if let Some(text) = answer.text.filter(|t| !t.trim().is_empty()) {
        parts.push(Part::text(text));
    }
    if let Some(data) = answer.data {
        parts.push(Part::data(data));
    }
    if parts.is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "an answer needs a non-empty \"text\" or a \"data\" value",
        );
    }
    let waiting = match visible_waiting(&edge, &headers).await {
        Ok(waiting) => waiting,
        Err(refusal) => return *refusal,
    };
    let Some(record) = waiting.into_iter().find(|r| r.task.id == task_id) else {
        return error(
            StatusCode::NOT_FOUND,
            format!(
                "task {task_id} is not waiting for an answer in your inbox (answered already, ended, or not yours)"
            ),
        );
    };
    match resume(&edge, &record, parts, answer.wait).await {
        Ok(sent) => axum::Json(sent).into_response(),
        Err(e) => a2a_error(&e),
    }
}

/// The waiting tasks the caller may see, longest waiting first.
async fn visible_waiting(
    edge: &FleetEdge,
    headers: &HeaderMap,
) -> Result<Vec<TaskRecord>, Box<Response>> {
    let viewer = edge.viewer(headers)?;
    let waiting = edge
        .service
        .waiting()
        .await
        .map_err(|e| Box::new(unavailable(&e)))?;
    Ok(waiting
        .into_iter()
        .filter(|r| viewer.sees_task(&r.agent, &r.owner))
        .collect())
}

/// Sends the answer as the task owner's next message; the send's result (`{"task": …}`)
/// as the send leaves it.
async fn resume(
    edge: &FleetEdge,
    record: &TaskRecord,
    parts: Vec<Part>,
    wait: bool,
) -> Result<Value, A2AError> {
    let scope = Scope::of(record);
    let message = Message {
        message_id: new_id(),
        context_id: Some(record.task.context_id.clone()),
        task_id: Some(record.task.id.clone()),
        role: Role::User,
        parts,
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    };
    let request = SendMessageRequest {
        tenant: None,
        message,
        configuration: Some(SendMessageConfiguration {
            return_immediately: !wait,
            ..Default::default()
        }),
        metadata: None,
    };
    let sent = ops::send(&edge.state, &scope, request, Version::V1_0).await?;
    serde_json::to_value(sent.into_response())
        .map_err(|e| A2AError::internal(format!("the task could not be written: {e}")))
}

/// An A2A error as an HTTP error body, with the status its kind maps to.
fn a2a_error(e: &A2AError) -> Response {
    let status =
        StatusCode::from_u16(e.kind.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    error(status, e.message.clone())
}
