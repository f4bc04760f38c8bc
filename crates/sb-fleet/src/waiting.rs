//! The index of tasks waiting for a person (input-required or auth-required), across
//! agents and principals: a scored set in the [`FleetStore`] (task id, scored by when it
//! started waiting), kept from the committed transitions. The index only points: the
//! task store stays the truth, so a reader skips (and drops) an entry whose task has
//! moved on, and [`WaitingIndex::reconcile`] adds what it misses from the unfinished
//! tasks at start, in case a process died between a commit and its index write.

use std::sync::Arc;
use std::time::Duration;

use sb_protocol::TaskState;
use sb_store::backoff::Backoff;
use sb_store::{FleetStore, StoreResult, TaskRecord, TaskStore};
use tokio::sync::mpsc;

use crate::announce::{Announcer, Notice};

/// The set's name in the store.
const WAITING: &str = "waiting";

#[derive(Debug)]
enum Change {
    Waiting {
        task_id: String,
        since_ms: i64,
        /// What to announce, when there is an announcer.
        notice: Option<Box<Notice>>,
    },
    Done {
        task_id: String,
    },
}

/// Writes the index from transitions, in their order, off the commit path, and has each
/// new wait announced.
#[derive(Clone, Debug)]
pub struct WaitingIndex {
    changes: mpsc::UnboundedSender<Change>,
    /// Where answers go, for the notices; `None` without an announcer.
    public_url: Option<Arc<str>>,
}

impl WaitingIndex {
    /// Starts the writer; it ends when every clone of the index is dropped. With an
    /// `announcer`, each new wait is announced once indexed; `public_url` is where the
    /// notices send the answers.
    pub fn spawn(
        store: Arc<dyn FleetStore>,
        announcer: Option<Announcer>,
        public_url: &str,
    ) -> WaitingIndex {
        let (changes, mut queued) = mpsc::unbounded_channel();
        let public_url = announcer.is_some().then(|| Arc::from(public_url));
        tokio::spawn(async move {
            while let Some(change) = queued.recv().await {
                let backoff =
                    Backoff::doubling_times(Duration::from_millis(100), Duration::from_secs(5), 8);
                let written = backoff.retry(|| apply(&*store, &change)).await;
                if let Err(e) = &written {
                    tracing::warn!(error = %e, ?change, "could not update the index of waiting tasks; it is rebuilt at the next start");
                }
                if let (
                    Change::Waiting {
                        notice: Some(notice),
                        ..
                    },
                    Some(announcer),
                ) = (change, &announcer)
                {
                    announcer.announce(*notice).await;
                }
            }
        });
        WaitingIndex {
            changes,
            public_url,
        }
    }

    /// Notes a committed transition.
    pub fn changed(&self, from: Option<TaskState>, record: &TaskRecord) {
        let task_id = record.task.id.clone();
        let change = if record.state().is_interrupted() {
            Change::Waiting {
                task_id,
                since_ms: record.status_time().timestamp_millis(),
                notice: self
                    .public_url
                    .as_deref()
                    .map(|url| Box::new(Notice::of(record, url))),
            }
        } else if from.is_some_and(TaskState::is_interrupted) {
            Change::Done { task_id }
        } else {
            return;
        };
        // Only fails once the writer is gone, at shutdown: reconcile covers it.
        let _ = self.changes.send(change);
    }

    /// Adds the waiting tasks among the unfinished ones that the index misses (a process
    /// died between a commit and its index write). It never removes: another replica
    /// may be indexing a task that started waiting after the tasks were read; entries
    /// that moved on are dropped by [`WaitingIndex::list`].
    pub async fn reconcile(store: &dyn FleetStore, tasks: &dyn TaskStore) -> StoreResult<usize> {
        let indexed: std::collections::BTreeSet<String> = store
            .set_members(WAITING)
            .await?
            .into_iter()
            .map(|(member, _)| member)
            .collect();
        let mut added = 0;
        for record in tasks.list_unfinished().await? {
            if !record.state().is_interrupted() || indexed.contains(&record.task.id) {
                continue;
            }
            let since = record.status_time();
            store
                .set_put(WAITING, &record.task.id, since.timestamp_millis())
                .await?;
            added += 1;
        }
        Ok(added)
    }

