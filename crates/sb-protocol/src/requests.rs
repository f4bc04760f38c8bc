//! Request parameters of the A2A operations (1.0 shapes; 0.3 input is normalised into
//! these by [`crate::v03`]), with the validation the spec requires of every server.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::A2AError;
use crate::model::{Message, Metadata, Role, Task, TaskPushNotificationConfig, TaskState};
use crate::serde_util;

/// Parses request params into `T`, turning serde's complaint into an invalid-params
/// error that names the offending field.
pub fn parse_params<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, A2AError> {
    serde_json::from_value(params)
        .map_err(|e| A2AError::invalid_params(format!("invalid params: {e}")))
}

/// [`parse_params`] from params' JSON text, without building a `Value` first.
pub fn parse_params_raw<T: serde::de::DeserializeOwned>(
    params: &serde_json::value::RawValue,
) -> Result<T, A2AError> {
    serde_json::from_str(params.get())
        .map_err(|e| A2AError::invalid_params(format!("invalid params: {e}")))
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(
        default,
        alias = "accepted_output_modes",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    #[serde(
        default,
        alias = "task_push_notification_config",
        alias = "pushNotificationConfig",
        skip_serializing_if = "Option::is_none"
    )]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "serde_util::opt_i32",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    #[serde(
        default,
        alias = "return_immediately",
        deserialize_with = "serde_util::lenient_bool",
        skip_serializing_if = "crate::model::is_false"
    )]
    pub return_immediately: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl SendMessageRequest {
    /// A request for `message` answered as soon as its task is made or resumed, without
    /// waiting for the agent (`returnImmediately`).
    pub fn non_blocking(message: Message) -> SendMessageRequest {
        SendMessageRequest {
            tenant: None,
            message,
            configuration: Some(SendMessageConfiguration {
                return_immediately: true,
                ..Default::default()
            }),
            metadata: None,
        }
    }

    /// Checks the REQUIRED fields of the message (spec §3.1.1, proto field behaviours).
    pub fn validate(&self) -> Result<(), A2AError> {
        let msg = &self.message;
        if msg.message_id.trim().is_empty() {
            return Err(A2AError::invalid_field("message.messageId", "is required"));
        }
        if msg.role == Role::Unspecified {
            return Err(A2AError::invalid_field(
                "message.role",
                "is required (ROLE_USER or ROLE_AGENT)",
            ));
        }
        if msg.parts.is_empty() {
            return Err(A2AError::invalid_field(
                "message.parts",
                "must contain at least one part",
            ));
        }
        if let Some(config) = &self.configuration {
            validate_history_length(config.history_length)?;
            if let Some(push) = &config.task_push_notification_config {
                validate_push_url(&push.url, "configuration.taskPushNotificationConfig.url")?;
            }
        }
        Ok(())
    }

    pub fn history_length(&self) -> Option<i32> {
        self.configuration.as_ref().and_then(|c| c.history_length)
    }

    pub fn returns_immediately(&self) -> bool {
        self.configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately)
    }
}

/// Rejects a negative `historyLength` (spec §3.2.4).
pub fn validate_history_length(history_length: Option<i32>) -> Result<(), A2AError> {
    match history_length {
        Some(n) if n < 0 => Err(A2AError::invalid_field(
            "historyLength",
            format!("must not be negative (got {n})"),
        )),
        _ => Ok(()),
    }
}

/// Turns a validated `historyLength` into the limit applied to a task.
pub fn history_limit(history_length: Option<i32>) -> Option<usize> {
    history_length.map(|n| usize::try_from(n).unwrap_or(0))
}

/// Checks the shape of a webhook URL. (Address checks against SSRF happen in the
/// webhook dispatcher, which resolves the name.)
pub fn validate_push_url(url: &str, field: &str) -> Result<(), A2AError> {
    if url.trim().is_empty() {
        return Err(A2AError::invalid_field(field, "is required"));
    }
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(A2AError::invalid_field(
            field,
            "must be an http or https URL",
        ));
    }
    if url.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(A2AError::invalid_field(
            field,
            "must not contain whitespace or control characters",
        ));
    }
    Ok(())
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default)]
    pub id: String,
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "serde_util::opt_i32"
    )]
    pub history_length: Option<i32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdRequest {
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub metadata: Option<Metadata>,
}

