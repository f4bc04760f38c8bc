//! [`TaskStateClient`] as a [`TaskService`]: each call one request to a replica, sent
//! once more when it did not reach one and repeating it is safe.

use async_trait::async_trait;
use sb_protocol::requests::ListTasksRequest;
use sb_protocol::{A2AError, TaskState};
use sb_store::{StoredEvent, TaskRecord};
use sb_tasks::{NewTask, Scope, TaskListing, TaskResult, TaskService, TaskUpdate};
use tonic::Response;

use super::{TaskStateClient, create_request};
use crate::pb;
use crate::tasks::{event_from, record_from, scope_pb, states_pb};
use crate::wire::{error_from, is_transient, request, to_json};

#[async_trait]
impl TaskService for TaskStateClient {
    async fn create(&self, new: NewTask) -> TaskResult<TaskRecord> {
        record_from(Some(once!(self, create, create_request(&new))?))
    }

    async fn get(&self, scope: &Scope, task_id: &str) -> TaskResult<TaskRecord> {
        let message = pb::GetTaskRequest {
            scope: scope_pb(scope),
            task_id: task_id.to_owned(),
        };
        record_from(Some(idempotent!(self, get, message)?))
    }

    async fn list(&self, scope: &Scope, request: &ListTasksRequest) -> TaskResult<TaskListing> {
        let message = pb::ListTasksRequest {
            scope: scope_pb(scope),
            request_json: to_json(request),
        };
        let listing = idempotent!(self, list, message)?;
        Ok(TaskListing {
            records: listing
                .records
                .into_iter()
                .map(|r| record_from(Some(r)))
                .collect::<Result<_, _>>()?,
            total: listing.total as usize,
            next_page_token: listing.next_page_token,
            page_size: listing.page_size as usize,
        })
    }

    async fn update(&self, task_id: &str, update: TaskUpdate) -> TaskResult<TaskRecord> {
        let message = pb::UpdateTaskRequest {
            task_id: task_id.to_owned(),
            update_json: to_json(&update),
            expected_states: Vec::new(),
            assignment_id: self.turn_fields().0,
            agent: self.turn_fields().1,
            more_updates_json: Vec::new(),
        };
        record_from(once!(self, update, message)?.record)
    }

    async fn update_all(&self, task_id: &str, updates: &[TaskUpdate]) -> TaskResult<TaskRecord> {
        let mut encoded = updates.iter().map(to_json);
        let Some(first) = encoded.next() else {
            return Err(A2AError::invalid_params(
                "update_all needs at least one update",
            ));
        };
        let message = pb::UpdateTaskRequest {
            task_id: task_id.to_owned(),
            update_json: first,
            expected_states: Vec::new(),
            assignment_id: self.turn_fields().0,
            agent: self.turn_fields().1,
            more_updates_json: encoded.collect(),
        };
        record_from(once!(self, update, message)?.record)
    }

    async fn update_if(
        &self,
        task_id: &str,
        expected: &[TaskState],
        update: TaskUpdate,
    ) -> TaskResult<Option<TaskRecord>> {
        let message = pb::UpdateTaskRequest {
            task_id: task_id.to_owned(),
            update_json: to_json(&update),
            expected_states: states_pb(expected),
            assignment_id: self.turn_fields().0,
            agent: self.turn_fields().1,
            more_updates_json: Vec::new(),
        };
        match once!(self, update, message)?.record {
            Some(record) => record_from(Some(record)).map(Some),
            None => Ok(None),
        }
    }

    async fn cancel(&self, scope: &Scope, task_id: &str) -> TaskResult<TaskRecord> {
        // Canceling twice answers the canceled task: safe to repeat.
        let message = pb::CancelTaskRequest {
            scope: scope_pb(scope),
            task_id: task_id.to_owned(),
        };
        record_from(Some(idempotent!(self, cancel, message)?))
    }

    async fn events_after(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> TaskResult<Vec<StoredEvent>> {
        let message = pb::EventsAfterRequest {
            task_id: task_id.to_owned(),
            after,
            limit: limit.min(u32::MAX as usize) as u32,
        };
        idempotent!(self, events_after, message)?
            .events
            .into_iter()
            .map(event_from)
            .collect()
    }
}
