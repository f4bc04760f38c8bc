//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) standing for A2A
//! tasks. A tool call whose A2A task is still at work when the wait ends comes back as
//! an MCP task to a client that declared the extension; its id names the agent and the
//! A2A task ([`TaskHandle`]), so nothing is kept here: `tasks/get`, `tasks/update` and
//! `tasks/cancel` read, answer or cancel the A2A task itself, with the credentials of
//! the request that asks (on `/mcp`, the caller's own), so the agent's A2A checks decide
//! who reaches which task, as they would for any A2A caller, on whichever gateway the
//! request lands.
//!
//! The A2A states map onto the extension's: submitted and working are `working`;
//! input-required and auth-required are `input_required`, the question an elicitation
//! in `inputRequests`; completed, failed and rejected are `completed`, with the tool
//! result a call would have returned (the SEP keeps `failed` for JSON-RPC errors, and
//! an agent's failure is an answer for the LLM, as it is from a tool call); canceled is
//! `cancelled`.

use chrono::{DateTime, SecondsFormat, Utc};
use rmcp::model::{
    DetailedTask, ErrorData, InputResponses, JsonObject, Task as McpTask, TaskPayload, TaskStatus,
};
use sb_client::{CallError, Transport};
use sb_protocol::error::ErrorKind;
use sb_protocol::{Task, TaskState};
use serde_json::Value;

use crate::answer::{task_answer, tool_result};
use crate::call::answer_task;
use crate::question::{answer_of, input_requests, question_key, said};

/// How often a client is asked to poll, in milliseconds: the pace a tool call reads
/// its task at, once past its first reads.
const POLL_INTERVAL_MS: u64 = 1_000;

/// What an MCP task id names: `<agent>:<created, Unix ms>:<A2A task id>`. Agent names
/// have no `:` (letters, digits, `-`, `_`), so the first two split it whatever the A2A
/// id holds. The creation time rides along because an A2A task does not record one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskHandle {
    pub agent: String,
    pub created_ms: i64,
    pub task_id: String,
}

impl TaskHandle {
    /// The handle of `agent`'s `task`, created now.
    pub fn new(agent: &str, task: &Task) -> TaskHandle {
        TaskHandle {
            agent: agent.to_owned(),
            created_ms: Utc::now().timestamp_millis(),
            task_id: task.id.clone(),
        }
    }

    /// The handle `id` spells, if it is one ([`TaskHandle::id`]).
    pub fn decode(id: &str) -> Option<TaskHandle> {
        let mut pieces = id.splitn(3, ':');
        let (agent, created, task_id) = (pieces.next(), pieces.next(), pieces.next());
        match (agent, created.and_then(|c| c.parse().ok()), task_id) {
            (Some(agent), Some(created_ms), Some(task_id))
                if !agent.is_empty() && !task_id.is_empty() =>
            {
                Some(TaskHandle {
                    agent: agent.to_owned(),
                    created_ms,
                    task_id: task_id.to_owned(),
                })
            }
            _ => None,
        }
    }

    /// The handle an MCP task id names; a clear error for one this server never gave.
    pub fn parse(id: &str) -> Result<TaskHandle, ErrorData> {
        TaskHandle::decode(id).ok_or_else(|| {
            ErrorData::invalid_params(
                format!(
                    "no task {id}: not a taskId this server gave; use the taskId of a tools/call result"
                ),
                None,
            )
        })
    }

    /// The MCP task id.
    pub fn id(&self) -> String {
        format!("{}:{}:{}", self.agent, self.created_ms, self.task_id)
    }

    /// The A2A task, read with the transport's credentials: an error naming the task when
    /// the agent does not know it for them (never made, ended and purged, or another
    /// caller's).
    pub async fn read(&self, transport: &dyn Transport) -> Result<Task, ErrorData> {
        transport
            .get_task(&self.task_id, Some(0))
            .await
            .map_err(|e| self.error(&e))
    }

