//! Input and stall timeouts: a task waiting for input (or auth) too long is canceled, a
//! task whose agent went silent is failed.
//!
//! The keeper watches every committed event and keeps one timer per running task. A
//! timer remembers the sequence number it was set at; when it fires it acts only if the
//! task has not moved since, and through the state machine's conditional update, so a
//! deadline racing a real transition never overwrites it. Timers use tokio's clock, so
//! tests drive them with a paused clock.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sb_protocol::{Message, TaskState};
use sb_store::{EventNotice, TaskRecord};
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::DeadlineKeeper;
use super::timers::{Action, Timer, Timers};
use crate::lifecycle::TaskUpdate;

impl DeadlineKeeper {
    /// Arms the timers of the stored running tasks, then of each event on `events`, and
    /// fires each when due, until `shutdown`.
    pub(super) async fn enforce_timeouts(
        &self,
        mut events: broadcast::Receiver<EventNotice>,
        shutdown: CancellationToken,
    ) {
        let mut timers = Timers::default();
        match self.store.list_unfinished().await {
            Ok(records) => timers = self.timers_for(&records),
            Err(e) => {
                tracing::error!(error = %e, "cannot load task deadlines; only new events get them")
            }
        }
        loop {
            let next_due = timers.next_due();
            let sleep = async {
                match next_due {
                    Some(due) => tokio::time::sleep_until(due).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = shutdown.cancelled() => return,
                received = events.recv() => {
                    // The rest of a burst too before sleeping again: one timer
                    // registration per burst, not per event.
                    let mut burst = sb_store::take_burst(received, &mut events).into_iter().peekable();
                    while let Some(received) = burst.next() {
                        match received {
                            Ok(event) => {
                                // A commit's events come together, and the last of a task's
                                // run sets the timer that counts: an earlier one's would only
                                // be re-armed to it when due.
                                let superseded = matches!(
                                    burst.peek(),
                                    Some(Ok(next)) if next.task_id == event.task_id
                                );
                                if !superseded {
                                    match self.timer_for_event(&event) {
                                        Some(timer) => timers.set(timer),
                                        None => timers.finish(&event.task_id),
                                    }
                                }
                            }
                            Err(broadcast::error::RecvError::Lagged(missed)) => {
                                // Timers of the missed events are lost: rebuild them from the store.
                                tracing::warn!(missed, "deadline keeper fell behind; reloading deadlines");
                                if let Ok(records) = self.store.list_unfinished().await {
                                    timers = self.timers_for(&records);
                                }
                            }
                            Err(broadcast::error::RecvError::Closed) => return,
                        }
                    }
                }
                () = sleep => {
                    while let Some(timer) = timers.pop_due(Instant::now()) {
                        self.fire(timer).await;
                    }
                }
            }
        }
    }

    /// The timer of a task left in `state` `since` ago; `None` for a finished task.
    fn timer_for(
        &self,
        task_id: Arc<str>,
        seq: u64,
        state: TaskState,
        since: Duration,
    ) -> Option<Timer> {
        let (action, limit) = if state.is_terminal() {
            return None;
        } else if state.is_interrupted() {
            (Action::CancelWaiting, self.config.input_timeout)
        } else {
            (Action::FailStalled, self.config.stall_timeout)
        };
        let due = Instant::now() + limit.saturating_sub(since);
        Some(Timer {
            due,
            task_id,
            seq,
            action,
        })
    }

    /// The timers of the tasks still running or waiting.
    fn timers_for(&self, records: &[TaskRecord]) -> Timers {
        let mut timers = Timers::default();
        for record in records {
            let age = (Utc::now() - record.status_time())
                .to_std()
                .unwrap_or_default();
            let task_id = record.task.id.as_str().into();
            if let Some(timer) = self.timer_for(task_id, record.seq, record.state(), age) {
                timers.set(timer);
            }
        }
        timers
    }

    fn timer_for_event(&self, event: &EventNotice) -> Option<Timer> {
        // Artifact updates keep a working task alive too: any event resets the stall timer.
        let state = event.state.unwrap_or(TaskState::Working);
        self.timer_for(event.task_id.clone(), event.seq, state, Duration::ZERO)
    }

    async fn fire(&self, timer: Timer) {
        let Ok(Some(record)) = self.store.get(&timer.task_id).await else {
            return;
        };
        if record.seq != timer.seq {
            return; // the task moved on; its newer event set a newer timer
        }
        match timer.action {
            Action::CancelWaiting => {
                let minutes = self.config.input_timeout.as_secs_f64() / 60.0;
                let reason = format!(
                    "canceled: no answer arrived within {minutes:.0} minutes of the request for input"
                );
                let update = TaskUpdate::Status {
                    state: TaskState::Canceled,
                    message: Some(Message::agent_text(reason)),
                    metadata: None,
                };
                self.apply_deadline(
                    &record,
                    &[TaskState::InputRequired, TaskState::AuthRequired],
                    update,
                )
                .await;
            }
            Action::FailStalled => {
                let minutes = self.config.stall_timeout.as_secs_f64() / 60.0;
                let reason = format!("failed: the agent reported nothing for {minutes:.0} minutes");
                let update = TaskUpdate::Status {
                    state: TaskState::Failed,
                    message: Some(Message::agent_text(reason)),
                    metadata: None,
                };
                self.apply_deadline(&record, &[TaskState::Submitted, TaskState::Working], update)
                    .await;
            }
        }
    }

    /// Applies `update` only if the task is still in one of the `expected` states.
    async fn apply_deadline(
        &self,
        record: &TaskRecord,
        expected: &[TaskState],
        update: TaskUpdate,
    ) {
        match self
            .tasks
            .update_if(&record.task.id, expected, update)
            .await
        {
            Ok(Some(next)) => {
                tracing::info!(task_id = %record.task.id, state = next.state().as_str(), "deadline passed")
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(task_id = %record.task.id, error = %e, "could not apply a deadline")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use sb_protocol::{Message, Role, TaskState};

    use crate::deadlines::test_world::{scope, settle, task_in, world};
    use crate::lifecycle::TaskUpdate;
    use crate::service::TaskService;

    #[tokio::test(start_paused = true)]
    async fn waiting_for_input_too_long_cancels_with_a_reason() {
        let w = world().await;
        let id = task_in(&w, TaskState::InputRequired).await;
        let mut watch = w.bus.subscribe(&id).await.unwrap();
        tokio::time::sleep(Duration::from_secs(599)).await;
        settle().await;
        assert_eq!(
            w.tasks.get(&scope(), &id).await.unwrap().state(),
            TaskState::InputRequired
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        settle().await;
        let task = w.tasks.get(&scope(), &id).await.unwrap();
        assert_eq!(task.state(), TaskState::Canceled);
        assert!(
            task.task
                .status
                .message
                .unwrap()
                .text()
                .contains("no answer arrived within 10 minutes")
        );
        // The cancel is an ordinary event: streams close on it and webhooks carry it.
        let event = watch.recv().await.unwrap();
        assert_eq!(event.event.state(), Some(TaskState::Canceled));
        w.stop.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_in_time_resets_nothing_it_should_not() {
        let w = world().await;
        let id = task_in(&w, TaskState::InputRequired).await;
        tokio::time::sleep(Duration::from_secs(300)).await;
        let answer = Message {
            role: Role::User,
            ..Message::agent_text("answer")
        };
        w.tasks
            .update(&id, TaskUpdate::Resume { message: answer })
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(400)).await;
        settle().await;
        assert_eq!(
            w.tasks.get(&scope(), &id).await.unwrap().state(),
            TaskState::Working,
            "the old input deadline no longer applies"
        );
        tokio::time::sleep(Duration::from_secs(600)).await;
        settle().await;
        let task = w.tasks.get(&scope(), &id).await.unwrap();
        assert_eq!(task.state(), TaskState::Failed, "but a silent agent stalls");
        assert!(
            task.task
                .status
                .message
                .unwrap()
                .text()
                .contains("reported nothing for 15 minutes")
        );
        w.stop.cancel();
    }
}
