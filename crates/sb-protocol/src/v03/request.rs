//! SendMessage's parameters read from 0.3 into the 1.0 shape, and push-notification
//! configs written in and read from either 0.3 dialect.

use serde_json::{Map, Value, json};

use super::task::message_from_v03;
use super::{Dialect03, put};
use crate::model::TaskPushNotificationConfig;

// === output ===

/// The 0.3 `PushNotificationConfig` (inner object).
pub fn push_config_inner_to_v03(config: &TaskPushNotificationConfig) -> Value {
    let mut obj = Map::new();
    put(&mut obj, "id", config.id.clone());
    obj.insert("url".into(), Value::String(config.url.clone()));
    put(&mut obj, "token", config.token.clone());
    if let Some(auth) = &config.authentication {
        let mut a = Map::new();
        a.insert("schemes".into(), json!([auth.scheme]));
        put(&mut a, "credentials", auth.credentials.clone());
        obj.insert("authentication".into(), Value::Object(a));
    }
    Value::Object(obj)
}

/// The 0.3 `TaskPushNotificationConfig` in either dialect.
pub fn push_config_to_v03(config: &TaskPushNotificationConfig, dialect: Dialect03) -> Value {
    let inner = push_config_inner_to_v03(config);
    match dialect {
        Dialect03::KindJson => json!({"taskId": config.task_id, "pushNotificationConfig": inner}),
        Dialect03::ProtoJson => json!({
            "name": format!(
                "tasks/{}/pushNotificationConfigs/{}",
                config.task_id,
                config.id.as_deref().unwrap_or_default()
            ),
            "pushNotificationConfig": inner,
        }),
    }
}

// === input ===

/// Rewrites 0.3 `MessageSendParams` into the 1.0 `SendMessageRequest` JSON shape.
/// An absent `blocking` means blocking on JSON-RPC (the 0.3 SDKs' reading) but not on
/// HTTP+JSON: there it is a proto3 bool that both official clients omit when false, so
/// absent must mean non-blocking, as the SDK servers read it.
pub fn send_params_from_v03(value: Value, dialect: Dialect03) -> Result<Value, String> {
    let Value::Object(mut obj) = value else {
        return Err("params must be an object".into());
    };
    let message = obj
        .remove("message")
        .or_else(|| obj.remove("request"))
        .ok_or("message is required")?;
    let mut out = Map::new();
    out.insert("message".into(), message_from_v03(message, dialect)?);
    if let Some(meta) = obj.remove("metadata") {
        out.insert("metadata".into(), meta);
    }
    if let Some(config) = obj.remove("configuration") {
        let Value::Object(mut config) = config else {
            return Err("configuration must be an object".into());
        };
        let mut cfg = Map::new();
        if let Some(modes) = config
            .remove("acceptedOutputModes")
            .or_else(|| config.remove("accepted_output_modes"))
        {
            cfg.insert("acceptedOutputModes".into(), modes);
        }
        // 0.3 historyLength 0 meant "no limit" (digest §9.2).
        match config
            .remove("historyLength")
            .or_else(|| config.remove("history_length"))
        {
            Some(Value::Number(n)) if n.as_i64() == Some(0) => {}
            Some(Value::Null) | None => {}
            Some(other) => {
                cfg.insert("historyLength".into(), other);
            }
        }
        let push = config
            .remove("pushNotificationConfig")
            .or_else(|| config.remove("pushNotification"))
            .or_else(|| config.remove("push_notification"));
        if let Some(push) = push.filter(|p| !p.is_null()) {
            cfg.insert(
                "taskPushNotificationConfig".into(),
                push_inner_from_v03(push)?,
            );
        }
        let blocking = match config.remove("blocking") {
            None | Some(Value::Null) => dialect == Dialect03::KindJson,
            Some(Value::Bool(b)) => b,
            Some(_) => return Err("configuration.blocking must be a boolean".into()),
        };
        cfg.insert("returnImmediately".into(), Value::Bool(!blocking));
        out.insert("configuration".into(), Value::Object(cfg));
    }
    Ok(Value::Object(out))
}

/// Rewrites a 0.3 `PushNotificationConfig` into the 1.0 flat JSON shape (no taskId).
pub fn push_inner_from_v03(value: Value) -> Result<Value, String> {
    let Value::Object(mut obj) = value else {
        return Err("pushNotificationConfig must be an object".into());
    };
    if let Some(auth) = obj.remove("authentication").filter(|a| !a.is_null()) {
        let Value::Object(mut auth) = auth else {
            return Err("authentication must be an object".into());
        };
        let scheme = match auth.remove("schemes") {
            Some(Value::Array(schemes)) => schemes.into_iter().next(),
            Some(Value::Null) | None => auth.remove("scheme"),
            Some(_) => return Err("authentication.schemes must be an array".into()),
        };
        let credentials = auth.remove("credentials").filter(|c| !c.is_null());
        // Proto3 clients send an empty authentication message for "none".
        if scheme.is_none() && credentials.is_none() {
            return Ok(Value::Object(obj));
        }
        let mut out = Map::new();
        out.insert(
            "scheme".into(),
            scheme.unwrap_or(Value::String(String::new())),
        );
        if let Some(credentials) = credentials {
            out.insert("credentials".into(), credentials);
        }
        obj.insert("authentication".into(), Value::Object(out));
    }
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Dialect03, push_inner_from_v03, send_params_from_v03};

    #[test]
    fn send_params_default_to_blocking() {
        let params = json!({"message": {"kind": "message", "messageId": "m", "role": "user",
                                        "parts": [{"kind": "text", "text": "hi"}]},
                            "configuration": {"historyLength": 0,
                                              "pushNotificationConfig": {"url": "https://h", "authentication": {"schemes": ["Bearer"], "credentials": "c"}}}});
        let v = send_params_from_v03(params, Dialect03::KindJson).unwrap();
        assert_eq!(v["configuration"]["returnImmediately"], false);
        assert!(v["configuration"].get("historyLength").is_none());
        assert_eq!(
            v["configuration"]["taskPushNotificationConfig"]["authentication"]["scheme"],
            "Bearer"
        );
        assert_eq!(v["message"]["parts"][0], json!({"text": "hi"}));
    }

    #[test]
    fn empty_authentication_means_none() {
        let v = push_inner_from_v03(json!({"url": "https://h", "authentication": {"schemes": []}}))
            .unwrap();
        assert!(v.get("authentication").is_none());
        let v = push_inner_from_v03(json!({"url": "https://h", "authentication": {"schemes": ["Basic"], "credentials": "x"}})).unwrap();
        assert_eq!(
            v["authentication"],
            json!({"scheme": "Basic", "credentials": "x"})
        );
    }

    #[test]
    fn rest_blocking_is_a_proto3_bool() {
        let params = json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "hi"}]}, "configuration": {}});
        let v = send_params_from_v03(params, Dialect03::ProtoJson).unwrap();
        assert_eq!(v["configuration"]["returnImmediately"], true);
    }
}