    /// The JSON-RPC error for a failed A2A call about this task: its refusal is the
    /// task's absence for this caller (invalid params, as the SEP asks for an unknown
    /// taskId); not getting through is an internal error.
    pub fn error(&self, error: &CallError) -> ErrorData {
        match error {
            CallError::A2A(e) => ErrorData::invalid_params(
                format!("no task {}: {}", self.id(), self.absence(&e.message)),
                None,
            ),
            CallError::Transport(e) => ErrorData::internal_error(
                format!("agent {} could not be reached: {e}", self.agent),
                None,
            ),
        }
    }

    /// The agent's refusal of this task to these credentials (`refused`, its words), as
    /// the task's absence for them.
    pub fn absence(&self, refused: &str) -> String {
        format!(
            "agent {} has no task {} for these credentials ({refused})",
            self.agent, self.task_id
        )
    }

    /// The MCP task standing for `task`, with what its state carries: the question, or
    /// the tool result once it ended.
    pub fn detailed(&self, task: &Task) -> Result<DetailedTask, ErrorData> {
        let state = task.status.state;
        let payload = if state == TaskState::Canceled {
            TaskPayload::Cancelled
        } else if state.is_terminal() {
            TaskPayload::Completed {
                result: result_object(task_answer(task))?,
            }
        } else if state.is_interrupted() {
            TaskPayload::InputRequired {
                input_requests: input_requests(task)?,
            }
        } else {
            TaskPayload::Working
        };
        Ok(DetailedTask::new(self.seed(task), payload))
    }

    /// The task's metadata, with what the agent last said; `working`, the status a
    /// detailed task's payload then sets.
    pub fn seed(&self, task: &Task) -> McpTask {
        let created = DateTime::from_timestamp_millis(self.created_ms).unwrap_or_default();
        let updated = task.status.timestamp.unwrap_or_else(Utc::now);
        // `ttlMs` stays null (unlimited): the task lasts as long as the agent keeps the A2A
        // task, which this server does not decide.
        let mut seed = McpTask::new(
            self.id(),
            TaskStatus::Working,
            created.to_rfc3339_opts(SecondsFormat::Millis, true),
            updated.to_rfc3339_opts(SecondsFormat::Millis, true),
        )
        .with_poll_interval_ms(POLL_INTERVAL_MS);
        seed.status_message = said(task);
        seed
    }

    /// Delivers the answer among `responses` to the question the task asks now, or
    /// cancels the task when the person declined it (the agent cannot go on without an
    /// answer, and the question may not be asked again under the same key). Responses to
    /// anything else — a question already answered, a key never given — are ignored, as
    /// the SEP says.
    pub async fn update(
        &self,
        transport: &dyn Transport,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        let task = self.read(transport).await?;
        self.deliver(transport, &task, responses).await
    }

    /// As [`TaskHandle::update`], to `task` as the caller has just read it.
    pub async fn deliver(
        &self,
        transport: &dyn Transport,
        task: &Task,
        responses: &InputResponses,
    ) -> Result<(), ErrorData> {
        if !task.status.state.is_interrupted() {
            return Ok(());
        }
        let Some(response) = responses.get(&question_key(task)) else {
            return Ok(());
        };
        let Some(answer) = answer_of(response)? else {
            return self.cancel(transport).await;
        };
        match answer_task(transport, task, answer).await {
            Ok(_) => Ok(()),
            Err(CallError::A2A(e)) => Err(ErrorData::invalid_params(
                format!(
                    "agent {} did not take the answer to task {}: {}",
                    self.agent,
                    self.id(),
                    e.message
                ),
                None,
            )),
            Err(e) => Err(self.error(&e)),
        }
    }

    /// Cancels the A2A task. One that already ended cannot be, and that is no error:
    /// cancellation is cooperative, and its status tells how it ended.
    pub async fn cancel(&self, transport: &dyn Transport) -> Result<(), ErrorData> {
        match transport.cancel_task(&self.task_id).await {
            Ok(_) => Ok(()),
            Err(CallError::A2A(e)) if e.kind == ErrorKind::TaskNotCancelable => Ok(()),
            Err(e) => Err(self.error(&e)),
        }
    }
}

