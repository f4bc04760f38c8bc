//! One event to one config: the address policy checked again, then posted until done
//! ([`post_until_done`]: attempts, retries, `Retry-After`), each attempt logged and
//! counted.

use sb_store::backoff::Backoff;
use sb_store::{PushConfigRecord, StoredEvent};
use tracing::Instrument;

use super::request::headers;
use super::{Inner, host_of};
use crate::post::{Attempted, Ended, FailureReason, post_until_done};

/// A delivery that failed for good.
pub(super) struct Failure {
    pub(super) host: String,
    pub(super) reason: FailureReason,
    pub(super) attempts: usize,
}

impl Inner {
    pub(super) async fn deliver(
        &self,
        record: &PushConfigRecord,
        event: &StoredEvent,
        body: Vec<u8>,
        secret: Option<&[u8]>,
    ) -> Result<(), Failure> {
        let url = record.config.url.as_str();
        let state = event
            .event
            .state()
            .map(|s| s.as_str())
            .unwrap_or("ARTIFACT_UPDATE");
        // Checked again at send time: the config may predate a stricter policy, and a
        // literal address never reaches the resolver.
        let target = match self.config.policy.check_url(url) {
            Ok(target) => target,
            Err(reason) => {
                let host = host_of(url);
                tracing::warn!(task_id = %event.task_id, host, reason, "webhook target not allowed; not sent");
                return Err(Failure {
                    host,
                    reason: FailureReason::TargetNotAllowed(reason),
                    attempts: 0,
                });
            }
        };
        let host = target.host_str().unwrap_or_default().to_owned();
        let span = tracing::info_span!("webhook_delivery", task_id = %event.task_id, seq = event.seq, host = %host);
        sb_telemetry::follow(&span, event.traceparent.as_deref());
        // Shared by the attempts, not copied for each.
        let body = bytes::Bytes::from(body);
        // Standard Webhooks: receivers de-duplicate by id, which is also the stream's seq.
        let webhook_id = format!("{}:{}", event.task_id, event.seq);
        let retries = Backoff::listed(self.config.retry_delays.clone());
        let task_id = &event.task_id;
        let seq = event.seq;
        let posted = post_until_done(
            &self.client,
            target,
            body.clone(),
            retries,
            |now| headers(&record.config, &webhook_id, now, &body, secret),
            |report| {
                let status = report.status.map(|s| s.to_string()).unwrap_or_else(|| "-".into());
                let attempt = report.attempt;
                match report.outcome {
                    Attempted::Delivered => {
                        self.config.metrics.attempt("delivered");
                        tracing::info!(%task_id, seq, state, host, status, attempt, "webhook delivered");
                    }
                    Attempted::Refused(reason) => {
                        self.config.metrics.attempt("refused");
                        tracing::warn!(%task_id, seq, state, host, status, attempt, %reason, "webhook refused; not retried");
                    }
                    Attempted::Failed(reason) => {
                        self.config.metrics.attempt("failed");
                        tracing::info!(%task_id, seq, state, host, status, attempt, %reason, "webhook attempt failed");
                    }
                }
            },
        )
        .instrument(span)
        .await;
        match posted {
            Ok(_) => Ok(()),
            Err(failure) => {
                match failure.ended {
                    Ended::NotSent => {
                        tracing::error!(%task_id, host, reason = %failure.reason, "webhook not sent")
                    }
                    Ended::RetriesRanOut => {
                        tracing::error!(%task_id, seq, state, host, attempts = failure.attempts, "webhook delivery failed after every retry")
                    }
                    // Logged with the attempt.
                    Ended::Refused => {}
                }
                Err(Failure {
                    host,
                    reason: failure.reason,
                    attempts: failure.attempts,
                })
            }
        }
    }
}
