//! Calls of Switchboard's own HTTP APIs (the registry, `/fleet/*`, `/api/ceremonies`),
//! for `agents`, `inbox`, `ceremonies` and `health URL`: the base URL and the (admin or caller's) token, and the
//! error body those APIs answer with (`{"error": {code, status, message, field}}`)
//! turned into the CLI's failures: `SWITCHBOARD_<STATUS>` codes (a vendor prefix, spec
//! §11.4), 401/403 as exit 4, an unreachable server as exit 3.

use clap::Args;
use serde_json::Value;

use super::error::{CliError, exit};
use super::opts::FormatOpts;

/// Where the Switchboard is and who asks.
#[derive(Clone, Debug, Args)]
pub(crate) struct ApiOpts {
    /// The Switchboard's base URL.
    #[arg(long, env = "SWITCHBOARD_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// The admin token (every agent and task) or a caller's credential (their own);
    /// also `SWITCHBOARD_TOKEN`.
    #[arg(
        long,
        visible_alias = "bearer",
        env = "SWITCHBOARD_TOKEN",
        hide_env_values = true
    )]
    pub token: Option<String>,
    #[command(flatten)]
    pub output: FormatOpts,
}

impl ApiOpts {
    fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.url.trim_end_matches('/'))
    }

    /// One call: the JSON answered (`Value::Null` for an empty body).
    pub(crate) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, CliError> {
        self.call_with_headers(method, path, body, &[]).await
    }

    /// [`ApiOpts::call`] with `headers` besides the token (an API's own key header).
    pub(crate) async fn call_with_headers(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Result<Value, CliError> {
        let url = self.endpoint(path);
        let mut request = reqwest::Client::new().request(method, &url);
        if let Some(token) = self.token.as_deref().filter(|t| !t.is_empty()) {
            request = request.bearer_auth(token);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .map_err(|e| CliError::unreachable(format!("cannot reach {url}: {e}")))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| CliError::unreachable(format!("{url}: the answer broke off: {e}")))?;
        let json: Value = match text.trim().is_empty() {
            true => Value::Null,
            false => serde_json::from_str(&text).map_err(|_| {
                CliError::internal(format!("{url}: HTTP {status}, not JSON: {}", text.trim()))
                    .with_hint("is this a Switchboard's URL? (--url or SWITCHBOARD_URL)")
            })?,
        };
        if status.is_success() {
            return Ok(json);
        }
        let error = &json["error"];
        let message = error["message"]
            .as_str()
            .map_or_else(|| format!("HTTP {status}"), str::to_owned);
        let message = match error["field"].as_str() {
            Some(field) => format!("{message} (field {field})"),
            None => message,
        };
        if status == reqwest::StatusCode::UNAUTHORIZED || status == reqwest::StatusCode::FORBIDDEN {
            return Err(CliError::auth(message, self.token.is_some()).with_hint(
                "pass the admin token (or your credential) with --token or SWITCHBOARD_TOKEN",
            ));
        }
        let name = error["status"].as_str().unwrap_or("HTTP_ERROR");
        Err(CliError {
            code: format!("SWITCHBOARD_{name}"),
            message,
            hint: None,
            a2a_code: None,
            exit: exit::FAILURE,
        })
    }
}

/// `text` with its control characters out (a value from the server on a terminal).
pub(crate) fn clean(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}
