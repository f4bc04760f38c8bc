//! Tasks and what they hold (statuses, messages, parts, artifacts) and stream events,
//! written in either 0.3 dialect, and 0.3 messages and parts read into the 1.0 shape.

use serde_json::{Map, Value, json};

use super::{Dialect03, put, put_vec};
use crate::model::{
    Artifact, Message, Part, PartContent, StreamResponse, Task, TaskState, TaskStatus,
};
use crate::serde_util::{encode_base64, format_timestamp};

const DATA_COMPAT_KEY: &str = "data_part_compat";

// === output ===

pub fn state_to_v03(state: TaskState, dialect: Dialect03) -> &'static str {
    match (dialect, state) {
        (Dialect03::KindJson, s) => s.as_v03_str(),
        (Dialect03::ProtoJson, TaskState::Canceled) => "TASK_STATE_CANCELLED",
        (Dialect03::ProtoJson, s) => s.as_str(),
    }
}

pub fn part_to_v03(part: &Part, dialect: Dialect03) -> Value {
    let mut obj = Map::new();
    let file = |uri_key: &str, bytes_key: &str, uri: Option<&str>, raw: Option<&[u8]>| {
        let mut file = Map::new();
        put(&mut file, uri_key, uri.map(str::to_owned));
        put(&mut file, bytes_key, raw.map(encode_base64));
        put(&mut file, "mimeType", part.media_type.clone());
        put(&mut file, "name", part.filename.clone());
        Value::Object(file)
    };
    let (uri_key, bytes_key) = match dialect {
        Dialect03::KindJson => ("uri", "bytes"),
        Dialect03::ProtoJson => ("fileWithUri", "fileWithBytes"),
    };
    let mut metadata = part.metadata.clone();
    match &part.content {
        PartContent::Text(text) => {
            put(&mut obj, "kind", kind(dialect, "text"));
            obj.insert("text".into(), Value::String(text.clone()));
        }
        PartContent::Url(url) => {
            put(&mut obj, "kind", kind(dialect, "file"));
            obj.insert("file".into(), file(uri_key, bytes_key, Some(url), None));
        }
        PartContent::Raw(bytes) => {
            put(&mut obj, "kind", kind(dialect, "file"));
            obj.insert("file".into(), file(uri_key, bytes_key, None, Some(bytes)));
        }
        PartContent::Data(data) => {
            put(&mut obj, "kind", kind(dialect, "data"));
            let object = match data {
                Value::Object(_) => data.clone(),
                other => {
                    metadata
                        .get_or_insert_with(Map::new)
                        .insert(DATA_COMPAT_KEY.into(), Value::Bool(true));
                    json!({"value": other})
                }
            };
            let wrapped = match dialect {
                Dialect03::KindJson => object,
                Dialect03::ProtoJson => json!({"data": object}),
            };
            obj.insert("data".into(), wrapped);
        }
    }
    if dialect == Dialect03::KindJson {
        put(&mut obj, "metadata", metadata.map(Value::Object));
    }
    Value::Object(obj)
}

fn kind(dialect: Dialect03, name: &str) -> Option<String> {
    (dialect == Dialect03::KindJson).then(|| name.to_owned())
}

pub fn message_to_v03(msg: &Message, dialect: Dialect03) -> Value {
    let mut obj = Map::new();
    put(&mut obj, "kind", kind(dialect, "message"));
    obj.insert("messageId".into(), Value::String(msg.message_id.clone()));
    put(&mut obj, "contextId", msg.context_id.clone());
    put(&mut obj, "taskId", msg.task_id.clone());
    let role = match dialect {
        Dialect03::KindJson => msg.role.as_v03_str(),
        Dialect03::ProtoJson => msg.role.as_str(),
    };
    obj.insert("role".into(), Value::String(role.into()));
    let parts: Vec<Value> = msg.parts.iter().map(|p| part_to_v03(p, dialect)).collect();
    let parts_key = match dialect {
        Dialect03::KindJson => "parts",
        Dialect03::ProtoJson => "content",
    };
    obj.insert(parts_key.into(), Value::Array(parts));
    put(
        &mut obj,
        "metadata",
        msg.metadata.clone().map(Value::Object),
    );
    put_vec(
        &mut obj,
        "extensions",
        msg.extensions.iter().cloned().map(Value::String).collect(),
    );
    if dialect == Dialect03::KindJson {
        put_vec(
            &mut obj,
            "referenceTaskIds",
            msg.reference_task_ids
                .iter()
                .cloned()
                .map(Value::String)
                .collect(),
        );
    }
    Value::Object(obj)
}

