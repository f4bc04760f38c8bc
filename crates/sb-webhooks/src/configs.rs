//! Push-notification configs: create, get, list and delete, scoped like their task.

use async_trait::async_trait;
use sb_protocol::requests::validate_push_url;
use sb_protocol::{A2AError, TaskPushNotificationConfig, Version};
use sb_tasks::Scope;

#[cfg(feature = "delivery")]
mod local;
#[cfg(feature = "delivery")]
pub use local::LocalPushConfigs;

/// Most configs one task may have; more is a client error, not a reason to grow.
pub const MAX_CONFIGS_PER_TASK: usize = 16;

/// The checks of a config's own fields: a URL that can be a webhook, no control
/// characters where they would end up in a webhook's headers, a scheme with any
/// authentication.
pub fn check_fields(config: &TaskPushNotificationConfig) -> Result<(), A2AError> {
    validate_push_url(&config.url, "url")?;
    for (field, value) in [
        ("token", config.token.as_deref()),
        (
            "authentication.scheme",
            config.authentication.as_ref().map(|a| a.scheme.as_str()),
        ),
        (
            "authentication.credentials",
            config
                .authentication
                .as_ref()
                .and_then(|a| a.credentials.as_deref()),
        ),
    ] {
        if value.is_some_and(|v| v.chars().any(char::is_control)) {
            return Err(A2AError::invalid_field(
                field,
                "must not contain control characters (they would break the webhook's headers)",
            ));
        }
    }
    if let Some(auth) = &config.authentication
        && auth.scheme.trim().is_empty()
    {
        return Err(A2AError::invalid_field(
            "authentication.scheme",
            "is required when authentication is given",
        ));
    }
    Ok(())
}

#[async_trait]
pub trait PushConfigService: Send + Sync + std::fmt::Debug + 'static {
    /// Whether `config` would be stored, as far as can be told without its task: what
    /// a send with an inline config checks before it makes the task, so a refused
    /// config leaves no task behind. By default the checks of its fields; a service
    /// that knows the webhook policy checks the target too.
    async fn check(&self, config: &TaskPushNotificationConfig) -> Result<(), A2AError> {
        check_fields(config)
    }
    /// Stores a config (upsert on the same id); assigns an id when there is none.
    async fn create(
        &self,
        scope: &Scope,
        config: TaskPushNotificationConfig,
        version: Version,
    ) -> Result<TaskPushNotificationConfig, A2AError>;
    async fn get(
        &self,
        scope: &Scope,
        task_id: &str,
        config_id: &str,
    ) -> Result<TaskPushNotificationConfig, A2AError>;
    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, A2AError>;
    /// Deletes; deleting a config that does not exist is not an error (idempotent).
    async fn delete(&self, scope: &Scope, task_id: &str, config_id: &str) -> Result<(), A2AError>;
}