    /// The tasks waiting now, longest waiting first.
    pub async fn list(
        store: &dyn FleetStore,
        tasks: &dyn TaskStore,
    ) -> StoreResult<Vec<TaskRecord>> {
        let mut waiting = Vec::new();
        for (task_id, _) in store.set_members(WAITING).await? {
            match tasks.get(&task_id).await? {
                Some(record) if record.state().is_interrupted() => waiting.push(record),
                // Moved on (or evicted) and its index write has not landed or was lost.
                _ => {
                    store.set_remove(WAITING, &task_id).await?;
                }
            }
        }
        Ok(waiting)
    }
}

async fn apply(store: &dyn FleetStore, change: &Change) -> StoreResult<()> {
    match change {
        Change::Waiting {
            task_id, since_ms, ..
        } => store.set_put(WAITING, task_id, *since_ms).await,
        Change::Done { task_id } => store.set_remove(WAITING, task_id).await.map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use sb_protocol::{Message, Role};
    use sb_store::{LocalBus, MemoryStore};
    use sb_tasks::{LocalTaskService, NewTask, Scope, TaskService, TaskUpdate, Transitions};

    use super::*;

    /// Transitions that only keep the index.
    #[derive(Debug)]
    struct IndexOnly(WaitingIndex);

    impl Transitions for IndexOnly {
        fn changed(&self, from: Option<TaskState>, record: &TaskRecord) {
            self.0.changed(from, record);
        }
    }

    async fn task(tasks: &LocalTaskService) -> String {
        let message = Message {
            role: Role::User,
            ..Message::agent_text("hi")
        };
        let new = NewTask {
            scope: Scope {
                agent: "a".into(),
                owner: String::new(),
            },
            message,
            metadata: None,
        };
        tasks.create(new).await.unwrap().task.id
    }

    async fn set(tasks: &LocalTaskService, id: &str, state: TaskState) {
        let update = TaskUpdate::Status {
            state,
            message: None,
            metadata: None,
        };
        tasks.update(id, update).await.unwrap();
    }

    async fn listed(store: &MemoryStore) -> Vec<String> {
        // The index is written off the commit path: give it a moment.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let records = WaitingIndex::list(store, store).await.unwrap();
        records.into_iter().map(|r| r.task.id).collect()
    }

    #[tokio::test]
    async fn the_index_follows_tasks_into_and_out_of_waiting() {
        let store = Arc::new(MemoryStore::new());
        let index = WaitingIndex::spawn(store.clone(), None, "http://sb");
        let tasks = LocalTaskService::new(store.clone(), Arc::new(LocalBus::new()))
            .with_transitions(Arc::new(IndexOnly(index)));
        let (asking, working) = (task(&tasks).await, task(&tasks).await);
        set(&tasks, &asking, TaskState::InputRequired).await;
        set(&tasks, &working, TaskState::Working).await;
        assert_eq!(listed(&store).await, std::slice::from_ref(&asking));
        set(&tasks, &asking, TaskState::Working).await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let members = store.set_members(WAITING).await.unwrap();
        assert_eq!(members, [], "the index itself forgets an answered task");
    }

    #[tokio::test]
    async fn a_missed_entry_is_added_at_start_and_a_stale_one_dropped_when_read() {
        let store = Arc::new(MemoryStore::new());
        // No index: as if the process died between the commits and the index writes.
        let tasks = LocalTaskService::new(store.clone(), Arc::new(LocalBus::new()));
        let (missed, stale) = (task(&tasks).await, task(&tasks).await);
        set(&tasks, &missed, TaskState::AuthRequired).await;
        set(&tasks, &stale, TaskState::Completed).await;
        store.set_put(WAITING, &stale, 1).await.unwrap();
        assert_eq!(WaitingIndex::reconcile(&*store, &*store).await.unwrap(), 1);
        assert_eq!(listed(&store).await, [missed]);
        let members = store.set_members(WAITING).await.unwrap();
        assert!(
            !members.iter().any(|(m, _)| *m == stale),
            "dropped: {members:?}"
        );
    }
}