/// Requires a non-empty task id.
pub fn require_id(id: &str, field: &str) -> Result<(), A2AError> {
    if id.trim().is_empty() {
        return Err(A2AError::invalid_field(field, "is required"));
    }
    Ok(())
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default, alias = "context_id")]
    pub context_id: Option<String>,
    #[serde(default)]
    pub status: Option<TaskState>,
    #[serde(default, alias = "page_size", deserialize_with = "serde_util::opt_i32")]
    pub page_size: Option<i32>,
    #[serde(default, alias = "page_token")]
    pub page_token: Option<String>,
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "serde_util::opt_i32"
    )]
    pub history_length: Option<i32>,
    #[serde(
        default,
        alias = "status_timestamp_after",
        with = "serde_util::opt_timestamp"
    )]
    pub status_timestamp_after: Option<DateTime<Utc>>,
    #[serde(
        default,
        alias = "include_artifacts",
        deserialize_with = "serde_util::lenient_bool"
    )]
    pub include_artifacts: bool,
}

pub const DEFAULT_PAGE_SIZE: usize = 50;
pub const MAX_PAGE_SIZE: usize = 100;

impl ListTasksRequest {
    /// Validates the paging and history parameters; returns the page size to use.
    pub fn validated_page_size(&self) -> Result<usize, A2AError> {
        validate_history_length(self.history_length)?;
        if self.status == Some(TaskState::Unspecified) {
            return Err(A2AError::invalid_field(
                "status",
                "TASK_STATE_UNSPECIFIED is not a filter",
            ));
        }
        match self.page_size {
            None | Some(0) => Ok(DEFAULT_PAGE_SIZE),
            Some(n) if (1..=MAX_PAGE_SIZE as i32).contains(&n) => Ok(n as usize),
            Some(n) => Err(A2AError::invalid_field(
                "pageSize",
                format!("must be between 1 and {MAX_PAGE_SIZE} (got {n})"),
            )),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    pub tasks: Vec<Task>,
    pub next_page_token: String,
    pub page_size: i32,
    pub total_size: i32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigRequest {
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default, alias = "task_id")]
    pub task_id: String,
    #[serde(default)]
    pub id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPushConfigsRequest {
    #[serde(default)]
    pub tenant: Option<String>,
    #[serde(default, alias = "task_id")]
    pub task_id: String,
    #[serde(default, alias = "page_size", deserialize_with = "serde_util::opt_i32")]
    pub page_size: Option<i32>,
    #[serde(default, alias = "page_token")]
    pub page_token: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListPushConfigsResponse {
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub next_page_token: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn send_request_validation_names_the_field() {
        let req: SendMessageRequest =
            parse_params(json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}))
                .unwrap();
        let err = req.validate().unwrap_err();
        assert_eq!(err.field_violations[0].0, "message.parts");
        let req: SendMessageRequest =
            parse_params(json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}))
                .unwrap();
        assert!(req.validate().unwrap_err().message.contains("messageId"));
        let err = parse_params::<SendMessageRequest>(json!({"message": {"role": "ROLE_ROBOT"}}))
            .unwrap_err();
        assert!(err.message.contains("ROLE_ROBOT"), "{}", err.message);
    }

    #[test]
    fn a_send_request_leaves_its_unset_fields_out_as_protojson_does() {
        let message = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]});
        let bare: SendMessageRequest = parse_params(json!({"message": message})).unwrap();
        assert_eq!(
            serde_json::to_value(&bare).unwrap(),
            json!({"message": message})
        );
        let with_defaults: SendMessageRequest = parse_params(json!({
            "message": message,
            "configuration": {"acceptedOutputModes": [], "historyLength": null, "returnImmediately": false},
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_value(&with_defaults).unwrap(),
            json!({"message": message, "configuration": {}})
        );
        let non_blocking = SendMessageRequest::non_blocking(bare.message);
        assert_eq!(
            serde_json::to_value(&non_blocking).unwrap(),
            json!({"message": message, "configuration": {"returnImmediately": true}})
        );
    }

    #[test]
    fn list_page_size_bounds() {
        let mut req = ListTasksRequest::default();
        assert_eq!(req.validated_page_size().unwrap(), 50);
        req.page_size = Some(101);
        assert!(req.validated_page_size().is_err());
        req.page_size = Some(-1);
        assert!(req.validated_page_size().is_err());
        req.page_size = Some(7);
        assert_eq!(req.validated_page_size().unwrap(), 7);
    }

    #[test]
    fn push_url_shape() {
        assert!(validate_push_url("https://h/x", "url").is_ok());
        assert!(validate_push_url("ftp://h/x", "url").is_err());
        assert!(validate_push_url("http://h/x\r\nX: y", "url").is_err());
    }
}
