//! GetTask, ListTasks and CancelTask.

use sb_protocol::requests::{
    GetTaskRequest, ListTasksRequest, ListTasksResponse, history_limit, require_id,
    validate_history_length,
};
use sb_protocol::{A2AError, ErrorKind, Task, TaskState, Version};
use sb_tasks::Scope;

use crate::AppState;

pub async fn get_task(
    state: &AppState,
    scope: &Scope,
    req: &GetTaskRequest,
) -> Result<Task, A2AError> {
    require_id(&req.id, "id")?;
    validate_history_length(req.history_length)?;
    let record = state.tasks.get(scope, &req.id).await?;
    Ok(record
        .task
        .with_history_limit(history_limit(req.history_length)))
}

pub async fn list_tasks(
    state: &AppState,
    scope: &Scope,
    req: &ListTasksRequest,
) -> Result<ListTasksResponse, A2AError> {
    let listing = state.tasks.list(scope, req).await?;
    let limit = history_limit(req.history_length);
    let tasks = listing
        .records
        .into_iter()
        .map(|r| {
            let mut task = r.task.with_history_limit(limit);
            if !req.include_artifacts {
                task.artifacts.clear();
            }
            task
        })
        .collect();
    Ok(ListTasksResponse {
        tasks,
        next_page_token: listing.next_page_token,
        page_size: listing.page_size as i32,
        total_size: listing.total as i32,
    })
}

/// CancelTask. Canceling a canceled task returns it in 1.0 (idempotent, digest §11.7);
/// 0.3 peers (the 0.3 SDKs and TCK) expect TaskNotCancelable.
pub async fn cancel_task(
    state: &AppState,
    scope: &Scope,
    task_id: &str,
    version: Version,
) -> Result<Task, A2AError> {
    require_id(task_id, "id")?;
    if version == Version::V0_3 {
        let current = state.tasks.get(scope, task_id).await?;
        if current.state() == TaskState::Canceled {
            return Err(A2AError::new(
                ErrorKind::TaskNotCancelable,
                format!("task {task_id} is already canceled"),
            )
            .with_task(task_id));
        }
    }
    Ok(state.tasks.cancel(scope, task_id).await?.task)
}
