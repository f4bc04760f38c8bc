//! The driver's bookkeeping of one task: whether following can stop, which input
//! request was answered last, the question asked and the message that answers it, and
//! the task as each followed event leaves it.

use sb_protocol::{Message, StreamResponse, Task, TaskState};

use super::outcome::{Answer, user_text};

/// Whether following can stop: the task ended, waits for auth (out of band: returned,
/// not waited on), or asks a question other than the one `answered`.
pub(super) fn settled(task: &Task, answered: Option<&QuestionKey>) -> bool {
    let state = task.status.state;
    let asks = state == TaskState::InputRequired && answered != Some(&question_key(task));
    state.is_terminal() || state == TaskState::AuthRequired || asks
}

/// What tells one input request from the next: its message and when it was made.
pub(super) type QuestionKey = (Option<String>, Option<String>);

pub(super) fn question_key(task: &Task) -> QuestionKey {
    let status = &task.status;
    let message = status.message.as_ref().map(|m| m.message_id.clone());
    (message, status.timestamp.map(|t| t.to_rfc3339()))
}

/// The question of a task that waits for input: its status message, or an empty one
/// from an agent that asks without saying what.
pub(super) fn question_of(task: &Task) -> Message {
    let asked = task.status.message.clone();
    asked.unwrap_or_else(|| Message::agent_text(""))
}

/// The message that answers `task`'s question, on its task and context.
pub(super) fn follow_up(answer: Answer, task: &Task) -> Message {
    let mut message = match answer {
        Answer::Text(text) => user_text(text),
        Answer::Message(message) => message,
    };
    message.task_id = Some(task.id.clone());
    message.context_id = Some(task.context_id.clone());
    message
}

/// The task as an event leaves it.
pub(super) fn apply(task: &mut Task, event: StreamResponse) {
    match event {
        StreamResponse::Task(read) => *task = read,
        StreamResponse::StatusUpdate(update) => task.status = update.status,
        StreamResponse::ArtifactUpdate(update) => {
            let artifact = update.artifact;
            let known = task
                .artifacts
                .iter_mut()
                .find(|a| a.artifact_id == artifact.artifact_id);
            match known {
                Some(known) if update.append => known.parts.extend(artifact.parts),
                Some(known) => *known = artifact,
                None => task.artifacts.push(artifact),
            }
        }
        StreamResponse::Message(message) => task.history.push(message),
    }
}
