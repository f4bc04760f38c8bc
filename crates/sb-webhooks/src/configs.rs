//! Push-notification configs: create, get, list and delete, scoped like their task.

use async_trait::async_trait;
use sb_protocol::{A2AError, TaskPushNotificationConfig, Version};
use sb_tasks::Scope;

#[cfg(feature = "delivery")]
mod local;
#[cfg(feature = "delivery")]
pub use local::LocalPushConfigs;

/// Most configs one task may have; more is a client error, not a reason to grow.
pub const MAX_CONFIGS_PER_TASK: usize = 16;

#[async_trait]
pub trait PushConfigService: Send + Sync + std::fmt::Debug + 'static {
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
