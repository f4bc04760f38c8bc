//! The push-notification config operations: create, get, list, delete.

use sb_protocol::requests::require_id;
use sb_protocol::{A2AError, ErrorKind, TaskPushNotificationConfig, Version};
use sb_tasks::Scope;

use crate::AppState;

pub async fn create_push_config(
    state: &AppState,
    scope: &Scope,
    config: TaskPushNotificationConfig,
    version: Version,
) -> Result<TaskPushNotificationConfig, A2AError> {
    require_id(&config.task_id, "taskId")?;
    state.push.create(scope, config, version).await
}

pub async fn get_push_config(
    state: &AppState,
    scope: &Scope,
    task_id: &str,
    config_id: Option<&str>,
) -> Result<TaskPushNotificationConfig, A2AError> {
    require_id(task_id, "taskId")?;
    match config_id.filter(|c| !c.is_empty()) {
        Some(id) => state.push.get(scope, task_id, id).await,
        // 0.3 allows asking without a config id: the config named after the task, else
        // the first one (digest §2.3).
        None => {
            let configs = state.push.list(scope, task_id).await?;
            let chosen = configs
                .iter()
                .find(|c| c.id.as_deref() == Some(task_id))
                .or(configs.first());
            chosen.cloned().ok_or_else(|| {
                A2AError::new(
                    ErrorKind::TaskNotFound,
                    format!("task {task_id} has no push config"),
                )
                .with_task(task_id)
            })
        }
    }
}

pub async fn list_push_configs(
    state: &AppState,
    scope: &Scope,
    task_id: &str,
) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
    require_id(task_id, "taskId")?;
    state.push.list(scope, task_id).await
}

pub async fn delete_push_config(
    state: &AppState,
    scope: &Scope,
    task_id: &str,
    config_id: &str,
) -> Result<(), A2AError> {
    require_id(task_id, "taskId")?;
    require_id(config_id, "id")?;
    state.push.delete(scope, task_id, config_id).await
}
