//! The A2A 1.0 JSON-RPC requests the scenarios send, and what they look for in answers.
//! Every server under test speaks 1.0 with `A2A-Version: 1.0` (see `bench/peers`).

use bytes::Bytes;
use serde_json::{Value, json};

/// What a SendMessage asks for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Send<'a> {
    pub text: &'a str,
    pub streaming: bool,
    pub return_immediately: bool,
    pub push_url: Option<&'a str>,
}

fn rpc(method: &str, params: Value) -> Bytes {
    Bytes::from(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string())
}

/// A SendMessage (or SendStreamingMessage) with a message id unique to this request.
pub fn send(message_id: &str, send: Send<'_>) -> Bytes {
    let mut configuration = json!({});
    if send.return_immediately {
        configuration["returnImmediately"] = json!(true);
    }
    if let Some(url) = send.push_url {
        configuration["taskPushNotificationConfig"] = json!({"url": url});
    }
    let params = json!({
        "message": {
            "messageId": message_id,
            "role": "ROLE_USER",
            "parts": [{"text": send.text}],
        },
        "configuration": configuration,
    });
    let method = if send.streaming {
        "SendStreamingMessage"
    } else {
        "SendMessage"
    };
    rpc(method, params)
}

/// One blocking SendMessage of "hello" on a new connection: a server is ready when it
/// completes one, and B3 reads the task it made.
pub async fn send_hello(
    target: &crate::http::Target,
    prefix: &str,
) -> anyhow::Result<crate::http::Reply> {
    let mut conn = crate::http::Connection::open(target).await?;
    let body = send(
        &format!("{prefix}-{}", unix_micros()),
        Send {
            text: "hello",
            ..Send::default()
        },
    );
    conn.call(body).await
}

pub fn get_task(task_id: &str) -> Bytes {
    rpc("GetTask", json!({"id": task_id}))
}

pub fn subscribe(task_id: &str) -> Bytes {
    rpc("SubscribeToTask", json!({"id": task_id}))
}

pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A JSON-RPC success (no `error` member at the top level of the answer).
pub fn is_success(body: &[u8]) -> bool {
    contains(body, b"\"result\"") && !contains(body, b"\"error\":{")
}

pub fn is_completed(body: &[u8]) -> bool {
    contains(body, b"TASK_STATE_COMPLETED")
}

/// The task id of a SendMessage answer: `result.task.id` (1.0) or `result.id`.
pub fn task_id(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let result = value.get("result")?;
    result
        .pointer("/task/id")
        .or_else(|| result.get("id"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The `t=<unix µs>` stamp the bench agent puts in its tick updates.
pub fn tick_micros(data: &[u8]) -> Option<u64> {
    let start = data.windows(2).position(|w| w == b"t=")? + 2;
    let digits = data[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    std::str::from_utf8(&data[start..start + digits])
        .ok()?
        .parse()
        .ok()
}

pub fn unix_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_answers() {
        let task = br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t-1","status":{"state":"TASK_STATE_COMPLETED"}}}}"#;
        assert!(is_success(task) && is_completed(task));
        assert_eq!(task_id(task).as_deref(), Some("t-1"));
        let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"no"}}"#;
        assert!(!is_success(error));
        assert_eq!(task_id(error), None);
        assert_eq!(
            tick_micros(br#"{"text":"t=1763800000123456"}"#),
            Some(1_763_800_000_123_456)
        );
        assert_eq!(tick_micros(b"no stamp"), None);
    }

    #[test]
    fn builds_1_0_requests() -> anyhow::Result<()> {
        let body = send(
            "m-1",
            Send {
                text: "hi \"there\"",
                return_immediately: true,
                push_url: Some("http://127.0.0.1:9/hook"),
                ..Send::default()
            },
        );
        let v: Value = serde_json::from_slice(&body)?;
        assert_eq!(v["method"], "SendMessage");
        assert_eq!(v["params"]["message"]["parts"][0]["text"], "hi \"there\"");
        assert_eq!(v["params"]["configuration"]["returnImmediately"], true);
        assert_eq!(
            v["params"]["configuration"]["taskPushNotificationConfig"]["url"],
            "http://127.0.0.1:9/hook"
        );
        Ok(())
    }
}
