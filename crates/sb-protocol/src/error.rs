//! A2A errors: one type, rendered per binding and version (spec §6, digest §6).
//!
//! Every error says whether retrying can help (`retryable`) and names the task when there
//! is one, so a client can tell "try again later" from "fix your request".

use serde_json::{Map, Value, json};

use crate::Version;

/// The kinds of error A2A defines, with their codes (digest §6.1, the v1.0.1 mapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ErrorKind {
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
    /// Not an A2A code: the request lacks valid credentials (HTTP 401).
    Unauthenticated,
    /// Not an A2A code: a limit was hit (HTTP 429); retrying later can help.
    ResourceExhausted,
    /// Not an A2A code: the body is larger than the configured limit (HTTP 413).
    PayloadTooLarge,
}

impl ErrorKind {
    /// Every kind, for reading a code back ([`ErrorKind::from_jsonrpc_code`]).
    pub const ALL: [ErrorKind; 17] = [
        Self::ParseError,
        Self::InvalidRequest,
        Self::MethodNotFound,
        Self::InvalidParams,
        Self::Internal,
        Self::TaskNotFound,
        Self::TaskNotCancelable,
        Self::PushNotificationNotSupported,
        Self::UnsupportedOperation,
        Self::ContentTypeNotSupported,
        Self::InvalidAgentResponse,
        Self::ExtendedAgentCardNotConfigured,
        Self::ExtensionSupportRequired,
        Self::VersionNotSupported,
        Self::Unauthenticated,
        Self::ResourceExhausted,
        Self::PayloadTooLarge,
    ];

    /// The kind a JSON-RPC error code names (a client reading a server's error), from the
    /// same table [`ErrorKind::jsonrpc_code`] writes with; -32600 reads as InvalidRequest.
    pub fn from_jsonrpc_code(code: i64) -> Option<ErrorKind> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.jsonrpc_code() == code)
    }

    /// The kind a `google.rpc.ErrorInfo` reason names (a client reading a gRPC status or
    /// an HTTP+JSON error body), from the same table [`ErrorKind::reason`] writes with.
    pub fn from_reason(reason: &str) -> Option<ErrorKind> {
        Self::ALL.into_iter().find(|kind| kind.reason() == reason)
    }

    pub fn jsonrpc_code(self) -> i64 {
        match self {
            Self::ParseError => -32700,
            Self::InvalidRequest | Self::PayloadTooLarge => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::Internal => -32603,
            Self::TaskNotFound => -32001,
            Self::TaskNotCancelable => -32002,
            Self::PushNotificationNotSupported => -32003,
            Self::UnsupportedOperation => -32004,
            Self::ContentTypeNotSupported => -32005,
            Self::InvalidAgentResponse => -32006,
            Self::ExtendedAgentCardNotConfigured => -32007,
            Self::ExtensionSupportRequired => -32008,
            Self::VersionNotSupported => -32009,
            // Documented in docs/errors.md: our own codes inside the A2A range.
            Self::Unauthenticated => -32040,
            Self::ResourceExhausted => -32041,
        }
    }

    pub fn http_status(self) -> u16 {
        match self {
            Self::ParseError
            | Self::InvalidRequest
            | Self::InvalidParams
            | Self::TaskNotCancelable
            | Self::PushNotificationNotSupported
            | Self::UnsupportedOperation
            | Self::ContentTypeNotSupported
            | Self::ExtendedAgentCardNotConfigured
            | Self::ExtensionSupportRequired
            | Self::VersionNotSupported => 400,
            Self::MethodNotFound | Self::TaskNotFound => 404,
            Self::Internal | Self::InvalidAgentResponse => 500,
            Self::Unauthenticated => 401,
            Self::ResourceExhausted => 429,
            Self::PayloadTooLarge => 413,
        }
    }

    /// The gRPC status code name used in REST `google.rpc.Status` bodies.
    pub fn grpc_status(self) -> &'static str {
        match self {
            Self::ParseError
            | Self::InvalidRequest
            | Self::InvalidParams
            | Self::ContentTypeNotSupported => "INVALID_ARGUMENT",
            Self::MethodNotFound | Self::TaskNotFound => "NOT_FOUND",
            Self::Internal | Self::InvalidAgentResponse => "INTERNAL",
            Self::TaskNotCancelable
            | Self::PushNotificationNotSupported
            | Self::UnsupportedOperation
            | Self::ExtendedAgentCardNotConfigured
            | Self::ExtensionSupportRequired
            | Self::VersionNotSupported => "FAILED_PRECONDITION",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Self::PayloadTooLarge => "OUT_OF_RANGE",
        }
    }

    /// The `google.rpc.ErrorInfo.reason` (UPPER_SNAKE, no `Error` suffix).
    pub fn reason(self) -> &'static str {
        match self {
            Self::ParseError => "PARSE_ERROR",
            Self::InvalidRequest => "INVALID_REQUEST",
            Self::MethodNotFound => "METHOD_NOT_FOUND",
            Self::InvalidParams => "INVALID_PARAMS",
            Self::Internal => "INTERNAL_ERROR",
            Self::TaskNotFound => "TASK_NOT_FOUND",
            Self::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            Self::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            Self::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            Self::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            Self::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            Self::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            Self::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            Self::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            Self::Unauthenticated => "UNAUTHENTICATED",
            Self::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Self::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
        }
    }

    /// Whether the same request may succeed later without change.
    pub fn default_retryable(self) -> bool {
        matches!(self, Self::Internal | Self::ResourceExhausted)
    }
}

