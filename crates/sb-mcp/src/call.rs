//! One tool call. The arguments are checked (a `taskId` or `contextId` the LLM did not
//! get from this agent is refused, with what to do instead), the message is sent as a
//! new request or as the answer to a task's question, and the task is waited for, at
//! most the configured time, until it ends or asks something — so `submitted` and
//! `working` come back only when the agent takes longer than that ([`follow`], which
//! also continues a call the client answered after an input-required result). A
//! question is put to the person at the client when the client can be asked during the
//! call (MCP elicitation), and their answer sent on; else it comes back as such
//! ([`Outcome::Asks`]), for the server to return to the client or answer to the LLM.
//! The answer is the object the guide for LLMs describes ([`crate::answer`]); a task
//! still at work when the wait ends comes back as such ([`Outcome::Working`]), for the
//! server to answer `working` or to hand over as an MCP task ([`crate::tasks`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use rmcp::model::JsonObject;
use sb_client::interface::{Preferences, choose};
use sb_client::{CallError, Credentials, Transport, connect};
use sb_protocol::requests::{ListTasksRequest, SendMessageRequest};
use sb_protocol::{Message, Part, Role, SendMessageResponse, Task, TaskState, new_id};
use serde::Deserialize;
use serde_json::Value;

use crate::answer::{message_answer, task_answer};
use crate::catalog::AgentTool;

/// The arguments of every agent's tool.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Arguments {
    text: Option<String>,
    data: Option<Value>,
    task_id: Option<String>,
    context_id: Option<String>,
    #[serde(default)]
    reference_task_ids: Vec<String>,
}

/// Why a call was not made, or failed: the text the LLM reads.
#[derive(Debug)]
pub struct Refusal(pub String);

/// What one MCP session knows between calls.
#[derive(Debug, Default)]
pub struct Session {
    /// Contexts answered with a message (no task shows them to the agent's ListTasks).
    contexts: Mutex<HashSet<(String, String)>>,
}

/// How a call is made.
#[derive(Clone, Debug)]
pub struct Caller {
    pub http: reqwest::Client,
    pub credentials: Credentials,
    /// Longest wait for the task to end or ask something.
    pub wait: Duration,
}

/// What a call came to.
#[derive(Debug)]
pub enum Outcome {
    /// The guide's answer object: a message, or a task that ended or waits for
    /// authorization.
    Done(Value),
    /// The task, asking a question (input-required) no one at the client answered
    /// during the call: the server returns it to the client to ask the person
    /// ([`crate::rounds`]), or answers it to the LLM.
    Asks(Box<Task>),
    /// The task, still submitted or working when the wait ended.
    Working(Box<Task>),
}

/// Puts an agent's question to the person at the client; their answer, or `None` when
/// they declined or cannot be asked.
pub type Ask = dyn Fn(String) -> BoxFuture<'static, Option<String>> + Send + Sync;

/// Most questions of one call put to the person before the task goes back to the LLM.
const MOST_ASKED: usize = 5;

/// The first pause between two reads of a task, and the longest.
const POLL_FIRST: Duration = Duration::from_millis(100);
const POLL_MOST: Duration = Duration::from_secs(1);

/// The transport to `tool`'s agent, carrying `caller`'s credentials.
pub fn transport_to(tool: &AgentTool, caller: &Caller) -> Result<Arc<dyn Transport>, Refusal> {
    let agent = &tool.agent;
    let chosen = choose(&tool.card, &Preferences::default()).ok_or_else(|| {
        Refusal(format!(
            "agent {agent} offers no interface this server can call"
        ))
    })?;
    let placement = caller.credentials.placed_for(Some(&tool.card));
    connect(caller.http.clone(), &chosen, placement)
        .map_err(|e| Refusal(format!("agent {agent} cannot be called: {e}")))
}

/// Sends `text` to `task` as the answer to its question, without waiting.
pub async fn answer_task(
    transport: &dyn Transport,
    task: &Task,
    text: String,
) -> Result<SendMessageResponse, CallError> {
    let reply = Message {
        message_id: new_id(),
        context_id: Some(task.context_id.clone()),
        task_id: Some(task.id.clone()),
        role: Role::User,
        parts: vec![Part::text(text)],
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    };
    let request = SendMessageRequest {
        tenant: transport.interface().tenant.clone(),
        ..SendMessageRequest::non_blocking(reply)
    };
    transport.send(&request).await
}

/// Calls `tool`'s agent with `arguments`.
pub async fn call(
    tool: &AgentTool,
    arguments: Option<JsonObject>,
    caller: &Caller,
    session: &Session,
    ask: Option<&Ask>,
) -> Result<Outcome, Refusal> {
    let arguments: Arguments =
        serde_json::from_value(Value::Object(arguments.unwrap_or_default())).map_err(|e| {
            Refusal(format!(
                "the arguments are not right: {e}. Send `text` (and optionally `data`, `taskId`, `contextId`, `referenceTaskIds`)."
            ))
        })?;
    let mut parts = Vec::new();
    if let Some(text) = arguments.text.filter(|t| !t.trim().is_empty()) {
        parts.push(Part::text(text));
    }
    match arguments.data {
        Some(Value::Object(data)) => parts.push(Part::data(Value::Object(data))),
        Some(other) => {
            return Err(Refusal(format!(
                "`data` must be a JSON object, not {other}"
            )));
        }
        None => {}
    }
    if parts.is_empty() {
        return Err(Refusal(
            "send the agent something: a non-empty `text` or `data`".into(),
        ));
    }
    let agent = &tool.agent;
    let transport = transport_to(tool, caller)?;
    check_ids(
        &*transport,
        agent,
        arguments.task_id.as_deref(),
        arguments.context_id.as_deref(),
        session,
    )
    .await?;
    let message = Message {
        message_id: new_id(),
        context_id: arguments.context_id,
        task_id: arguments.task_id,
        role: Role::User,
        parts,
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: arguments.reference_task_ids,
    };
    let request = SendMessageRequest {
        tenant: transport.interface().tenant.clone(),
        ..SendMessageRequest::non_blocking(message)
    };
    let sent = transport
        .send(&request)
        .await
        .map_err(|e| refused(agent, &e))?;
    let task = match sent {
        SendMessageResponse::Message(reply) => {
            let context = reply.context_id.clone().unwrap_or_default();
            session.contexts.lock().insert((agent.clone(), context));
            return Ok(Outcome::Done(message_answer(&reply)));
        }
        SendMessageResponse::Task(task) => task,
    };
    follow(agent, &*transport, task, caller.wait, ask).await
}