pub fn status_to_v03(status: &TaskStatus, dialect: Dialect03) -> Value {
    let mut obj = Map::new();
    obj.insert(
        "state".into(),
        Value::String(state_to_v03(status.state, dialect).into()),
    );
    put(
        &mut obj,
        "message",
        status.message.as_ref().map(|m| message_to_v03(m, dialect)),
    );
    put(
        &mut obj,
        "timestamp",
        status.timestamp.as_ref().map(format_timestamp),
    );
    Value::Object(obj)
}

pub fn artifact_to_v03(artifact: &Artifact, dialect: Dialect03) -> Value {
    let mut obj = Map::new();
    obj.insert(
        "artifactId".into(),
        Value::String(artifact.artifact_id.clone()),
    );
    put(&mut obj, "name", artifact.name.clone());
    put(&mut obj, "description", artifact.description.clone());
    let parts: Vec<Value> = artifact
        .parts
        .iter()
        .map(|p| part_to_v03(p, dialect))
        .collect();
    obj.insert("parts".into(), Value::Array(parts));
    put(
        &mut obj,
        "metadata",
        artifact.metadata.clone().map(Value::Object),
    );
    put_vec(
        &mut obj,
        "extensions",
        artifact
            .extensions
            .iter()
            .cloned()
            .map(Value::String)
            .collect(),
    );
    Value::Object(obj)
}

pub fn task_to_v03(task: &Task, dialect: Dialect03) -> Value {
    let mut obj = Map::new();
    put(&mut obj, "kind", kind(dialect, "task"));
    obj.insert("id".into(), Value::String(task.id.clone()));
    obj.insert("contextId".into(), Value::String(task.context_id.clone()));
    obj.insert("status".into(), status_to_v03(&task.status, dialect));
    put_vec(
        &mut obj,
        "artifacts",
        task.artifacts
            .iter()
            .map(|a| artifact_to_v03(a, dialect))
            .collect(),
    );
    put_vec(
        &mut obj,
        "history",
        task.history
            .iter()
            .map(|m| message_to_v03(m, dialect))
            .collect(),
    );
    put(
        &mut obj,
        "metadata",
        task.metadata.clone().map(Value::Object),
    );
    Value::Object(obj)
}

/// One stream event. `is_final` marks the last event before the server closes the stream
/// (0.3 `final`, set on terminal and interrupted states: digest §5.2).
pub fn stream_event_to_v03(event: &StreamResponse, is_final: bool, dialect: Dialect03) -> Value {
    let body = match event {
        StreamResponse::Task(task) => task_to_v03(task, dialect),
        StreamResponse::Message(msg) => message_to_v03(msg, dialect),
        StreamResponse::StatusUpdate(ev) => {
            let mut obj = Map::new();
            put(&mut obj, "kind", kind(dialect, "status-update"));
            obj.insert("taskId".into(), Value::String(ev.task_id.clone()));
            obj.insert("contextId".into(), Value::String(ev.context_id.clone()));
            obj.insert("status".into(), status_to_v03(&ev.status, dialect));
            obj.insert("final".into(), Value::Bool(is_final));
            put(&mut obj, "metadata", ev.metadata.clone().map(Value::Object));
            Value::Object(obj)
        }
        StreamResponse::ArtifactUpdate(ev) => {
            let mut obj = Map::new();
            put(&mut obj, "kind", kind(dialect, "artifact-update"));
            obj.insert("taskId".into(), Value::String(ev.task_id.clone()));
            obj.insert("contextId".into(), Value::String(ev.context_id.clone()));
            obj.insert("artifact".into(), artifact_to_v03(&ev.artifact, dialect));
            if ev.append {
                obj.insert("append".into(), Value::Bool(true));
            }
            if ev.last_chunk {
                obj.insert("lastChunk".into(), Value::Bool(true));
            }
            put(&mut obj, "metadata", ev.metadata.clone().map(Value::Object));
            Value::Object(obj)
        }
    };
    match dialect {
        Dialect03::KindJson => body,
        Dialect03::ProtoJson => {
            let key = match event {
                StreamResponse::Task(_) => "task",
                StreamResponse::Message(_) => "message",
                StreamResponse::StatusUpdate(_) => "statusUpdate",
                StreamResponse::ArtifactUpdate(_) => "artifactUpdate",
            };
            json!({ key: body })
        }
    }
}

