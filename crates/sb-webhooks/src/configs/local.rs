//! [`LocalPushConfigs`]: the push-config service over a [`PushConfigStore`], which
//! checks that the task is visible to the caller and that the URL is an allowed target
//! (resolved now, see [`crate::ssrf`]) before storing anything.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use sb_protocol::{A2AError, ErrorKind, TaskPushNotificationConfig, Version, new_id};
use sb_store::{PushConfigRecord, PushConfigStore, StoreError};
use sb_tasks::{Scope, TaskService};

use super::{MAX_CONFIGS_PER_TASK, PushConfigService, check_fields};
use crate::ssrf::AddressPolicy;

#[derive(Debug, Clone)]
pub struct LocalPushConfigs {
    store: Arc<dyn PushConfigStore>,
    tasks: Arc<dyn TaskService>,
    policy: Arc<AddressPolicy>,
}

fn store_error(err: StoreError) -> A2AError {
    tracing::error!(error = %err, "push config store failure");
    A2AError::internal("the push config store is unavailable; try again").retryable(true)
}

impl LocalPushConfigs {
    /// `policy` decides which webhook targets may be registered (see [`crate::ssrf`]).
    pub fn new(
        store: Arc<dyn PushConfigStore>,
        tasks: Arc<dyn TaskService>,
        policy: Arc<AddressPolicy>,
    ) -> LocalPushConfigs {
        LocalPushConfigs {
            store,
            tasks,
            policy,
        }
    }
}

#[async_trait]
impl PushConfigService for LocalPushConfigs {
    async fn check(&self, config: &TaskPushNotificationConfig) -> Result<(), A2AError> {
        check_fields(config)?;
        self.policy
            .check_target(&config.url)
            .await
            .map_err(|reason| A2AError::invalid_field("url", reason))
            .map(drop)
    }

    async fn create(
        &self,
        scope: &Scope,
        mut config: TaskPushNotificationConfig,
        version: Version,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        let task = self.tasks.get(scope, &config.task_id).await?;
        self.check(&config).await?;
        let id = config
            .id
            .clone()
            .filter(|id| !id.trim().is_empty())
            .unwrap_or_else(new_id);
        config.id = Some(id.clone());
        let existing = self
            .store
            .list_push_configs(&config.task_id)
            .await
            .map_err(store_error)?;
        if existing.len() >= MAX_CONFIGS_PER_TASK
            && !existing
                .iter()
                .any(|r| r.config.id.as_deref() == Some(id.as_str()))
        {
            return Err(A2AError::invalid_params(format!(
                "task {} already has {MAX_CONFIGS_PER_TASK} push configs; delete one first",
                config.task_id
            ))
            .with_task(&config.task_id));
        }
        let record = PushConfigRecord {
            config: config.clone(),
            version: version.into(),
            owner: scope.owner.clone(),
            created_at: Utc::now(),
            from_seq: task.seq,
        };
        self.store
            .put_push_config(record)
            .await
            .map_err(store_error)?;
        Ok(config)
    }

    async fn get(
        &self,
        scope: &Scope,
        task_id: &str,
        config_id: &str,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.tasks.get(scope, task_id).await?;
        match self
            .store
            .get_push_config(task_id, config_id)
            .await
            .map_err(store_error)?
        {
            Some(record) => Ok(record.config),
            None => Err(A2AError::new(
                ErrorKind::TaskNotFound,
                format!("push config {config_id} not found for task {task_id}"),
            )
            .with_task(task_id)),
        }
    }

    async fn list(
        &self,
        scope: &Scope,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, A2AError> {
        self.tasks.get(scope, task_id).await?;
        let records = self
            .store
            .list_push_configs(task_id)
            .await
            .map_err(store_error)?;
        Ok(records.into_iter().map(|r| r.config).collect())
    }

    async fn delete(&self, scope: &Scope, task_id: &str, config_id: &str) -> Result<(), A2AError> {
        self.tasks.get(scope, task_id).await?;
        self.store
            .delete_push_config(task_id, config_id)
            .await
            .map_err(store_error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sb_protocol::{Message, Role};
    use sb_store::{LocalBus, MemoryStore};
    use sb_tasks::{LocalTaskService, NewTask};

    #[tokio::test]
    async fn crud_is_scoped_and_bounded() {
        let store = Arc::new(MemoryStore::new());
        let tasks = Arc::new(LocalTaskService::new(
            store.clone(),
            Arc::new(LocalBus::new()),
        ));
        // A literal address: a host name would have to resolve, and this test has no DNS.
        let policy = AddressPolicy::parse("127.0.0.1/32").unwrap();
        let push = LocalPushConfigs::new(store, tasks.clone(), Arc::new(policy));
        let scope = Scope {
            agent: "a".into(),
            owner: String::new(),
        };
        let message = Message {
            role: Role::User,
            ..Message::agent_text("x")
        };
        let task = tasks
            .create(NewTask {
                scope: scope.clone(),
                message,
                metadata: None,
            })
            .await
            .unwrap()
            .task;
        let config = TaskPushNotificationConfig {
            tenant: None,
            id: None,
            task_id: task.id.clone(),
            url: "http://127.0.0.1:9/hook".into(),
            token: Some("t".into()),
            authentication: None,
        };
        let created = push
            .create(&scope, config.clone(), Version::V1_0)
            .await
            .unwrap();
        let id = created.id.clone().unwrap();
        assert_eq!(
            push.get(&scope, &task.id, &id)
                .await
                .unwrap()
                .token
                .as_deref(),
            Some("t")
        );
        let stranger = Scope {
            agent: "b".into(),
            owner: String::new(),
        };
        assert_eq!(
            push.list(&stranger, &task.id).await.unwrap_err().kind,
            ErrorKind::TaskNotFound
        );
        for i in 1..MAX_CONFIGS_PER_TASK {
            let c = TaskPushNotificationConfig {
                id: Some(format!("c{i}")),
                ..config.clone()
            };
            push.create(&scope, c, Version::V0_3).await.unwrap();
        }
        let over = TaskPushNotificationConfig {
            id: Some("one-too-many".into()),
            ..config.clone()
        };
        assert_eq!(
            push.create(&scope, over, Version::V1_0)
                .await
                .unwrap_err()
                .kind,
            ErrorKind::InvalidParams
        );
        push.delete(&scope, &task.id, &id).await.unwrap();
        push.delete(&scope, &task.id, &id).await.unwrap();
        assert_eq!(
            push.list(&scope, &task.id).await.unwrap().len(),
            MAX_CONFIGS_PER_TASK - 1
        );
        let bad = TaskPushNotificationConfig {
            url: "file:///etc/passwd".into(),
            ..config
        };
        assert_eq!(
            push.create(&scope, bad, Version::V1_0)
                .await
                .unwrap_err()
                .kind,
            ErrorKind::InvalidParams
        );
    }
}
