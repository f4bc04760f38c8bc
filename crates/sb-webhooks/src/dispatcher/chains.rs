//! One chain of delivery jobs per task: each job waits for the one before it, so a
//! task's events reach each receiver in order while tasks deliver in parallel. A job is
//! a catch-up: every config of the task brought up to the task's event log, its durable
//! cursor moved after each batch.

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;

use super::{Dispatcher, Inner};

/// Chains kept before finished ones are dropped from the map.
const CHAINS_BEFORE_PRUNING: usize = 1024;

/// Events read from a task's log at a time; the cursor moves once per batch.
const EVENTS_PER_BATCH: usize = 64;

impl Dispatcher {
    /// Runs `job` after every job already queued for the task, keeping each task's
    /// deliveries in order (parallel across tasks).
    pub(super) fn chain(&self, task_id: String, job: impl Future<Output = ()> + Send + 'static) {
        let mut chains = self.inner.chains.lock();
        let previous = chains.remove(&task_id);
        let handle = tokio::spawn(async move {
            if let Some(previous) = previous {
                let _ = previous.await;
            }
            job.await;
        });
        chains.insert(task_id, handle);
        if chains.len() > CHAINS_BEFORE_PRUNING {
            chains.retain(|_, job| !job.is_finished());
        }
    }

    /// Waits for queued deliveries, at most `grace`. Returns whether all finished.
    pub async fn drain(&self, grace: Duration) -> bool {
        let jobs: Vec<JoinHandle<()>> = self
            .inner
            .chains
            .lock()
            .drain()
            .map(|(_, job)| job)
            .collect();
        tokio::time::timeout(grace, futures::future::join_all(jobs))
            .await
            .is_ok()
    }
}

impl Inner {
    /// Brings every config of the task up to date with its event log, event by event,
    /// moving each config's durable cursor after each batch of events it read.
    pub(super) async fn catch_up(&self, task_id: &str) {
        let configs = match self.configs.list_push_configs(task_id).await {
            Ok(configs) => configs,
            Err(e) => {
                tracing::error!(task_id, error = %e, "cannot read push configs; deliveries wait for the next event");
                return;
            }
        };
        let mut secret = None;
        for config in configs {
            let config_id = config.config.id.clone().unwrap_or_default();
            let mut cursor = config.from_seq;
            'config: loop {
                let events = match self
                    .tasks
                    .events_after(task_id, cursor, EVENTS_PER_BATCH)
                    .await
                {
                    Ok(events) if !events.is_empty() => events,
                    Ok(_) => break,
                    Err(e) => {
                        tracing::error!(task_id, error = %e, "cannot read the event log; deliveries wait for the next event");
                        return;
                    }
                };
                let mut delivered = None;
                for event in events {
                    // The live config, on every delivery: a changed URL or credential
                    // applies at once, a deleted config stops receiving.
                    let Ok(Some(live)) = self.configs.get_push_config(task_id, &config_id).await
                    else {
                        break 'config;
                    };
                    if secret.is_none() {
                        secret = Some(self.signing_secret(task_id).await);
                    }
                    if let Some(body) = self.body(&live, &event).await {
                        let signing = secret.as_ref().and_then(|s| s.as_deref());
                        if let Err(failure) = self.deliver(&live, &event, body, signing).await {
                            self.bury(&event, &config_id, failure).await;
                        }
                    }
                    delivered = Some(event.seq);
                }
                // One durable cursor write per batch read, not per delivery: after a
                // crash, at most that batch is sent again (deliveries are at least once).
                if let Some(seq) = delivered {
                    cursor = seq;
                    if let Err(e) = self
                        .configs
                        .advance_push_cursor(task_id, &config_id, cursor)
                        .await
                    {
                        tracing::error!(task_id, error = %e, "cannot record deliveries; they may be sent again after a restart");
                    }
                }
            }
        }
    }
}
