//! An agent's question as an MCP form with one field, `answer`: put to the person at the
//! client during a tool call (`elicitation/create`, [`crate::server`]), or surfaced in
//! `inputRequests` — an MCP task's ([`crate::tasks`]) or a tool call's input-required
//! result ([`crate::rounds`]) — and read back from the client's `inputResponses`.

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, ErrorData,
    InputRequest, InputRequests,
};
use sb_protocol::{Message, Task};
use serde::Deserialize;
use serde_json::Value;

/// What the person at the client is asked for: the answer to an agent's question.
#[derive(Debug, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Reply {
    /// Your answer to the agent's question.
    pub answer: String,
}

rmcp::elicit_safe!(Reply);

/// The elicitation asking `question`, as an entry of a task's `inputRequests`.
pub fn input_request(question: String) -> Result<InputRequest, ErrorData> {
    let requested_schema = ElicitationSchema::from_type::<Reply>().map_err(|e| {
        ErrorData::internal_error(format!("the answer's form cannot be described: {e}"), None)
    })?;
    Ok(InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: question,
            requested_schema,
        },
    )))
}

/// What the agent last said of `task`, if anything: the question, when it asks one.
pub fn said(task: &Task) -> Option<String> {
    let text = task.status.message.as_ref().map(Message::text);
    text.filter(|t| !t.is_empty())
}

/// The key of the question `task` asks now: the id of the status message that asks it,
/// new with each question, so a key is never reused over the task's life.
pub fn question_key(task: &Task) -> String {
    match &task.status.message {
        Some(message) => format!("question-{}", message.message_id),
        None => "question".to_owned(),
    }
}

/// The question `task` asks now, as the one entry of an `inputRequests` map.
pub fn input_requests(task: &Task) -> Result<InputRequests, ErrorData> {
    let mut requests = InputRequests::new();
    requests.insert(
        question_key(task),
        input_request(said(task).unwrap_or_default())?,
    );
    Ok(requests)
}

/// One `inputResponses` entry: the client's result for the elicitation.
#[derive(Debug, Deserialize)]
struct Response {
    action: ElicitationAction,
    #[serde(default)]
    content: Option<Value>,
}

/// The answer in a response to [`input_request`]: `Some` text when accepted, `None`
/// when the person declined or dismissed the question; an error for a response that is
/// not an elicitation result, or that accepts without an answer.
pub fn answer_of(response: &Value) -> Result<Option<String>, ErrorData> {
    let response = Response::deserialize(response).map_err(|e| {
        ErrorData::invalid_params(
            format!(
                "an inputResponses entry is an elicitation result ({{\"action\": \"accept\", \"content\": {{\"answer\": …}}}}, or \"decline\" or \"cancel\"): {e}"
            ),
            None,
        )
    })?;
    match response.action {
        ElicitationAction::Accept => {
            let answer = response
                .content
                .as_ref()
                .and_then(|c| c.get("answer"))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|a| !a.is_empty());
            match answer {
                Some(answer) => Ok(Some(answer.to_owned())),
                None => Err(ErrorData::invalid_params(
                    "an accepted answer carries the text for the agent in content.answer",
                    None,
                )),
            }
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_accepted_answer_is_its_text() {
        let answer = answer_of(&json!({"action": "accept", "content": {"answer": " yes "}}));
        assert_eq!(answer.ok().flatten().as_deref(), Some("yes"));
    }

    #[test]
    fn a_declined_or_dismissed_question_has_no_answer() {
        for action in ["decline", "cancel"] {
            let answer = answer_of(&json!({"action": action}));
            assert!(matches!(answer, Ok(None)), "{action}: {answer:?}");
        }
    }

    #[test]
    fn an_acceptance_without_an_answer_is_refused() {
        for content in [json!({}), json!({"answer": " "}), json!({"answer": 3})] {
            let answer = answer_of(&json!({"action": "accept", "content": content}));
            assert!(answer.is_err(), "{content}: {answer:?}");
        }
        assert!(answer_of(&json!("yes")).is_err());
        assert!(answer_of(&json!({"action": "maybe"})).is_err());
    }

    #[test]
    fn the_question_is_a_form_with_one_answer_field() {
        let request = input_request("Which one?".into()).map_err(|e| e.message);
        let wire = request.map(|r| serde_json::to_value(r).ok());
        let wire = wire.ok().flatten().unwrap_or_default();
        assert_eq!(wire["method"], "elicitation/create");
        assert_eq!(wire["params"]["mode"], "form");
        assert_eq!(wire["params"]["message"], "Which one?");
        assert_eq!(
            wire["params"]["requestedSchema"]["properties"]["answer"]["type"],
            "string"
        );
    }
}