/// An error to return to an A2A client.
/// Serializable so the internal gRPC API can carry it between services unchanged.
#[derive(Clone, Debug, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[error("{message}")]
pub struct A2AError {
    pub kind: ErrorKind,
    pub message: String,
    pub task_id: Option<String>,
    pub retryable: bool,
    /// `(field, description)` pairs for a `google.rpc.BadRequest` detail.
    pub field_violations: Vec<(String, String)>,
}

impl A2AError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> A2AError {
        A2AError {
            kind,
            message: message.into(),
            task_id: None,
            retryable: kind.default_retryable(),
            field_violations: Vec::new(),
        }
    }

    pub fn with_task(mut self, task_id: impl Into<String>) -> A2AError {
        self.task_id = Some(task_id.into());
        self
    }

    pub fn retryable(mut self, retryable: bool) -> A2AError {
        self.retryable = retryable;
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> A2AError {
        A2AError::new(ErrorKind::InvalidParams, message)
    }

    /// An invalid-params error naming the offending field.
    pub fn invalid_field(field: &str, description: impl Into<String>) -> A2AError {
        let description = description.into();
        let mut err = A2AError::new(ErrorKind::InvalidParams, format!("{field}: {description}"));
        err.field_violations.push((field.to_owned(), description));
        err
    }

    pub fn task_not_found(task_id: &str) -> A2AError {
        A2AError::new(ErrorKind::TaskNotFound, format!("task {task_id} not found"))
            .with_task(task_id)
    }

    pub fn internal(message: impl Into<String>) -> A2AError {
        A2AError::new(ErrorKind::Internal, message)
    }

    pub fn unsupported(message: impl Into<String>) -> A2AError {
        A2AError::new(ErrorKind::UnsupportedOperation, message)
    }

    /// The `ErrorInfo.metadata` map (string values, as the proto requires).
    fn info_metadata(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        if let Some(task_id) = &self.task_id {
            meta.insert("taskId".into(), Value::String(task_id.clone()));
        }
        meta.insert(
            "retryable".into(),
            Value::String(self.retryable.to_string()),
        );
        meta
    }

    /// The typed 1.0 details: an `ErrorInfo`, plus `BadRequest` for field violations.
    pub fn details(&self) -> Vec<Value> {
        let mut details = vec![json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.reason(),
            "domain": "a2a-protocol.org",
            "metadata": self.info_metadata(),
        })];
        if !self.field_violations.is_empty() {
            let violations: Vec<Value> = self
                .field_violations
                .iter()
                .map(|(field, description)| json!({"field": field, "description": description}))
                .collect();
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": violations,
            }));
        }
        details
    }

    /// The JSON-RPC `error` member for the given protocol version.
    pub fn jsonrpc_error(&self, version: Version) -> Value {
        let data = match version {
            Version::V1_0 => Value::Array(self.details()),
            Version::V0_3 => {
                let mut data = Map::new();
                if let Some(task_id) = &self.task_id {
                    data.insert("taskId".into(), Value::String(task_id.clone()));
                }
                data.insert("retryable".into(), Value::Bool(self.retryable));
                data.insert("reason".into(), Value::String(self.kind.reason().into()));
                Value::Object(data)
            }
        };
        json!({"code": self.kind.jsonrpc_code(), "message": self.message, "data": data})
    }

    /// The REST body: `google.rpc.Status` in 1.0 (§11.6); 0.3 gets the same shape plus
    /// the JSON-RPC code, which both 0.3 SDK styles can read.
    pub fn rest_body(&self, version: Version) -> Value {
        let mut error = json!({
            "code": self.kind.http_status(),
            "status": self.kind.grpc_status(),
            "message": self.message,
            "details": self.details(),
        });
        if version == Version::V0_3 {
            error["a2aCode"] = json!(self.kind.jsonrpc_code());
        }
        json!({"error": error})
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn jsonrpc_codes_read_back_as_their_kind() {
        for kind in ErrorKind::ALL {
            let read = ErrorKind::from_jsonrpc_code(kind.jsonrpc_code()).unwrap();
            assert_eq!(read.jsonrpc_code(), kind.jsonrpc_code());
        }
        assert_eq!(
            ErrorKind::from_jsonrpc_code(-32001),
            Some(ErrorKind::TaskNotFound)
        );
        assert_eq!(ErrorKind::from_jsonrpc_code(-1), None);
    }

    use super::*;

    #[test]
    fn task_not_found_renders_per_version() {
        let err = A2AError::task_not_found("nope");
        let v1 = err.jsonrpc_error(Version::V1_0);
        assert_eq!(v1["code"], -32001);
        assert_eq!(v1["data"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(v1["data"][0]["metadata"]["taskId"], "nope");
        assert_eq!(v1["data"][0]["metadata"]["retryable"], "false");
        let v03 = err.jsonrpc_error(Version::V0_3);
        assert_eq!(v03["data"]["retryable"], false);
        let rest = err.rest_body(Version::V1_0);
        assert_eq!(rest["error"]["code"], 404);
        assert_eq!(rest["error"]["status"], "NOT_FOUND");
    }

    #[test]
    fn field_violations_become_bad_request() {
        let err = A2AError::invalid_field("message.parts", "must not be empty");
        let details = err.details();
        assert_eq!(details[1]["fieldViolations"][0]["field"], "message.parts");
        assert_eq!(err.kind.jsonrpc_code(), -32602);
    }
}
