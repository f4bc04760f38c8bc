//! The CLI's failures and their exit statuses (spec §11.4, §11.6, Appendix D): a
//! protocol failure carries the A2A error's name (`TaskNotFoundError`), a failure of the
//! CLI's own an `A2ACLI_ERR_*` code; each maps to one exit status, printed as the
//! spec's error envelope with `-o json`, as `Error:` and `Hint:` lines on stderr otherwise.

use sb_client::{CallError, CardError};
use sb_protocol::{A2AError, ErrorKind};
use serde_json::{Value, json};

use super::opts::Format;

/// Exit statuses (spec §11.6, and the opt-in task outcomes of `--exit-status`). Stable:
/// scripts test them.
pub(crate) mod exit {
    pub(crate) const FAILURE: u8 = 1;
    pub(crate) const USAGE: u8 = 2;
    pub(crate) const UNREACHABLE: u8 = 3;
    pub(crate) const AUTH: u8 = 4;
    pub(crate) const TIMEOUT: u8 = 5;
    /// `--exit-status`: the task ended failed, canceled or rejected.
    pub(crate) const TASK_UNSUCCESSFUL: u8 = 6;
    /// `--exit-status`: the task waits for input or auth.
    pub(crate) const TASK_INTERRUPTED: u8 = 7;
    /// Interrupted by Ctrl-C while waiting (the shell's 128 + SIGINT).
    pub(crate) const INTERRUPTED: u8 = 130;
}

/// One failure, as the error envelope describes it.
#[derive(Clone, Debug)]
pub(crate) struct CliError {
    pub code: String,
    pub message: String,
    pub hint: Option<String>,
    /// The binding's code (the JSON-RPC error code), when the agent gave one.
    pub a2a_code: Option<i64>,
    pub exit: u8,
}

impl CliError {
    fn local(symbol: &str, exit: u8, message: impl Into<String>) -> CliError {
        CliError {
            code: format!("A2ACLI_ERR_{symbol}"),
            message: message.into(),
            hint: None,
            a2a_code: None,
            exit,
        }
    }

    pub(crate) fn usage(message: impl Into<String>) -> CliError {
        CliError::local("USAGE", exit::USAGE, message)
            .with_hint("see `switchboard help` or `switchboard <command> --help`")
    }

    pub(crate) fn unreachable(message: impl Into<String>) -> CliError {
        CliError::local("UNREACHABLE", exit::UNREACHABLE, message)
            .with_hint("check the address and that the agent is running")
    }

