//! The checks `conformance` makes on one interface of an agent: the mandatory behaviours
//! of the A2A TCK that a client can verify against any agent, without knowing what the
//! agent does. Each is named with the TCK requirement it smoke-tests. A message asks
//! for a task the TCK's own agents complete at once (`tck-complete-task`); any other
//! agent answers as it does, and only the answer's shape is judged. The checks of what
//! the card declares (streaming, push notifications) are in `conformance_capabilities`.

use std::future::Future;
use std::time::Duration;

use sb_client::interface::{Binding, Chosen};
use sb_client::{CallError, Placement, Transport};
use sb_protocol::card::AgentCard;
use sb_protocol::requests::{ListTasksRequest, SendMessageRequest};
use sb_protocol::{ErrorKind, Message, Part, Role, SendMessageResponse, Task, TaskState};
use serde::Serialize;
use serde_json::{Value, json};

/// How a check ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    Pass,
    Fail,
    Skip,
}

/// One check's result.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Check {
    pub name: &'static str,
    /// The interface checked (`JSONRPC 1.0`), none for the card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// The TCK requirement(s) it smoke-tests.
    pub requirement: &'static str,
    pub verdict: Verdict,
    pub reason: String,
}

/// One interface to check, connected.
pub(crate) struct Probe<'a> {
    pub card: &'a AgentCard,
    pub chosen: Chosen,
    pub transport: std::sync::Arc<dyn Transport>,
    pub http: reqwest::Client,
    pub placement: Placement,
    /// The longest any one call may take.
    pub timeout: Duration,
    /// Where the push-config check asks the agent to deliver.
    pub webhook_url: String,
}

impl Probe<'_> {
    pub(crate) fn check(
        &self,
        name: &'static str,
        requirement: &'static str,
        verdict: Verdict,
        reason: String,
    ) -> Check {
        Check {
            name,
            interface: Some(format!(
                "{} {}",
                self.chosen.binding.card_name(),
                self.chosen.version
            )),
            requirement,
            verdict,
            reason,
        }
    }

    /// A call's result within the timeout, its failure as a reason.
    pub(crate) async fn within<T>(
        &self,
        call: impl Future<Output = Result<T, CallError>>,
    ) -> Result<T, String> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(result) => result.map_err(|e| describe(&e)),
            Err(_) => Err(format!("no answer within {:?}", self.timeout)),
        }
    }

    pub(crate) fn message(&self, prefix: &str) -> SendMessageRequest {
        let mut request = SendMessageRequest::non_blocking(Message {
            message_id: format!("{prefix}-{}", sb_protocol::new_id()),
            context_id: None,
            task_id: None,
            role: Role::User,
            parts: vec![Part::text(format!(
                "{prefix}: a2a-cli conformance smoke check"
            ))],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        });
        request.tenant.clone_from(&self.chosen.tenant);
        request
    }
}

pub(crate) fn describe(error: &CallError) -> String {
    match error {
        CallError::A2A(e) => format!("{} ({})", super::error::a2a_name(e.kind), e.message),
        CallError::Transport(message) => message.clone(),
    }
}

/// CORE-SEND-001: a Task (id, context id, a state) or a Message (id, agent role, parts).
pub(crate) async fn send(probe: &Probe<'_>) -> (Check, Option<Task>) {
    let check = |verdict, reason| {
        probe.check(
            "SendMessage",
            "CORE-SEND-001, CORE-MULTI-001a",
            verdict,
            reason,
        )
    };
    match probe
        .within(probe.transport.send(&probe.message("tck-complete-task")))
        .await
    {
        Err(reason) => (check(Verdict::Fail, reason), None),
        Ok(SendMessageResponse::Task(task)) => {
            let problems = task_problems(&task);
            match problems.is_empty() {
                true => {
                    let reason =
                        format!("a Task, {}", super::render::state_name(task.status.state));
                    (check(Verdict::Pass, reason), Some(task))
                }
                false => (check(Verdict::Fail, problems.join("; ")), None),
            }
        }
        Ok(SendMessageResponse::Message(message)) => {
            let mut problems = Vec::new();
            if message.message_id.trim().is_empty() {
                problems.push("the Message has no messageId");
            }
            if message.role != Role::Agent {
                problems.push("the Message's role is not ROLE_AGENT");
            }
            if message.parts.is_empty() {
                problems.push("the Message has no parts");
            }
            match problems.is_empty() {
                true => (check(Verdict::Pass, "a Message".into()), None),
                false => (check(Verdict::Fail, problems.join("; ")), None),
            }
        }
    }
}

fn task_problems(task: &Task) -> Vec<&'static str> {
    let mut problems = Vec::new();
    if task.id.trim().is_empty() {
        problems.push("the Task has no id");
    }
    if task.context_id.trim().is_empty() {
        problems.push("the Task has no contextId");
    }
    if task.status.state == TaskState::Unspecified {
        problems.push("the Task's state is unspecified");
    }
    problems
}

/// CORE-GET-001: the task just made, by its id.
pub(crate) async fn get_task(probe: &Probe<'_>, task: Option<&Task>) -> Check {
    let check = |verdict, reason| probe.check("GetTask", "CORE-GET-001", verdict, reason);
    let Some(task) = task else {
        return check(Verdict::Skip, "SendMessage made no task to read".into());
    };
    match probe.within(probe.transport.get_task(&task.id, None)).await {
        Err(reason) => check(Verdict::Fail, reason),
        Ok(read) if read.id != task.id => check(
            Verdict::Fail,
            format!("asked for task {}, got {}", task.id, read.id),
        ),
        Ok(read) => match task_problems(&read).first() {
            Some(problem) => check(Verdict::Fail, (*problem).to_owned()),
            None => check(
                Verdict::Pass,
                format!(
                    "task {}, {}",
                    read.id,
                    super::render::state_name(read.status.state)
                ),
            ),
        },
    }
}

