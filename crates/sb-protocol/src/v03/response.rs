//! What a client of a 0.3 server needs: 0.3 responses (tasks, SendMessage results,
//! stream events, push configs) read into the 1.0 shape, and SendMessage's parameters
//! written in either 0.3 dialect. The mirror of `task` and `request`.

use serde_json::{Map, Value, json};

use super::request::{push_config_inner_to_v03, push_inner_from_v03};
use super::task::{message_from_v03, message_to_v03, part_from_v03};
use super::{Dialect03, put, put_vec};
use crate::model::TaskState;
use crate::requests::{SendMessageConfiguration, SendMessageRequest};

// === input ===

/// Rewrites a 0.3 `Task` (either dialect, `kind` optional) into the 1.0 `Task` JSON shape.
pub fn task_from_v03(value: Value, dialect: Dialect03) -> Result<Value, String> {
    let (_, body) = classify(value, &[Kind::Task], Some(Kind::Task), "task")?;
    task_body(body, dialect)
}

/// Rewrites the result of 0.3 `message/send` (a task or a message, bare with `kind` or
/// wrapped ProtoJSON-style) into the 1.0 `SendMessageResponse` JSON shape.
pub fn message_or_task_from_v03(value: Value, dialect: Dialect03) -> Result<Value, String> {
    let (kind, body) = classify(value, &[Kind::Task, Kind::Message], None, "result")?;
    let body = match kind {
        Kind::Task => task_body(body, dialect)?,
        _ => message_from_v03(Value::Object(body), dialect)?,
    };
    Ok(json!({ kind.member(): body }))
}

/// Rewrites one 0.3 stream event into the 1.0 `StreamResponse` JSON shape; `final` is
/// dropped (1.0 ends a stream on terminal and interrupted states instead).
pub fn stream_event_from_v03(value: Value, dialect: Dialect03) -> Result<Value, String> {
    let (kind, mut body) = classify(value, &Kind::ALL, None, "event")?;
    let body = match kind {
        Kind::Task => task_body(body, dialect)?,
        Kind::Message => message_from_v03(Value::Object(body), dialect)?,
        Kind::StatusUpdate => {
            body.remove("final");
            convert_field(&mut body, "status", |s| status_from_v03(s, dialect))?;
            Value::Object(body)
        }
        Kind::ArtifactUpdate => {
            convert_field(&mut body, "artifact", |a| artifact_from_v03(a, dialect))?;
            Value::Object(body)
        }
    };
    Ok(json!({ kind.member(): body }))
}

/// Rewrites a 0.3 `TaskPushNotificationConfig` (`taskId`, or the ProtoJSON resource
/// `name`, plus `pushNotificationConfig`) into the 1.0 flat JSON shape.
pub fn push_config_from_v03(value: Value) -> Result<Value, String> {
    let mut obj = object(value, "a push notification config")?;
    let inner = obj.remove("pushNotificationConfig");
    let inner = inner.ok_or("pushNotificationConfig is required")?;
    let named = match obj.remove("name") {
        Some(Value::String(name)) => Some(
            name.strip_prefix("tasks/")
                .and_then(|rest| rest.split_once("/pushNotificationConfigs/"))
                .map(|(task_id, id)| (task_id.to_owned(), id.to_owned()))
                .ok_or_else(|| {
                    format!("name \"{name}\" is not tasks/{{id}}/pushNotificationConfigs/{{id}}")
                })?,
        ),
        _ => None,
    };
    let task_id = match (obj.remove("taskId"), &named) {
        (Some(Value::String(id)), _) => id,
        (None, Some((id, _))) => id.clone(),
        (Some(other), _) => return Err(format!("taskId must be a string, found {other}")),
        (None, None) => return Err("taskId (or name tasks/{id}/…) is required".into()),
    };
    let mut out = push_inner_from_v03(inner)?;
    if let Value::Object(out) = &mut out {
        out.insert("taskId".into(), Value::String(task_id));
        if let Some((_, id)) = named.filter(|(_, id)| !id.is_empty()) {
            out.entry("id").or_insert(Value::String(id));
        }
    }
    Ok(out)
}

/// What a 0.3 result or event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Task,
    Message,
    StatusUpdate,
    ArtifactUpdate,
}

