//! An agent's question on the 2026-07-28 protocol, where a server may not send the client
//! requests of its own (no `elicitation/create` during a call): the tool call answers
//! with an input-required result instead (SEP-2322, multi round-trip requests), whose
//! one `inputRequests` entry is the question's form ([`crate::question`]), and the client
//! calls the tool again with the person's answer in `inputResponses` and the
//! `requestState` echoed.
//!
//! The `requestState` is the MCP task id format ([`TaskHandle`]): the agent and its A2A
//! task. Nothing is kept here, so any gateway can take the retry; and since the client
//! can send back anything, the retry reaches the task only as `tasks/update` does, with
//! its own request's credentials, so the agent's A2A checks decide whether the caller
//! may answer it. The responses are delivered as `tasks/update` delivers them
//! ([`TaskHandle::update`]): an answer goes to the task, a declined question cancels it,
//! responses under other keys are ignored. The call then goes on waiting as any call
//! does ([`follow`]).

use rmcp::model::{
    ClientCapabilities, ErrorData, InputRequiredResult, InputResponses, ProtocolVersion,
};
use sb_client::CallError;
use sb_protocol::Task;

use crate::call::{Ask, Caller, Outcome, Refusal, follow, transport_to};
use crate::catalog::{AgentTool, tool_name};
use crate::question::input_requests;
use crate::tasks::TaskHandle;

/// Whether a request's protocol is one without the `initialize` handshake (2026-07-28
/// or later), where the server may not put requests to the client.
pub fn is_modern(version: Option<&ProtocolVersion>) -> bool {
    version.is_some_and(|version| !version.has_initialize())
}

/// Whether the client can show its person a form: it declared `elicitation` with
/// `form`, or with no mode at all (which means form).
pub fn takes_forms(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .elicitation
        .as_ref()
        .is_some_and(|modes| modes.form.is_some() || modes.url.is_none())
}

/// The input-required result asking `agent`'s `task`'s question, its request state
/// naming the task.
pub fn input_required(agent: &str, task: &Task) -> Result<InputRequiredResult, ErrorData> {
    let state = TaskHandle::new(agent, task).id();
    Ok(InputRequiredResult::new(
        Some(input_requests(task)?),
        Some(state),
    ))
}

/// The task a retry's `requestState` names, when it is one this server gives for a call
/// of `agent`'s tool; a clear error otherwise.
pub fn continued(state: &str, agent: &str) -> Result<TaskHandle, ErrorData> {
    let handle = TaskHandle::decode(state).ok_or_else(|| {
        ErrorData::invalid_params(
            format!(
                "requestState {state} is not one this server gave: send back the requestState of the input_required result exactly as received, or call the tool anew without one"
            ),
            None,
        )
    })?;
    if handle.agent != agent {
        return Err(ErrorData::invalid_params(
            format!(
                "requestState {state} continues a call of {}, not of {}: send it back with the call it came from",
                tool_name(&handle.agent),
                tool_name(agent)
            ),
            None,
        ));
    }
    Ok(handle)
}

/// Continues a call of `tool` that came back input-required: the responses delivered
/// to the task `state` names, with `caller`'s credentials, then the task waited for as
/// a call waits. The outer error is a retry that does not hold (a request state this
/// server never gave, or a task these credentials do not reach, or a malformed
/// response); the inner one, what a call would have been refused with.
pub async fn resume(
    tool: &AgentTool,
    caller: &Caller,
    state: &str,
    responses: &InputResponses,
    ask: Option<&Ask>,
) -> Result<Result<Outcome, Refusal>, ErrorData> {
    let handle = continued(state, &tool.agent)?;
    let transport = match transport_to(tool, caller) {
        Ok(transport) => transport,
        Err(refusal) => return Ok(Err(refusal)),
    };
    // Read first, so that a task these credentials do not reach is told as the request
    // state's fault, apart from what delivering the responses may refuse.
    let asked = match transport.get_task(&handle.task_id, Some(0)).await {
        Ok(task) => task,
        Err(CallError::A2A(e)) => {
            return Err(ErrorData::invalid_params(
                format!(
                    "requestState {state} does not hold: {}",
                    handle.absence(&e.message)
                ),
                None,
            ));
        }
        Err(e) => return Err(handle.error(&e)),
    };
    handle.deliver(&*transport, &asked, responses).await?;
    let task = handle.read(&*transport).await?;
    Ok(follow(&tool.agent, &*transport, task, caller.wait, ask).await)
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ElicitationCapability, FormElicitationCapability, UrlElicitationCapability};
    use sb_protocol::{Message, TaskState, TaskStatus};
    use serde_json::Value;

    use super::*;

    fn capabilities(elicitation: Option<ElicitationCapability>) -> ClientCapabilities {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = elicitation;
        capabilities
    }

    #[test]
    fn only_protocols_without_the_handshake_are_modern() {
        assert!(is_modern(Some(&ProtocolVersion::V_2026_07_28)));
        assert!(!is_modern(Some(&ProtocolVersion::V_2025_11_25)));
        assert!(!is_modern(None));
    }

    #[test]
    fn a_client_takes_forms_when_it_declares_them_or_no_mode() {
        let form = ElicitationCapability::default().with_form(FormElicitationCapability::default());
        let url = ElicitationCapability::default().with_url(UrlElicitationCapability::default());
        let both = form.clone().with_url(UrlElicitationCapability::default());
        assert!(takes_forms(&capabilities(Some(form))));
        assert!(takes_forms(&capabilities(Some(both))));
        assert!(takes_forms(&capabilities(Some(
            ElicitationCapability::default()
        ))));
        assert!(!takes_forms(&capabilities(Some(url))));
        assert!(!takes_forms(&capabilities(None)));
    }

    #[test]
    fn the_question_goes_back_as_a_form_with_the_task_as_state() {
        let task = Task {
            id: "t:1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: Some(Message {
                    message_id: "m1".into(),
                    ..Message::agent_text("Which one?")
                }),
                timestamp: None,
            },
            artifacts: Vec::new(),
            history: Vec::new(),
            metadata: None,
        };
        let result = input_required("consolidate", &task).map_err(|e| e.message);
        let wire = result.map(|r| serde_json::to_value(r).unwrap_or_default());
        let wire = wire.unwrap_or_default();
        assert_eq!(wire["resultType"], "input_required", "{wire}");
        let request = &wire["inputRequests"]["question-m1"];
        assert_eq!(request["method"], "elicitation/create", "{wire}");
        assert_eq!(request["params"]["message"], "Which one?");
        let state = wire["requestState"].as_str().unwrap_or_default();
        let handle = continued(state, "consolidate").map_err(|e| e.message);
        assert_eq!(handle.map(|h| h.task_id), Ok("t:1".to_owned()));
        assert_eq!(wire.get("_meta"), None::<&Value>);
    }

    #[test]
    fn a_request_state_this_server_never_gave_is_refused_clearly() {
        for state in ["", "tampered", "consolidate:soon:t1", "consolidate:1:"] {
            let error = continued(state, "consolidate").err();
            let error = error.map(|e| (e.code.0, e.message.into_owned()));
            assert!(
                error.as_ref().is_some_and(|(code, message)| *code == -32602
                    && message.contains("is not one this server gave")),
                "{state}: {error:?}"
            );
        }
    }

    #[test]
    fn a_request_state_of_another_tool_is_refused() {
        let error = continued("echo:1700000000000:t1", "consolidate").err();
        let message = error.map(|e| e.message.into_owned()).unwrap_or_default();
        assert!(
            message.contains("continues a call of A2A_echo, not of A2A_consolidate"),
            "{message}"
        );
    }
}