/// The tool result for `answer`, as the JSON object a completed task carries.
fn result_object(answer: Value) -> Result<JsonObject, ErrorData> {
    match serde_json::to_value(tool_result(answer)) {
        Ok(Value::Object(result)) => Ok(result),
        Ok(_) | Err(_) => Err(ErrorData::internal_error(
            "the task's result could not be written",
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use sb_protocol::Message;
    use sb_protocol::TaskStatus as A2AStatus;
    use serde_json::json;

    use super::*;

    fn task(state: TaskState, said: Option<&str>) -> Task {
        Task {
            id: "t:1".into(),
            context_id: "c1".into(),
            status: A2AStatus {
                state,
                message: said.map(|s| Message {
                    message_id: "m1".into(),
                    ..Message::agent_text(s)
                }),
                timestamp: None,
            },
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
        }
    }

    fn handle() -> TaskHandle {
        TaskHandle {
            agent: "consolidate".into(),
            created_ms: 1_700_000_000_000,
            task_id: "t:1".into(),
        }
    }

    fn wire(state: TaskState, said: Option<&str>) -> Value {
        let detailed = handle().detailed(&task(state, said)).map_err(|e| e.message);
        detailed
            .map(|d| serde_json::to_value(d).unwrap_or_default())
            .unwrap_or_default()
    }

    #[test]
    fn a_task_id_names_the_agent_and_the_a2a_task_whatever_it_holds() {
        let id = handle().id();
        assert_eq!(id, "consolidate:1700000000000:t:1");
        assert_eq!(TaskHandle::parse(&id).ok(), Some(handle()));
    }

    #[test]
    fn an_invented_task_id_is_refused_clearly() {
        for id in ["", "nope", "echo:soon:t1", "echo:1:", ":1:t1"] {
            let error = TaskHandle::parse(id).err().map(|e| e.message.into_owned());
            assert!(
                error.as_deref().is_some_and(|e| e.contains("not a taskId")),
                "{id}: {error:?}"
            );
        }
    }

    #[test]
    fn working_states_are_working_with_what_the_agent_said() {
        for state in [TaskState::Submitted, TaskState::Working] {
            let wire = wire(state, Some("transcript 3/9"));
            assert_eq!(wire["status"], "working");
            assert_eq!(wire["statusMessage"], "transcript 3/9");
            assert_eq!(wire["createdAt"], "2023-11-14T22:13:20.000Z");
            assert_eq!(wire["ttlMs"], Value::Null);
        }
    }

    #[test]
    fn a_question_is_an_input_request_keyed_by_its_message() {
        for state in [TaskState::InputRequired, TaskState::AuthRequired] {
            let wire = wire(state, Some("Which one?"));
            assert_eq!(wire["status"], "input_required");
            let request = &wire["inputRequests"]["question-m1"];
            assert_eq!(request["method"], "elicitation/create", "{wire}");
            assert_eq!(request["params"]["message"], "Which one?");
        }
    }

    #[test]
    fn an_ended_task_carries_the_answer_a_call_would_have_given() {
        for (state, said) in [
            (TaskState::Completed, "completed"),
            (TaskState::Failed, "failed"),
            (TaskState::Rejected, "rejected"),
        ] {
            let wire = wire(state, None);
            assert_eq!(wire["status"], "completed");
            let result = &wire["result"];
            assert_eq!(result["isError"], false);
            assert_eq!(result["structuredContent"]["kind"], "task");
            assert_eq!(result["structuredContent"]["taskId"], "t:1");
            assert_eq!(result["structuredContent"]["status"]["state"], said);
        }
        let canceled = wire(TaskState::Canceled, None);
        assert_eq!(canceled["status"], "cancelled");
        assert_eq!(canceled.get("result"), None);
        assert_eq!(json!(canceled["taskId"]), json!(handle().id()));
    }
}