impl Kind {
    const ALL: [Kind; 4] = [
        Self::Task,
        Self::Message,
        Self::StatusUpdate,
        Self::ArtifactUpdate,
    ];

    /// Its kind-JSON `kind`, its 1.0 member, and the 0.3 proto field of the ProtoJSON
    /// member wrapping it (also accepted: the 1.0 member; `msg`'s JSON name is `message`).
    fn names(self) -> [&'static str; 3] {
        match self {
            Self::Task => ["task", "task", "task"],
            Self::Message => ["message", "message", "msg"],
            Self::StatusUpdate => ["status-update", "statusUpdate", "status_update"],
            Self::ArtifactUpdate => ["artifact-update", "artifactUpdate", "artifact_update"],
        }
    }

    fn name(self) -> &'static str {
        self.names()[0]
    }

    fn member(self) -> &'static str {
        self.names()[1]
    }
}

/// Splits a 0.3 result into what it is and its body. What it is comes from the one
/// ProtoJSON member wrapping it (`{"task": …}`), else its `kind`, else `untagged`.
fn classify(
    value: Value,
    allowed: &[Kind],
    untagged: Option<Kind>,
    what: &str,
) -> Result<(Kind, Map<String, Value>), String> {
    let mut obj = object(value, &format!("a 0.3 {what}"))?;
    let wrapper = match obj.keys().next() {
        Some(key) if obj.len() == 1 => (Kind::ALL.into_iter())
            .find(|kind| kind.names()[1..].contains(&key.as_str()))
            .map(|kind| (key.clone(), kind)),
        _ => None,
    };
    let (wrapped, mut body) = match wrapper {
        Some((key, kind)) => {
            let inner = obj.remove(&key).unwrap_or(Value::Null);
            (Some(kind), object(inner, &key)?)
        }
        None => (None, obj),
    };
    let expected = expected(allowed);
    let tagged = match body.remove("kind") {
        None | Some(Value::Null) => None,
        Some(Value::String(k)) => Some(
            Kind::ALL
                .into_iter()
                .find(|kind| kind.name() == k)
                .ok_or_else(|| format!("unknown {what} kind \"{k}\" (expected {expected})"))?,
        ),
        Some(other) => return Err(format!("kind must be a string, found {other}")),
    };
    let kind = match (wrapped, tagged) {
        (Some(w), Some(t)) if w != t => {
            return Err(format!("{} holds kind \"{}\"", w.member(), t.name()));
        }
        (Some(kind), _) | (None, Some(kind)) => kind,
        (None, None) => untagged.ok_or_else(|| {
            format!("a 0.3 {what} needs \"kind\" ({expected}) or one member naming it")
        })?,
    };
    if !allowed.contains(&kind) {
        return Err(format!(
            "a {what} cannot be a {} (expected {expected})",
            kind.name()
        ));
    }
    Ok((kind, body))
}

fn expected(kinds: &[Kind]) -> String {
    let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    names.join(", ")
}

fn object(value: Value, what: &str) -> Result<Map<String, Value>, String> {
    match value {
        Value::Object(obj) => Ok(obj),
        _ => Err(format!("{what} must be an object")),
    }
}

fn task_body(mut obj: Map<String, Value>, dialect: Dialect03) -> Result<Value, String> {
    convert_field(&mut obj, "status", |s| status_from_v03(s, dialect))?;
    convert_array(&mut obj, "history", |m| message_from_v03(m, dialect))?;
    convert_array(&mut obj, "artifacts", |a| artifact_from_v03(a, dialect))?;
    Ok(Value::Object(obj))
}

/// 0.3 `TaskStatus`; its message is `update` in 0.3 proto field names.
fn status_from_v03(value: Value, dialect: Dialect03) -> Result<Value, String> {
    let mut obj = object(value, "status")?;
    let raw = obj.remove("state").ok_or("state is required")?;
    let state = match &raw {
        Value::String(s) => TaskState::parse(s),
        Value::Number(n) => n.as_i64().and_then(TaskState::from_number),
        _ => None,
    }
    .ok_or_else(|| format!("unknown task state {raw}"))?;
    obj.insert("state".into(), Value::String(state.as_str().into()));
    let update = obj.remove("update");
    if let Some(msg) = obj.remove("message").or(update).filter(|m| !m.is_null()) {
        let msg = message_from_v03(msg, dialect).map_err(|e| format!("message: {e}"))?;
        obj.insert("message".into(), msg);
    }
    Ok(Value::Object(obj))
}

