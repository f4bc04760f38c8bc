//! What wakes deliveries: each event the bus announces (a burst's tasks once each), a
//! sweep every [`DispatcherConfig::sweep_every`](super::DispatcherConfig::sweep_every),
//! and a catch-up of every config at start, for what was owed before a restart.

use std::collections::BTreeSet;
use std::sync::Arc;

use sb_store::{EventBus, IdSet, StoreError, take_burst};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Dispatcher;

/// The bus group of dispatcher replicas: each event wakes one of them.
pub const DISPATCHER_GROUP: &str = "dispatcher";

impl Dispatcher {
    /// Delivers until `shutdown`: first whatever was queued before a restart (every
    /// config whose cursor is behind its task's log), then each event from the bus.
    /// Returns once it follows the bus, so every event committed after that is served.
    pub async fn spawn(
        &self,
        bus: &dyn EventBus,
        shutdown: CancellationToken,
    ) -> Result<JoinHandle<()>, StoreError> {
        let mut events = bus.subscribe_all(DISPATCHER_GROUP).await?;
        let dispatcher = self.clone();
        let every = self.inner.config.sweep_every;
        let mut sweep = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Ok(tokio::spawn(async move {
            dispatcher.catch_up_all().await;
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    _ = sweep.tick() => dispatcher.catch_up_all().await,
                    received = events.recv() => {
                        // A catch-up delivers everything after the cursor: the events of a
                        // burst need one per task, not one each.
                        let mut tasks = IdSet::default();
                        let mut closed = false;
                        let mut last_task: Option<Arc<str>> = None;
                        for received in take_burst(received, &mut events) {
                            match received {
                                // A commit's events come together: one look per run.
                                Ok(event) if last_task.as_ref() == Some(&event.task_id) => {}
                                Ok(event) => {
                                    tasks.insert(event.task_id.to_string());
                                    last_task = Some(event.task_id);
                                }
                                Err(broadcast::error::RecvError::Lagged(missed)) => {
                                    // The log has what the bus dropped; the cursors say what is owed.
                                    tracing::warn!(missed, "webhook dispatcher fell behind the event bus; catching up from the log");
                                    dispatcher.catch_up_all().await;
                                }
                                Err(broadcast::error::RecvError::Closed) => closed = true,
                            }
                        }
                        for task_id in dispatcher.with_push_configs(tasks).await {
                            dispatcher.enqueue(task_id);
                        }
                        if closed {
                            break;
                        }
                    }
                }
            }
        }))
    }

    async fn catch_up_all(&self) {
        match self.inner.configs.list_all_push_configs().await {
            Ok(records) => {
                let tasks: BTreeSet<String> =
                    records.into_iter().map(|r| r.config.task_id).collect();
                for task_id in tasks {
                    self.enqueue(task_id);
                }
            }
            Err(e) => tracing::error!(error = %e, "cannot read push configs to resume deliveries"),
        }
    }

    /// The tasks of a burst that may have configs (all of them if the store cannot say).
    async fn with_push_configs(&self, tasks: IdSet<String>) -> Vec<String> {
        let tasks: Vec<String> = tasks.into_iter().collect();
        match self.inner.configs.with_push_configs(&tasks).await {
            Ok(with) => with,
            Err(e) => {
                tracing::warn!(error = %e, "cannot look up which tasks have push configs; reading each");
                tasks
            }
        }
    }

    /// Queues a catch-up of the task's configs behind the task's earlier deliveries.
    pub fn enqueue(&self, task_id: String) {
        if !self.inner.configs.may_have_push_configs(&task_id) {
            return;
        }
        let inner = self.inner.clone();
        let job_task = task_id.clone();
        self.chain(task_id, async move { inner.catch_up(&job_task).await });
    }
}
