//! Retention: finished tasks are evicted, with their push configs, once past their TTL.
//!
//! Finished tasks hold nothing in the keeper: the store indexes them by the time they
//! finished ([`TaskStore::finished_before`]), and a sweeper evicts what is past its TTL
//! once a second. (A timer per finished task, kept for the whole TTL, would grow the
//! keeper's memory with the rate of tasks times the TTL.)
//!
//! [`TaskStore::finished_before`]: sb_store::TaskStore::finished_before

use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::DeadlineKeeper;

/// How often finished tasks past their TTL are looked for: a task is evicted at most
/// this long after its TTL.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// Finished tasks read per round of a sweep.
const SWEEP_BATCH: usize = 512;
/// Evictions under way at once: each is a write, and the store batches concurrent writes.
const EVICTIONS_AT_ONCE: usize = 64;

impl DeadlineKeeper {
    /// Evicts the finished tasks past their TTL, once every [`SWEEP_EVERY`], until
    /// `shutdown`. With several task-state replicas each one sweeps; an eviction of a
    /// task another replica evicted first finds nothing to delete.
    pub(super) async fn sweep_finished(self, shutdown: CancellationToken) {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = every.tick() => {}
            }
            let evicted = self.evict_due().await;
            if evicted > 0 {
                tracing::info!(evicted, "evicted finished tasks after their TTL");
            }
        }
    }

    /// Evicts every finished task past its TTL now; returns how many.
    async fn evict_due(&self) -> usize {
        let elapsed = Instant::now().saturating_duration_since(self.started.1);
        let cutoff = chrono::TimeDelta::from_std(elapsed)
            .ok()
            .and_then(|elapsed| self.started.0.checked_add_signed(elapsed))
            .zip(chrono::TimeDelta::from_std(self.config.terminal_ttl).ok())
            .and_then(|(now, ttl)| now.checked_sub_signed(ttl));
        // A TTL reaching back past the calendar's start: nothing is ever due.
        let Some(cutoff) = cutoff else {
            return 0;
        };
        let cutoff = u64::try_from(cutoff.timestamp_millis()).unwrap_or(0);
        let mut evicted = 0;
        loop {
            let due = match self.store.finished_before(cutoff, SWEEP_BATCH).await {
                Ok(due) => due,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot list the finished tasks past their TTL");
                    return evicted;
                }
            };
            let round = due.len();
            let done: Vec<bool> = futures::stream::iter(due)
                .map(|task_id| async move { self.evict(&task_id).await })
                .buffer_unordered(EVICTIONS_AT_ONCE)
                .collect()
                .await;
            evicted += done.iter().filter(|ok| **ok).count();
            // A failed eviction stays due: the next sweep tries it again, not this loop.
            if round < SWEEP_BATCH || done.contains(&false) {
                return evicted;
            }
        }
    }

    /// Deletes a finished task with its push configs; returns whether that went well.
    async fn evict(&self, task_id: &str) -> bool {
        if self.push.may_have_push_configs(task_id)
            && let Err(e) = self.push.delete_push_configs(task_id).await
        {
            tracing::warn!(task_id, error = %e, "could not evict push configs");
            return false;
        }
        match self.store.delete(task_id).await {
            Ok(_) => {
                tracing::debug!(task_id, "finished task evicted after its TTL");
                true
            }
            Err(e) => {
                tracing::warn!(task_id, error = %e, "could not evict a finished task");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use chrono::Utc;
    use sb_protocol::{ErrorKind, TaskState};
    use sb_store::{PushConfigStore, TaskCommit, TaskStore};

    use super::SWEEP_BATCH;
    use crate::deadlines::test_world::{scope, settle, task_in, world};
    use crate::deadlines::{DeadlineConfig, DeadlineKeeper};
    use crate::lifecycle::TaskUpdate;
    use crate::service::TaskService;

    #[tokio::test(start_paused = true)]
    async fn finished_tasks_are_evicted_after_their_ttl() {
        let w = world().await;
        let id = task_in(&w, TaskState::Completed).await;
        let running = task_in(&w, TaskState::Working).await;
        w.tasks
            .update(
                &running,
                TaskUpdate::Status {
                    state: TaskState::Working,
                    message: None,
                    metadata: None,
                },
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(901)).await;
        settle().await;
        assert_eq!(
            w.tasks.get(&scope(), &running).await.unwrap().state(),
            TaskState::Failed,
            "the working task stalled"
        );
        tokio::time::sleep(Duration::from_secs(3599 - 901)).await;
        settle().await;
        assert!(w.tasks.get(&scope(), &id).await.is_ok());
        tokio::time::sleep(Duration::from_secs(2)).await;
        settle().await;
        assert_eq!(
            w.tasks.get(&scope(), &id).await.unwrap_err().kind,
            ErrorKind::TaskNotFound
        );
        assert!(w.store.events_after(&id, 0, 10).await.unwrap().is_empty());
        w.stop.cancel();
    }

    #[tokio::test]
    async fn a_ttl_past_the_calendar_evicts_nothing() {
        let w = world().await;
        let id = task_in(&w, TaskState::Completed).await;
        let config = DeadlineConfig {
            terminal_ttl: Duration::from_secs(u64::MAX),
            ..DeadlineConfig::default()
        };
        let keeper = DeadlineKeeper::new(config, w.tasks.clone(), w.store.clone(), w.store.clone());
        assert_eq!(keeper.evict_due().await, 0);
        assert!(w.store.get(&id).await.unwrap().is_some());
        w.stop.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn a_sweep_evicts_every_finished_task_due_and_nothing_else() {
        let w = world().await;
        // More than one round of the sweep, and one with a push config to take along.
        let mut finished = Vec::new();
        for _ in 0..SWEEP_BATCH + 100 {
            finished.push(task_in(&w, TaskState::Completed).await);
        }
        let record = sb_store::suite::push_config_record(&finished[0], "hook");
        w.store.put_push_config(record).await.unwrap();
        // The store's times are the wall clock's, which a paused tokio clock does not
        // move: a task not yet due is one that finished in the wall clock's future.
        let young = task_in(&w, TaskState::Failed).await;
        let mut record = w.store.get(&young).await.unwrap().unwrap();
        record.task.status.timestamp = Some(Utc::now() + chrono::Duration::minutes(30));
        record.seq += 1;
        let commit = TaskCommit {
            expected_seq: record.seq - 1,
            record: Arc::new(record),
            events: Vec::new(),
            open_limit: None,
        };
        w.store.commit(commit).await.unwrap();
        tokio::time::sleep(Duration::from_secs(3601)).await;
        settle().await;
        for id in &finished {
            assert!(w.store.get(id).await.unwrap().is_none(), "{id} evicted");
        }
        assert!(
            w.store
                .list_push_configs(&finished[0])
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            w.store.get(&young).await.unwrap().is_some(),
            "finished half an hour ago: not due"
        );
        assert_eq!(
            w.store.finished_before(u64::MAX, 10).await.unwrap(),
            [young],
            "the index holds the one left, once"
        );
        w.stop.cancel();
    }
}