fn artifact_from_v03(value: Value, dialect: Dialect03) -> Result<Value, String> {
    let mut obj = object(value, "an artifact")?;
    convert_array(&mut obj, "parts", |p| part_from_v03(p, dialect))?;
    Ok(Value::Object(obj))
}

/// Converts the required member `key`.
fn convert_field(
    obj: &mut Map<String, Value>,
    key: &str,
    convert: impl Fn(Value) -> Result<Value, String>,
) -> Result<(), String> {
    let value = obj
        .remove(key)
        .ok_or_else(|| format!("{key} is required"))?;
    obj.insert(
        key.into(),
        convert(value).map_err(|e| format!("{key}: {e}"))?,
    );
    Ok(())
}

/// Converts each item of the array `key` (absent or null: left out).
fn convert_array(
    obj: &mut Map<String, Value>,
    key: &str,
    convert: impl Fn(Value) -> Result<Value, String>,
) -> Result<(), String> {
    match obj.remove(key) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(items)) => {
            let items = items
                .into_iter()
                .enumerate()
                .map(|(i, v)| convert(v).map_err(|e| format!("{key}[{i}]: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            obj.insert(key.into(), Value::Array(items));
            Ok(())
        }
        Some(_) => Err(format!("{key} must be an array")),
    }
}

// === output ===

/// 0.3 `MessageSendParams` from the 1.0 request, the inverse of `send_params_from_v03`.
/// `blocking` is always written: absent means blocking on JSON-RPC, not on HTTP+JSON.
pub fn send_params_to_v03(request: &SendMessageRequest, dialect: Dialect03) -> Value {
    let default = SendMessageConfiguration::default();
    let config = request.configuration.as_ref().unwrap_or(&default);
    let mut cfg = Map::new();
    let modes = config
        .accepted_output_modes
        .iter()
        .cloned()
        .map(Value::String);
    put_vec(&mut cfg, "acceptedOutputModes", modes.collect());
    // 0.3 servers read 0 as "no limit"; a client wanting no history trims it itself.
    put(&mut cfg, "historyLength", config.history_length);
    if let Some(push) = &config.task_push_notification_config {
        // The 0.3 proto field is `push_notification`; ProtoJSON parsers reject or drop
        // the kind-JSON name.
        let key = match dialect {
            Dialect03::KindJson => "pushNotificationConfig",
            Dialect03::ProtoJson => "pushNotification",
        };
        cfg.insert(key.into(), push_config_inner_to_v03(push));
    }
    cfg.insert("blocking".into(), Value::Bool(!config.return_immediately));
    let mut obj = Map::new();
    obj.insert("message".into(), message_to_v03(&request.message, dialect));
    obj.insert("configuration".into(), Value::Object(cfg));
    let metadata = request.metadata.clone().map(Value::Object);
    put(&mut obj, "metadata", metadata);
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde::de::DeserializeOwned;
    use serde_json::{Value, json};

    use super::*;
    use crate::model::{
        SendMessageResponse as Sent, StreamResponse as Event, Task,
        TaskPushNotificationConfig as PushConfig,
    };
    use crate::v03::{push_config_to_v03, send_params_from_v03, stream_event_to_v03, task_to_v03};

    const BOTH: [Dialect03; 2] = [Dialect03::KindJson, Dialect03::ProtoJson];

    fn parse<T: DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).unwrap()
    }

    /// A task both dialects carry losslessly; `rich` adds what only kind-JSON carries
    /// (part metadata, non-object data, reference task ids).
    fn sample_task(rich: bool) -> Task {
        let mut task: Task = parse(json!({"id": "t", "contextId": "c", "metadata": {"k": "v"},
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2025-01-02T03:04:05.250Z",
                "message": {"messageId": "s", "role": "ROLE_AGENT", "parts": [{"text": "more?"}]}},
            "history": [{"messageId": "u", "role": "ROLE_USER", "extensions": ["urn:x"], "parts": [{"text": "hi"},
                    {"raw": "AAE=", "mediaType": "application/octet-stream", "filename": "b.bin"}]},
                {"messageId": "a", "role": "ROLE_AGENT", "metadata": {"m": 1}, "parts": [{"data": {"k": [1]}}]}],
            "artifacts": [{"artifactId": "r", "name": "n", "description": "d", "metadata": {"x": true},
                "extensions": ["urn:y"], "parts": [{"text": "t"}, {"data": {"a": null}},
                    {"url": "https://e/x.png", "mediaType": "image/png", "filename": "x.png"}]}]}));
        if rich {
            task.history[0].reference_task_ids = vec!["old".into()];
            task.history[1].parts[0].metadata = parse(json!({"p": 1}));
            let odd_data = parse(json!({"data": [1, "x"]}));
            task.artifacts[0].parts.push(odd_data);
        }
        task
    }

    #[test]
    fn task_round_trips() {
        for (dialect, rich) in [(Dialect03::KindJson, true), (Dialect03::ProtoJson, false)] {
            let task = sample_task(rich);
            let back = task_from_v03(task_to_v03(&task, dialect), dialect).unwrap();
            assert_eq!(back["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
            assert_eq!(parse::<Task>(back), task, "{dialect:?}");
        }
    }

    #[test]
    fn events_and_results_round_trip() {
        let task = sample_task(false);
        let mut events: Vec<Event> = parse(json!([{"task": task}, {"message": task.history[1]},
            {"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": task.artifacts[0],
                                "append": true, "lastChunk": true, "metadata": {"k": "v"}}}]));
        events.extend(TaskState::ALL.map(|state| {
            let (message, timestamp) = (&task.status.message, task.status.timestamp);
            let status = json!({"state": state, "message": message, "timestamp": timestamp});
            parse(json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": status}}))
        }));
        for (dialect, event) in BOTH
            .iter()
            .flat_map(|&d| events.iter().map(move |e| (d, e)))
        {
            let wire = stream_event_to_v03(event, event.ends_stream(), dialect);
            let back = stream_event_from_v03(wire.clone(), dialect).unwrap();
            assert!(back.pointer("/statusUpdate/final").is_none());
            assert_eq!(&parse::<Event>(back), event);
            // A message/send result is written as a stream event is (wrapped in ProtoJSON).
            let sent = match event {
                Event::Task(t) => Sent::Task(t.clone()),
                Event::Message(m) => Sent::Message(m.clone()),
                _ => continue,
            };
            let back = message_or_task_from_v03(wire, dialect).unwrap();
            assert_eq!(parse::<Sent>(back), sent);
        }
    }

    #[test]
    fn js_sdk_literals() {
        let wire = json!({"kind": "status-update", "taskId": "t", "contextId": "c",
            "status": {"state": "input-required", "timestamp": "2025-01-01T00:00:00Z"}, "final": true});
        let back = stream_event_from_v03(wire, Dialect03::KindJson).unwrap();
        let expected = json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2025-01-01T00:00:00Z"}}});
        assert_eq!(back, expected);
        assert!(parse::<Event>(back).ends_stream());
        let wire = json!({"kind": "task", "id": "t", "contextId": "c",
            "status": {"state": "completed", "message": {"kind": "message", "role": "agent",
                "messageId": "m", "parts": [{"kind": "text", "text": "done"}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"kind": "file",
                "file": {"uri": "https://x/y.png", "mimeType": "image/png", "name": "y.png"}}]}]});
        let back = message_or_task_from_v03(wire, Dialect03::KindJson).unwrap();
        let Sent::Task(task) = parse(back) else {
            panic!("expected a task");
        };
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(task.status.message.unwrap().text(), "done");
        let file = &task.artifacts[0].parts[0];
        assert_eq!(file.filename.as_deref(), Some("y.png"));
    }

    #[test]
    fn python_proto_json_literals() {
        // MessageToDict output; the 0.3 proto field name `update` is read as well.
        let wire = json!({"statusUpdate": {"taskId": "t", "contextId": "c", "final": true,
            "status": {"state": "TASK_STATE_CANCELLED",
                "update": {"messageId": "m", "role": "ROLE_AGENT", "content": [{"text": "bye"}]}}}});
        let back = stream_event_from_v03(wire, Dialect03::ProtoJson).unwrap();
        let status = &back["statusUpdate"]["status"];
        assert_eq!(status["state"], "TASK_STATE_CANCELED");
        assert_eq!(status["message"]["parts"][0]["text"], "bye");
        let wire =
            json!({"msg": {"messageId": "m", "role": "ROLE_AGENT", "content": [{"text": "x"}]}});
        let back = message_or_task_from_v03(wire, Dialect03::ProtoJson).unwrap();
        assert!(matches!(parse(back), Sent::Message(m) if m.text() == "x"));
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let cases = json!([
            ["event", {"kind": "bogus", "taskId": "t"},
             "unknown event kind \"bogus\" (expected task, message, status-update, artifact-update)"],
            ["event", {"taskId": "t", "status": {}},
             "a 0.3 event needs \"kind\" (task, message, status-update, artifact-update) or one member naming it"],
            ["result", {"kind": "status-update", "taskId": "t"},
             "a result cannot be a status-update (expected task, message)"],
            ["result", {"task": {"kind": "message"}}, "task holds kind \"message\""],
            ["task", {"id": "t", "status": {"state": "sleeping"}}, "status: unknown task state \"sleeping\""],
            ["task", {"id": "t", "status": {"state": "working"},
                      "history": [{"messageId": "m", "role": "user", "parts": [{"text": "x"}]}]},
             "history[0]: parts[0]: a part needs \"kind\": text, file or data"],
            ["push", {"pushNotificationConfig": {"url": "https://h"}}, "taskId (or name tasks/{id}/…) is required"],
        ]);
        for case in cases.as_array().unwrap() {
            let (input, dialect) = (case[1].clone(), Dialect03::KindJson);
            let result = match case[0].as_str().unwrap() {
                "event" => stream_event_from_v03(input, dialect),
                "result" => message_or_task_from_v03(input, dialect),
                "task" => task_from_v03(input, dialect),
                _ => push_config_from_v03(input),
            };
            assert_eq!(result.unwrap_err(), case[2]);
        }
    }

    #[test]
    fn push_config_round_trips() {
        let config: PushConfig = parse(json!({"id": "p", "taskId": "t", "url": "https://h/x",
            "token": "tok", "authentication": {"scheme": "Bearer", "credentials": "c"}}));
        let no_id = PushConfig {
            id: None,
            ..config.clone()
        };
        for (dialect, config) in BOTH.into_iter().flat_map(|d| [(d, &config), (d, &no_id)]) {
            let back = push_config_from_v03(push_config_to_v03(config, dialect)).unwrap();
            assert_eq!(&parse::<PushConfig>(back), config);
        }
    }

    #[test]
    fn send_params_round_trip() {
        let mut request: SendMessageRequest = parse(json!({
            "message": sample_task(false).history[0], "metadata": {"k": 1},
            "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 5,
                "taskPushNotificationConfig": {"url": "https://h", "token": "t",
                    "authentication": {"scheme": "Basic", "credentials": "x"}}}}));
        for (dialect, return_immediately) in BOTH.into_iter().flat_map(|d| [(d, false), (d, true)])
        {
            if let Some(c) = request.configuration.as_mut() {
                c.return_immediately = return_immediately;
            }
            let wire = send_params_to_v03(&request, dialect);
            assert_eq!(wire["configuration"]["blocking"], !return_immediately);
            let back = send_params_from_v03(wire, dialect).unwrap();
            assert_eq!(parse::<SendMessageRequest>(back), request);
        }
        let wire = send_params_to_v03(&request, Dialect03::ProtoJson);
        let push = &wire["configuration"]["pushNotification"];
        assert_eq!(push["authentication"]["schemes"], json!(["Basic"]));
        request.configuration = None;
        let wire = send_params_to_v03(&request, Dialect03::ProtoJson);
        assert_eq!(wire["configuration"], json!({"blocking": true}));
        assert_eq!(wire["message"]["content"][0], json!({"text": "hi"}));
    }
}
