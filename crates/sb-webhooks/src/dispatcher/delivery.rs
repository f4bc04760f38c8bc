//! One event to one config: the address policy checked again, then attempts until one
//! is accepted, the receiver refuses (4xx but 408 and 429: not retried), or the
//! configured retries run out. Retries wait on the workspace's [`Backoff`], or longer
//! when the receiver's `Retry-After` asks for it.

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use sb_store::backoff::Backoff;
use sb_store::{PushConfigRecord, StoredEvent};
use tracing::Instrument;

use super::request::headers;
use super::{Inner, host_of};

/// The longest `Retry-After` honoured; a receiver asking for more gets the normal delay.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Why a delivery failed for good: the dead letter's reason.
#[derive(Debug, thiserror::Error)]
pub enum FailureReason {
    #[error("target not allowed: {0}")]
    TargetNotAllowed(String),
    #[error("a header value has invalid characters")]
    InvalidHeaderValue,
    #[error("timed out")]
    TimedOut,
    #[error("could not connect: {0}")]
    Unreachable(String),
    #[error("receiver answered {0}")]
    Answered(StatusCode),
}

/// A delivery that failed for good.
pub(super) struct Failure {
    pub(super) host: String,
    pub(super) reason: FailureReason,
    pub(super) attempts: usize,
}

/// What one attempt came to.
enum Attempt {
    Delivered,
    Retry {
        reason: FailureReason,
        after: Option<Duration>,
    },
    GiveUp(FailureReason),
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
        let mut retries = Backoff::listed(self.config.retry_delays.clone());
        let mut attempt = 0;
        loop {
            attempt += 1;
            // Per attempt, so the signed timestamp is fresh on every retry.
            let now = chrono::Utc::now().timestamp();
            let headers = match headers(&record.config, &webhook_id, now, &body, secret) {
                Ok(headers) => headers,
                Err(reason) => {
                    tracing::error!(task_id = %event.task_id, host, %reason, "webhook not sent");
                    return Err(Failure {
                        host,
                        reason,
                        attempts: attempt - 1,
                    });
                }
            };
            let (outcome, status) = self
                .attempt(target.clone(), headers, body.clone())
                .instrument(span.clone())
                .await;
            let status = status.map(|s| s.to_string()).unwrap_or_else(|| "-".into());
            match outcome {
                Attempt::Delivered => {
                    self.config.metrics.attempt("delivered");
                    tracing::info!(task_id = %event.task_id, seq = event.seq, state, host, status, attempt, "webhook delivered");
                    return Ok(());
                }
                Attempt::GiveUp(reason) => {
                    self.config.metrics.attempt("refused");
                    tracing::warn!(task_id = %event.task_id, seq = event.seq, state, host, status, attempt, %reason, "webhook refused; not retried");
                    return Err(Failure {
                        host,
                        reason,
                        attempts: attempt,
                    });
                }
                Attempt::Retry { reason, after } => {
                    self.config.metrics.attempt("failed");
                    tracing::info!(task_id = %event.task_id, seq = event.seq, state, host, status, attempt, %reason, "webhook attempt failed");
                    let Some(delay) = retries.next_delay() else {
                        tracing::error!(task_id = %event.task_id, seq = event.seq, state, host, attempts = attempt, "webhook delivery failed after every retry");
                        return Err(Failure {
                            host,
                            reason,
                            attempts: attempt,
                        });
                    };
                    tokio::time::sleep(after.unwrap_or_default().max(delay)).await;
                }
            }
        }
    }

    async fn attempt(
        &self,
        url: Url,
        mut headers: HeaderMap,
        body: bytes::Bytes,
    ) -> (Attempt, Option<u16>) {
        // The receiver can join the trace of the request that caused the event.
        sb_telemetry::inject(&mut headers);
        let sent = self
            .client
            .post(url)
            .headers(headers)
            .body(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                let reason = if e.is_timeout() {
                    FailureReason::TimedOut
                } else {
                    FailureReason::Unreachable(with_causes(&e))
                };
                return (
                    Attempt::Retry {
                        reason,
                        after: None,
                    },
                    None,
                );
            }
        };
        let status = response.status();
        let code = Some(status.as_u16());
        if status.is_success() {
            return (Attempt::Delivered, code);
        }
        let retryable = status.is_server_error()
            || status == StatusCode::REQUEST_TIMEOUT
            || status == StatusCode::TOO_MANY_REQUESTS;
        let reason = FailureReason::Answered(status);
        if !retryable {
            return (Attempt::GiveUp(reason), code);
        }
        let after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(retry_after)
            .filter(|d| *d <= MAX_RETRY_AFTER);
        (Attempt::Retry { reason, after }, code)
    }
}

/// An error with the errors under it: reqwest's own message names only the request,
/// and the reason (a refused address, a reset connection) is further down.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

/// Reads `Retry-After`: delay-seconds or an HTTP date (RFC 9110 §10.2.3).
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    (when.with_timezone(&chrono::Utc) - chrono::Utc::now())
        .to_std()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_or_a_date() {
        assert_eq!(retry_after(" 7 "), Some(Duration::from_secs(7)));
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(30))
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        let parsed = retry_after(&soon).unwrap();
        assert!(
            parsed > Duration::from_secs(25) && parsed <= Duration::from_secs(30),
            "{parsed:?}"
        );
        assert_eq!(
            retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            None,
            "a past date means no extra wait"
        );
        assert_eq!(retry_after("soon"), None);
    }

    #[test]
    fn a_reason_reads_as_it_did_when_it_was_text() {
        assert_eq!(
            FailureReason::Answered(StatusCode::GONE).to_string(),
            "receiver answered 410 Gone"
        );
        assert_eq!(
            FailureReason::TargetNotAllowed("points at 10.0.0.1".into()).to_string(),
            "target not allowed: points at 10.0.0.1"
        );
    }
}
