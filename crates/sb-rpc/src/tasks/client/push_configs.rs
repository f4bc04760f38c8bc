//! [`TaskStateClient`] as a [`PushConfigService`]: a task's push-notification configs,
//! kept by the task-state service.

use async_trait::async_trait;
use sb_protocol::{A2AError, TaskPushNotificationConfig, Version};
use sb_tasks::Scope;
use sb_webhooks::PushConfigService;
use tonic::Response;

use super::TaskStateClient;
use crate::pb;
use crate::tasks::scope_pb;
use crate::wire::{error_from, from_json, is_transient, request, to_json};

#[async_trait]
impl PushConfigService for TaskStateClient {
    async fn check(&self, config: &TaskPushNotificationConfig) -> Result<(), A2AError> {
        let message = pb::CheckPushConfigRequest {
            config_json: to_json(config),
        };
        idempotent!(self, check_push_config, message).map(drop)
    }

    async fn create(
        &self,
        scope: &Scope,
        config: TaskPushNotificationConfig,
        version: Version,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        let message = pb::CreatePushConfigRequest {
            scope: scope_pb(scope),
            config_json: to_json(&config),
            version: version.as_str().to_owned(),
        };
        from_json(
            &once!(self, create_push_config, message)?.json,
            "push config",
        )
    }

    async fn get(
        &self,
        scope: &Scope,
        task_id: &str,
        config_id: &str,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        let message = pb::PushConfigRef {
            scope: scope_pb(scope),
            task_id: task_id.to_owned(),
            config_id: config_id.to_owned(),
        };
        from_json(
            &idempotent!(self, get_push_config, message)?.json,
            "push config",
        )
    }

    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
        let message = pb::ListPushConfigsRequest {
            scope: scope_pb(scope),
            task_id: task_id.to_owned(),
        };
        idempotent!(self, list_push_configs, message)?
            .configs
            .iter()
            .map(|c| from_json(&c.json, "push config"))
            .collect()
    }

    async fn delete(&self, scope: &Scope, task_id: &str, config_id: &str) -> Result<(), A2AError> {
        let message = pb::PushConfigRef {
            scope: scope_pb(scope),
            task_id: task_id.to_owned(),
            config_id: config_id.to_owned(),
        };
        idempotent!(self, delete_push_config, message).map(|_| ())
    }
}