// === input ===

/// Rewrites a 0.3 message (either dialect, `kind` optional) into the 1.0 JSON shape.
pub fn message_from_v03(value: Value, dialect: Dialect03) -> Result<Value, String> {
    let Value::Object(mut obj) = value else {
        return Err("message must be an object".into());
    };
    obj.remove("kind");
    if let Some(content) = obj.remove("content") {
        obj.entry("parts").or_insert(content);
    }
    if let Some(Value::Array(parts)) = obj.remove("parts") {
        let parts = parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| part_from_v03(p, dialect).map_err(|e| format!("parts[{i}]: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        obj.insert("parts".into(), Value::Array(parts));
    } else if obj.contains_key("parts") {
        return Err("parts must be an array".into());
    }
    Ok(Value::Object(obj))
}

pub(super) fn part_from_v03(value: Value, dialect: Dialect03) -> Result<Value, String> {
    let Value::Object(mut obj) = value else {
        return Err("a part must be an object".into());
    };
    let kind = obj.remove("kind");
    // kind-JSON parts must say what they are (types.ts); guessing from the members would
    // accept parts the client meant as something else.
    if dialect == Dialect03::KindJson {
        match kind.as_ref().and_then(Value::as_str) {
            Some("text" | "file" | "data") => {}
            Some(other) => {
                return Err(format!(
                    "unknown part kind \"{other}\" (expected text, file or data)"
                ));
            }
            None => return Err("a part needs \"kind\": text, file or data".into()),
        }
    }
    let mut out = Map::new();
    let mut metadata = obj.remove("metadata");
    if let Some(text) = obj.remove("text") {
        out.insert("text".into(), text);
    } else if let Some(file) = obj.remove("file") {
        let Value::Object(mut file) = file else {
            return Err("file must be an object".into());
        };
        let uri = file.remove("uri").or_else(|| file.remove("fileWithUri"));
        let bytes = file
            .remove("bytes")
            .or_else(|| file.remove("fileWithBytes"));
        match (uri, bytes) {
            (Some(uri), None) => out.insert("url".into(), uri),
            (None, Some(bytes)) => out.insert("raw".into(), bytes),
            _ => return Err("file must have exactly one of uri or bytes".into()),
        };
        if let Some(mime) = file.remove("mimeType").or_else(|| file.remove("mime_type")) {
            out.insert("mediaType".into(), mime);
        }
        if let Some(name) = file.remove("name") {
            out.insert("filename".into(), name);
        }
    } else if let Some(data) = obj.remove("data") {
        let data = match (dialect, data) {
            (Dialect03::ProtoJson, Value::Object(mut wrapper))
                if kind.is_none() && wrapper.len() == 1 && wrapper.contains_key("data") =>
            {
                wrapper.remove("data").unwrap_or(Value::Null)
            }
            (_, data) => data,
        };
        let compat = metadata
            .as_mut()
            .and_then(Value::as_object_mut)
            .and_then(|m| m.remove(DATA_COMPAT_KEY))
            .is_some_and(|v| v == Value::Bool(true));
        let data = match data {
            Value::Object(mut wrapped) if compat && wrapped.contains_key("value") => {
                wrapped.remove("value").unwrap_or(Value::Null)
            }
            other => other,
        };
        out.insert("data".into(), data);
    } else {
        return Err("a part must have text, file or data".into());
    }
    if let Some(meta) = metadata.filter(|m| m.as_object().is_none_or(|o| !o.is_empty())) {
        out.insert("metadata".into(), meta);
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{
        Dialect03, Message, Part, PartContent, Task, message_from_v03, part_from_v03, part_to_v03,
        task_to_v03,
    };

    fn sample_task() -> Task {
        serde_json::from_value(json!({
            "id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_CANCELED"},
            "artifacts": [{"artifactId": "a", "parts": [
                {"text": "x"},
                {"raw": "AAE=", "filename": "f.bin"},
                {"url": "https://e/x"},
                {"data": [1]}]}],
            "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"data": {"k": 1}}]}]
        }))
        .unwrap()
    }

    #[test]
    fn task_to_kind_json() {
        let v = task_to_v03(&sample_task(), Dialect03::KindJson);
        assert_eq!(v["kind"], "task");
        assert_eq!(v["status"]["state"], "canceled");
        let parts = &v["artifacts"][0]["parts"];
        assert_eq!(parts[0], json!({"kind": "text", "text": "x"}));
        // 0.3 text parts have no media type: the one loss the SDKs also accept (§3.6).
        let mut typed = Part::text("y");
        typed.media_type = Some("text/plain".into());
        assert_eq!(
            part_to_v03(&typed, Dialect03::KindJson),
            json!({"kind": "text", "text": "y"})
        );
        assert_eq!(parts[1]["file"], json!({"bytes": "AAE=", "name": "f.bin"}));
        assert_eq!(parts[2]["file"], json!({"uri": "https://e/x"}));
        assert_eq!(parts[3]["data"], json!({"value": [1]}));
        assert_eq!(parts[3]["metadata"]["data_part_compat"], true);
        assert_eq!(v["history"][0]["role"], "user");
    }

    #[test]
    fn task_to_proto_json() {
        let v = task_to_v03(&sample_task(), Dialect03::ProtoJson);
        assert!(v.get("kind").is_none());
        assert_eq!(v["status"]["state"], "TASK_STATE_CANCELLED");
        assert_eq!(
            v["artifacts"][0]["parts"][2]["file"]["fileWithUri"],
            "https://e/x"
        );
        assert_eq!(v["history"][0]["content"][0]["data"]["data"]["k"], 1);
        assert_eq!(v["history"][0]["role"], "ROLE_USER");
    }

    #[test]
    fn parts_round_trip_through_both_dialects() {
        let task = sample_task();
        for dialect in [Dialect03::KindJson, Dialect03::ProtoJson] {
            for msg in task.artifacts[0].parts.iter().chain(&task.history[0].parts) {
                let out = part_to_v03(msg, dialect);
                let back: Part =
                    serde_json::from_value(part_from_v03(out, dialect).unwrap()).unwrap();
                if dialect == Dialect03::ProtoJson {
                    // The 0.3 proto has no part metadata, so a non-object data value
                    // stays wrapped as {"value": …} (what the SDKs do as well).
                    let expected = match &msg.content {
                        PartContent::Data(d) if !d.is_object() => {
                            PartContent::Data(json!({"value": d}))
                        }
                        other => other.clone(),
                    };
                    assert_eq!(back.content, expected);
                } else {
                    assert_eq!(&back, msg);
                }
            }
        }
    }

    #[test]
    fn rest_message_uses_content() {
        let v = message_from_v03(
            json!({"messageId": "m", "role": "ROLE_USER", "content": [{"text": "a"}, {"file": {"fileWithUri": "u", "mimeType": "t/p"}}]}),
            Dialect03::ProtoJson,
        )
        .unwrap();
        let msg: Message = serde_json::from_value(v).unwrap();
        assert_eq!(msg.parts.len(), 2);
        assert_eq!(msg.parts[1].media_type.as_deref(), Some("t/p"));
    }
}
