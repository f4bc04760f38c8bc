//! ListTasks: a query scoped to one agent and one principal, where a listing resumes,
//! and one page of the tasks that match.

use chrono::{DateTime, Utc};
use sb_protocol::TaskState;
use serde::{Deserialize, Serialize};

use super::TaskRecord;

/// Where a listing resumes: after the task with this status time and id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPosition {
    pub ts_millis: i64,
    pub id: String,
}

/// A ListTasks query, already scoped to one agent and one principal.
#[derive(Clone, Debug, Default)]
pub struct TaskQuery {
    pub agent: String,
    pub owner: String,
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    pub status_after: Option<DateTime<Utc>>,
    pub after: Option<ListPosition>,
    pub limit: usize,
}

/// One page of tasks, newest status first.
#[derive(Clone, Debug, Default)]
pub struct TaskPage {
    pub records: Vec<TaskRecord>,
    /// Matches before paging.
    pub total: usize,
    pub next: Option<ListPosition>,
}

impl TaskQuery {
    pub fn matches(&self, rec: &TaskRecord) -> bool {
        rec.agent == self.agent
            && rec.owner == self.owner
            && self
                .context_id
                .as_ref()
                .is_none_or(|c| *c == rec.task.context_id)
            && self.state.is_none_or(|s| s == rec.state())
            && self.status_after.is_none_or(|t| rec.status_time() >= t)
    }

    /// Sorts matching records newest first and cuts the page (shared by the backends
    /// that filter in memory).
    pub fn paginate(&self, mut matching: Vec<TaskRecord>) -> TaskPage {
        let key = |r: &TaskRecord| {
            (
                std::cmp::Reverse(r.status_time().timestamp_millis()),
                r.task.id.clone(),
            )
        };
        matching.sort_by_key(key);
        let total = matching.len();
        let start = match &self.after {
            None => 0,
            Some(cursor) => {
                let after = (std::cmp::Reverse(cursor.ts_millis), cursor.id.clone());
                matching.partition_point(|r| key(r) <= after)
            }
        };
        let end = (start + self.limit.max(1)).min(total);
        let records: Vec<TaskRecord> = matching.drain(start..end).collect();
        let next = (end < total)
            .then(|| records.last())
            .flatten()
            .map(|last| ListPosition {
                ts_millis: last.status_time().timestamp_millis(),
                id: last.task.id.clone(),
            });
        TaskPage {
            records,
            total,
            next,
        }
    }
}
