//! Deliveries that failed for good: kept in the dead-letter store (the config's cursor
//! moves on, so one dead receiver does not hold back the task's later events), listed
//! for an operator, and re-driven one at a time behind the task's other deliveries.

use sb_store::{DeadLetter, StoredEvent};

use super::delivery::Failure;
use super::{DispatchError, Dispatcher, Inner};

impl Dispatcher {
    /// The deliveries that failed for good, oldest first.
    pub async fn dead_letters(&self) -> Result<Vec<DeadLetter>, DispatchError> {
        Ok(self.inner.dead.list_dead_letters().await?)
    }

    /// Queues a dead letter for one more delivery (behind the task's other deliveries).
    /// Returns whether the letter existed.
    pub async fn redrive(&self, id: &str) -> Result<bool, DispatchError> {
        let Some(letter) = self.inner.dead.take_dead_letter(id).await? else {
            return Ok(false);
        };
        let inner = self.inner.clone();
        let task_id = letter.task_id.clone();
        self.chain(task_id, async move { inner.redeliver(letter).await });
        Ok(true)
    }
}

impl Inner {
    pub(super) async fn bury(&self, event: &StoredEvent, config_id: &str, failure: Failure) {
        let letter = DeadLetter {
            id: sb_protocol::new_id(),
            task_id: event.task_id.to_string(),
            config_id: config_id.to_owned(),
            seq: event.seq,
            host: failure.host,
            reason: failure.reason.to_string(),
            attempts: u32::try_from(failure.attempts).unwrap_or(u32::MAX),
            failed_at: chrono::Utc::now(),
        };
        self.config.metrics.dead_letter();
        if let Err(e) = self.dead.put_dead_letter(letter).await {
            tracing::error!(task_id = %event.task_id, seq = event.seq, error = %e, "cannot record a dead letter");
        }
    }

    /// Delivers one stored event to one config again (a dead letter's re-drive).
    async fn redeliver(&self, letter: DeadLetter) {
        let event = match self
            .tasks
            .events_after(&letter.task_id, letter.seq.saturating_sub(1), 1)
            .await
        {
            Ok(mut events) if events.first().is_some_and(|e| e.seq == letter.seq) => {
                events.remove(0)
            }
            _ => {
                tracing::warn!(task_id = %letter.task_id, seq = letter.seq, "the event of a re-driven delivery is gone");
                return;
            }
        };
        let Ok(Some(live)) = self
            .configs
            .get_push_config(&letter.task_id, &letter.config_id)
            .await
        else {
            tracing::warn!(task_id = %letter.task_id, "the config of a re-driven delivery is gone");
            return;
        };
        let secret = self.signing_secret(&letter.task_id).await;
        if let Some(body) = self.body(&live, &event).await
            && let Err(failure) = self.deliver(&live, &event, body, secret.as_deref()).await
        {
            self.bury(&event, &letter.config_id, failure).await;
        }
    }
}