/// `outcome` must be the A2A error `expected`.
pub(crate) fn refused_with<T>(
    outcome: Result<T, String>,
    error: Result<(), CallError>,
    expected: ErrorKind,
) -> (Verdict, String) {
    let name = super::error::a2a_name(expected);
    match (outcome, error) {
        (_, Err(CallError::A2A(e))) if e.kind == expected => (Verdict::Pass, name.to_owned()),
        (_, Err(other)) => (
            Verdict::Fail,
            format!("expected {name}, got {}", describe(&other)),
        ),
        (Err(reason), Ok(())) => (Verdict::Fail, format!("expected {name}: {reason}")),
        (Ok(_), Ok(())) => (
            Verdict::Fail,
            format!("expected {name}, the call succeeded"),
        ),
    }
}

/// A call that should be refused: its outcome, and the call error apart.
pub(crate) async fn attempt<T>(
    probe: &Probe<'_>,
    call: impl Future<Output = Result<T, CallError>>,
) -> (Result<T, String>, Result<(), CallError>) {
    match tokio::time::timeout(probe.timeout, call).await {
        Ok(Ok(value)) => (Ok(value), Ok(())),
        Ok(Err(error)) => (Err(describe(&error)), Err(error)),
        Err(_) => (Err(format!("no answer within {:?}", probe.timeout)), Ok(())),
    }
}

pub(crate) fn unknown_id() -> String {
    format!("a2a-cli-conformance-no-such-task-{}", sb_protocol::new_id())
}

/// CORE-GET-002: an unknown task id is TaskNotFoundError.
pub(crate) async fn get_unknown(probe: &Probe<'_>) -> Check {
    let id = unknown_id();
    let (outcome, error) = attempt(probe, probe.transport.get_task(&id, None)).await;
    let (verdict, reason) = refused_with(outcome, error, ErrorKind::TaskNotFound);
    probe.check("GetTask of an unknown id", "CORE-GET-002", verdict, reason)
}

/// CORE-CANCEL-003: canceling an unknown task id is TaskNotFoundError.
pub(crate) async fn cancel_unknown(probe: &Probe<'_>) -> Check {
    let id = unknown_id();
    let (outcome, error) = attempt(probe, probe.transport.cancel_task(&id)).await;
    let (verdict, reason) = refused_with(outcome, error, ErrorKind::TaskNotFound);
    probe.check(
        "CancelTask of an unknown id",
        "CORE-CANCEL-003",
        verdict,
        reason,
    )
}

/// JSONRPC-ERR-001: a method that does not exist is JSON-RPC's -32601, in an error
/// object of a JSON-RPC 2.0 answer carrying the request's id.
pub(crate) async fn unknown_method(probe: &Probe<'_>) -> Check {
    let check = |verdict, reason| probe.check("unknown method", "JSONRPC-ERR-001", verdict, reason);
    if probe.chosen.binding != Binding::JsonRpc {
        return check(Verdict::Skip, "JSON-RPC only".into());
    }
    let body =
        json!({"jsonrpc": "2.0", "id": 7, "method": "A2ACliConformanceNoSuchMethod", "params": {}});
    let request = probe
        .http
        .post(&probe.chosen.url)
        .header("A2A-Version", probe.chosen.version.as_str())
        .json(&body);
    let call = async {
        let response = probe.placement.apply(request).send().await?;
        response.json::<Value>().await
    };
    let reply = match tokio::time::timeout(probe.timeout, call).await {
        Err(_) => {
            return check(
                Verdict::Fail,
                format!("no answer within {:?}", probe.timeout),
            );
        }
        Ok(Err(e)) => return check(Verdict::Fail, format!("no JSON-RPC answer: {e}")),
        Ok(Ok(reply)) => reply,
    };
    let code = reply.pointer("/error/code").and_then(Value::as_i64);
    match (reply["jsonrpc"].as_str(), reply["id"].as_i64(), code) {
        (Some("2.0"), Some(7), Some(-32601)) => {
            check(Verdict::Pass, "MethodNotFoundError (-32601)".into())
        }
        (Some("2.0"), Some(7), Some(other)) => check(
            Verdict::Fail,
            format!("error code {other}, expected -32601"),
        ),
        _ => check(
            Verdict::Fail,
            format!("not a JSON-RPC 2.0 error answer to id 7: {reply}"),
        ),
    }
}

/// CORE-LIST-001 (A2A 1.0): the caller's tasks can be listed.
pub(crate) async fn list_tasks(probe: &Probe<'_>) -> Check {
    let check = |verdict, reason| probe.check("ListTasks", "CORE-LIST-001", verdict, reason);
    if probe.chosen.version != "1.0" {
        return check(Verdict::Skip, "ListTasks is A2A 1.0".into());
    }
    let request = ListTasksRequest {
        tenant: probe.chosen.tenant.clone(),
        page_size: Some(5),
        ..ListTasksRequest::default()
    };
    match probe.within(probe.transport.list_tasks(&request)).await {
        Err(reason) => check(Verdict::Fail, reason),
        Ok(page) => check(
            Verdict::Pass,
            format!("{} tasks on the first page", page.tasks.len()),
        ),
    }
}