    pub(crate) fn timeout(message: impl Into<String>) -> CliError {
        CliError::local("TIMEOUT", exit::TIMEOUT, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> CliError {
        CliError::local("INTERNAL", exit::FAILURE, message)
    }

    pub(crate) fn card_invalid(message: impl Into<String>) -> CliError {
        CliError::local("CARD_INVALID", exit::FAILURE, message)
    }

    pub(crate) fn card_not_found(message: impl Into<String>) -> CliError {
        CliError::local("CARD_NOT_FOUND", exit::UNREACHABLE, message).with_hint(
            "give the agent's origin, its Switchboard URL (http://host/agents/NAME), a card URL or a card file",
        )
    }

    /// Credentials refused: missing when none were given, else rejected.
    pub(crate) fn auth(message: impl Into<String>, had_credentials: bool) -> CliError {
        match had_credentials {
            true => CliError::local("AUTH_FAILED", exit::AUTH, message)
                .with_hint("check the token or key (--bearer / A2ACLI_BEARER, --api-key / A2ACLI_API_KEY)"),
            false => CliError::local("CREDENTIALS_MISSING", exit::AUTH, message).with_hint(
                "pass --bearer (or set A2ACLI_BEARER / SWITCHBOARD_TOKEN) or --api-key (A2ACLI_API_KEY), or get a token with `switchboard auth login AGENT`",
            ),
        }
    }

    /// An operation the agent's card says it does not offer: refused before any call
    /// (spec §13.3), under the name of the A2A error the agent would answer with.
    pub(crate) fn capability_missing(kind: ErrorKind, message: impl Into<String>) -> CliError {
        CliError {
            code: a2a_name(kind).to_owned(),
            message: message.into(),
            hint: Some("the card's `capabilities` do not declare it; nothing was sent".into()),
            a2a_code: None,
            exit: exit::FAILURE,
        }
    }

    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> CliError {
        self.hint = Some(hint.into());
        self
    }

    /// A failed call: the A2A error by name, or the connection's failure.
    pub(crate) fn from_call(error: CallError, had_credentials: bool) -> CliError {
        match error {
            CallError::A2A(error) => CliError::from_a2a(error, had_credentials),
            CallError::Transport(message) if is_auth_status(&message) => {
                CliError::auth(message, had_credentials)
            }
            CallError::Transport(message) if message.contains("unreadable") => CliError::internal(
                message,
            )
            .with_hint("the answer is not A2A: try another --transport, or --debug for details"),
            CallError::Transport(message) => CliError::unreachable(message),
        }
    }

    fn from_a2a(error: A2AError, had_credentials: bool) -> CliError {
        if error.kind == ErrorKind::Unauthenticated {
            let mut refused = CliError::auth(error.message, had_credentials);
            refused.a2a_code = Some(ErrorKind::Unauthenticated.jsonrpc_code());
            return refused;
        }
        let hint = match error.kind {
            ErrorKind::TaskNotFound => Some(
                "check the task id (`switchboard task list` shows yours); no task was created; --debug shows the calls",
            ),
            ErrorKind::TaskNotCancelable => Some("the task has already ended"),
            ErrorKind::VersionNotSupported => Some("try --a2a-version 0.3 if the agent is older"),
            ErrorKind::PushNotificationNotSupported => {
                Some("the agent's card does not offer push notifications")
            }
            ErrorKind::ResourceExhausted => Some("retry later"),
            _ => None,
        };
        CliError {
            code: a2a_name(error.kind).to_owned(),
            message: error.message,
            hint: hint.map(str::to_owned),
            a2a_code: Some(error.kind.jsonrpc_code()),
            exit: exit::FAILURE,
        }
    }

    /// A card that could not be had: not found or unreachable (3), or unusable (1).
    pub(crate) fn from_card(error: CardError) -> CliError {
        let message = error.to_string();
        match error {
            CardError::Unreachable { reason, .. } if is_auth_status(&reason) => {
                CliError::auth(message, false)
            }
            CardError::Unreachable { .. } => CliError::unreachable(message),
            CardError::NotFound { .. } => CliError::card_not_found(message),
            CardError::Invalid { .. } | CardError::Signature { .. } => {
                CliError::card_invalid(message)
            }
        }
    }

    /// The error envelope (Appendix B).
    pub(crate) fn envelope(&self) -> Value {
        json!({"error": {
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            "a2aCode": self.a2a_code,
        }})
    }

    /// Prints the failure for `format`; with `streamed`, the envelope is one JSON line.
    pub(crate) fn print(&self, format: Format, streamed: bool) {
        match format {
            Format::Json => {
                let envelope = self.envelope();
                match streamed {
                    true => println!("{envelope}"),
                    false => println!("{envelope:#}"),
                }
            }
            Format::Text => {
                eprintln!("Error: {} ({})", self.message, self.code);
                if let Some(hint) = &self.hint {
                    eprintln!("Hint: {hint}");
                }
            }
        }
    }
}

fn is_auth_status(message: &str) -> bool {
    message.contains("HTTP 401") || message.contains("HTTP 403")
}

/// The A2A name of an error (A2A §3.3.2 and the JSON-RPC standard errors); the kinds
/// that are Switchboard's own carry a `SWITCHBOARD_` prefix (spec §11.4: vendor codes
/// keep out of the `A2ACLI_ERR_` namespace).
pub(crate) fn a2a_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::ParseError => "JSONParseError",
        ErrorKind::InvalidRequest => "InvalidRequestError",
        ErrorKind::MethodNotFound => "MethodNotFoundError",
        ErrorKind::InvalidParams => "InvalidParamsError",
        ErrorKind::Internal => "InternalError",
        ErrorKind::TaskNotFound => "TaskNotFoundError",
        ErrorKind::TaskNotCancelable => "TaskNotCancelableError",
        ErrorKind::PushNotificationNotSupported => "PushNotificationNotSupportedError",
        ErrorKind::UnsupportedOperation => "UnsupportedOperationError",
        ErrorKind::ContentTypeNotSupported => "ContentTypeNotSupportedError",
        ErrorKind::InvalidAgentResponse => "InvalidAgentResponseError",
        ErrorKind::ExtendedAgentCardNotConfigured => "ExtendedAgentCardNotConfiguredError",
        ErrorKind::ExtensionSupportRequired => "ExtensionSupportRequiredError",
        ErrorKind::VersionNotSupported => "VersionNotSupportedError",
        ErrorKind::Unauthenticated => "SWITCHBOARD_UNAUTHENTICATED",
        ErrorKind::ResourceExhausted => "SWITCHBOARD_RESOURCE_EXHAUSTED",
        ErrorKind::PayloadTooLarge => "SWITCHBOARD_PAYLOAD_TOO_LARGE",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn protocol_errors_keep_their_a2a_name_and_local_ones_their_code() {
        let missing = CliError::from_call(
            CallError::A2A(A2AError::new(ErrorKind::TaskNotFound, "no task t")),
            false,
        );
        assert_eq!(missing.code, "TaskNotFoundError");
        assert_eq!(missing.exit, exit::FAILURE);
        assert_eq!(missing.envelope()["error"]["a2aCode"], -32001);
        let down = CliError::from_call(CallError::Transport("connection refused".into()), false);
        assert_eq!(
            (down.code.as_str(), down.exit),
            ("A2ACLI_ERR_UNREACHABLE", 3)
        );
        let refused = CliError::from_call(CallError::Transport("HTTP 401".into()), true);
        assert_eq!(
            (refused.code.as_str(), refused.exit),
            ("A2ACLI_ERR_AUTH_FAILED", 4)
        );
    }
}