/// Waits for `agent`'s `task` as a call does, at most `wait`, until it ends or asks
/// something; each question `ask` answers is sent on, and waited for in turn.
pub async fn follow(
    agent: &str,
    transport: &dyn Transport,
    task: Task,
    wait: Duration,
    ask: Option<&Ask>,
) -> Result<Outcome, Refusal> {
    let mut task = settled(transport, task, wait).await;
    let mut asked = 0;
    while let Some(ask) = ask.filter(|_| asked < MOST_ASKED) {
        if task.status.state != TaskState::InputRequired {
            break;
        }
        let question = task.status.message.as_ref().map(Message::text);
        let Some(answer) = ask(question.unwrap_or_default()).await else {
            break;
        };
        asked += 1;
        task = match answer_task(transport, &task, answer).await {
            Ok(SendMessageResponse::Task(next)) => settled(transport, next, wait).await,
            Ok(SendMessageResponse::Message(reply)) => {
                return Ok(Outcome::Done(message_answer(&reply)));
            }
            Err(e) => return Err(refused(agent, &e)),
        };
    }
    let state = task.status.state;
    Ok(if state == TaskState::InputRequired {
        Outcome::Asks(Box::new(task))
    } else if state.is_terminal() || state.is_interrupted() {
        Outcome::Done(task_answer(&task))
    } else {
        Outcome::Working(Box::new(task))
    })
}

/// Refuses identifiers this agent never gave: a `taskId` it does not know (or whose
/// task ended), a `contextId` none of the caller's tasks or answers have.
async fn check_ids(
    transport: &dyn Transport,
    agent: &str,
    task_id: Option<&str>,
    context_id: Option<&str>,
    session: &Session,
) -> Result<(), Refusal> {
    if let Some(task_id) = task_id {
        let task = transport.get_task(task_id, Some(0)).await.map_err(|e| match e {
            CallError::A2A(_) => Refusal(format!(
                "taskId {task_id} is not a task of agent {agent}: never invent a taskId. Omit it to start a new request, or reuse the taskId of an answer that asked for input."
            )),
            other => refused(agent, &other),
        })?;
        if task.status.state.is_terminal() {
            return Err(Refusal(format!(
                "task {task_id} is {} and takes no more messages: start a new request (omit taskId; keep contextId {} to stay in the conversation, and list {task_id} in referenceTaskIds to build on it).",
                task.status.state.as_v03_str(),
                task.context_id
            )));
        }
        if let Some(context) = context_id
            && context != task.context_id
        {
            return Err(Refusal(format!(
                "task {task_id} belongs to context {}, not {context}: reuse both from the same answer.",
                task.context_id
            )));
        }
        return Ok(());
    }
    let Some(context) = context_id else {
        return Ok(());
    };
    if session
        .contexts
        .lock()
        .contains(&(agent.to_owned(), context.to_owned()))
    {
        return Ok(());
    }
    let listed = transport
        .list_tasks(&ListTasksRequest {
            context_id: Some(context.to_owned()),
            page_size: Some(1),
            ..Default::default()
        })
        .await
        .map_err(|e| refused(agent, &e))?;
    match listed.tasks.is_empty() {
        false => Ok(()),
        true => Err(Refusal(format!(
            "contextId {context} did not come from agent {agent}: never invent a contextId. Omit it on your first message to this agent, or reuse the contextId of one of its answers."
        ))),
    }
}

/// The task once it ends or asks something, or as it stands after `wait`.
async fn settled(transport: &dyn Transport, mut task: Task, wait: Duration) -> Task {
    let deadline = tokio::time::Instant::now() + wait;
    let mut pause = POLL_FIRST;
    while !(task.status.state.is_terminal() || task.status.state.is_interrupted()) {
        let now = tokio::time::Instant::now();
        if now >= deadline {
            break;
        }
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(POLL_MOST);
        match transport.get_task(&task.id, Some(0)).await {
            Ok(read) => task = read,
            Err(e) => {
                tracing::debug!(task_id = %task.id, error = %e, "a task being waited for could not be read");
            }
        }
    }
    task
}

/// The refusal for a failed A2A call to `agent`.
pub fn refused(agent: &str, error: &CallError) -> Refusal {
    match error {
        CallError::A2A(e) => Refusal(format!("agent {agent} refused: {}", e.message)),
        CallError::Transport(e) => Refusal(format!("agent {agent} could not be reached: {e}")),
    }
}
