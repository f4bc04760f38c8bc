//! The raw messages a transport exchanges, logged for a person debugging a call (the
//! CLI's `--debug`, a2a-cli `A2ACLI_OUT_007`): each request with its method, URL and
//! body, each answer with its status and body, each event of a stream, and for gRPC each
//! message as its ProtoJSON. One tap, which every binding calls where it sends and
//! reads, so what is shown and what is hidden is decided here once.
//!
//! The messages go to `tracing` at TRACE under the target [`TARGET`], so a server that
//! runs with `sb_client=debug` does not log its callers' payloads; only a subscriber
//! that asks for this target sees them. Credentials never show (`A2ACLI_AUTH_004`):
//! every value the [`Placement`] sends (a bearer token, an API key, a service
//! parameter) is replaced wherever it appears, the credential headers are named with
//! their values redacted, and the `token` and `credentials` members of a JSON body (a
//! push config's) are redacted too. Nothing turns the redaction off.

use std::fmt::Display;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::auth::Placement;

/// The `tracing` target of the raw messages.
pub const TARGET: &str = "sb_client::wire";

/// What stands for a redacted value.
const REDACTED: &str = "[REDACTED]";

/// JSON members that hold a credential of their own (a push config's token and the
/// `Authorization` credentials its deliveries carry).
const SECRET_MEMBERS: [&str; 2] = ["token", "credentials"];

/// The tap of one transport: the secrets to hide and the names they travel under.
#[derive(Clone, Debug, Default)]
pub struct Tap {
    /// Every credential value, longest first (a value that contains another is replaced
    /// whole).
    secrets: Arc<[String]>,
    /// The headers (or metadata, or query parameters) that carry them.
    names: Arc<[String]>,
}

impl Tap {
    /// The tap of a transport sending `placement`.
    pub fn new(placement: &Placement) -> Tap {
        let mut secrets = Vec::new();
        let mut names = Vec::new();
        for (name, value) in placement.headers.iter().chain(&placement.query) {
            names.push(name.to_ascii_lowercase());
            secrets.push(value.clone());
            // `Bearer TOKEN`, `name=KEY` (a cookie): the bare credential too.
            if let Some((_, bare)) = value.split_once([' ', '=']) {
                secrets.push(bare.to_owned());
            }
        }
        secrets.retain(|s| !s.trim().is_empty());
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Tap {
            secrets: secrets.into(),
            names: names.into(),
        }
    }

    /// Whether anything listens: the messages are not even formatted otherwise.
    pub fn enabled() -> bool {
        tracing::enabled!(target: TARGET, tracing::Level::TRACE)
    }

    /// A request going out: `call` names the A2A operation.
    pub fn request(&self, call: &str, method: &str, url: &str, body: Option<&str>) {
        if !Tap::enabled() {
            return;
        }
        let headers = self
            .names
            .iter()
            .map(|name| format!("\n{name}: {REDACTED}"))
            .collect::<String>();
        let body = body.map(|b| format!("\n{}", self.redact_body(b)));
        let line = format!(
            "{call} → {method} {url}{headers}{}",
            body.unwrap_or_default()
        );
        tracing::trace!(target: TARGET, "{}", self.redact(&line));
    }

    /// The answer to a request.
    pub fn response(&self, call: &str, status: impl Display, body: &[u8]) {
        if !Tap::enabled() {
            return;
        }
        let body = self.redact_body(&String::from_utf8_lossy(body));
        tracing::trace!(target: TARGET, "{}", self.redact(&format!("{call} ← {status}\n{body}")));
    }

    /// One server-sent event of a stream.
    pub fn event(&self, call: &str, id: Option<&str>, data: &str) {
        if !Tap::enabled() {
            return;
        }
        let id = id.map(|id| format!(" id={id}")).unwrap_or_default();
        let body = self.redact_body(data);
        tracing::trace!(target: TARGET, "{}", self.redact(&format!("{call} ← event{id}\n{body}")));
    }

    /// A gRPC message, as its ProtoJSON; `outgoing` for a request.
    pub fn message(&self, call: &str, outgoing: bool, message: &impl Serialize) {
        if !Tap::enabled() {
            return;
        }
        let json =
            serde_json::to_string(message).unwrap_or_else(|e| format!("(not shown as JSON: {e})"));
        let line = match outgoing {
            true => {
                let metadata = self
                    .names
                    .iter()
                    .map(|name| format!("\n{name}: {REDACTED}"))
                    .collect::<String>();
                format!("{call} → gRPC{metadata}\n{}", self.redact_body(&json))
            }
            false => format!("{call} ← gRPC\n{}", self.redact_body(&json)),
        };
        tracing::trace!(target: TARGET, "{}", self.redact(&line));
    }

    /// `text` with every credential value replaced.
    pub fn redact(&self, text: &str) -> String {
        self.secrets.iter().fold(text.to_owned(), |text, secret| {
            text.replace(secret, REDACTED)
        })
    }

    /// A body with its secret members redacted, when it is JSON (as sent otherwise).
    fn redact_body(&self, body: &str) -> String {
        match serde_json::from_str::<Value>(body) {
            Ok(mut json) => {
                hide_members(&mut json);
                json.to_string()
            }
            Err(_) => body.to_owned(),
        }
    }
}

fn hide_members(value: &mut Value) {
    match value {
        Value::Object(members) => {
            for (name, member) in members.iter_mut() {
                match SECRET_MEMBERS.contains(&name.as_str()) && member.is_string() {
                    true => *member = Value::String(REDACTED.to_owned()),
                    false => hide_members(member),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(hide_members),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_replaced_wherever_they_appear() {
        let placement = Placement {
            headers: vec![
                ("Authorization".into(), "Bearer s3cr3t-token".into()),
                ("X-Tenant".into(), "acme-param".into()),
                ("cookie".into(), "session=c00kie".into()),
            ],
            query: vec![("api_key".into(), "k3y-value".into())],
        };
        let tap = Tap::new(&placement);
        let text = "url?api_key=k3y-value Bearer s3cr3t-token s3cr3t-token acme-param c00kie";
        let redacted = tap.redact(text);
        for secret in ["s3cr3t-token", "k3y-value", "acme-param", "c00kie"] {
            assert!(!redacted.contains(secret), "{redacted}");
        }
        let body = r#"{"params":{"url":"http://h","token":"push-tok","authentication":{"credentials":"cr3d"}}}"#;
        let hidden = tap.redact_body(body);
        assert!(
            !hidden.contains("push-tok") && !hidden.contains("cr3d"),
            "{hidden}"
        );
        assert!(hidden.contains("http://h"));
    }
}
