//! Posting one signed webhook until it is done: attempts until one is accepted, the
//! receiver refuses (a 4xx other than 408 and 429: not retried), or the retries run out;
//! between attempts the workspace's [`Backoff`], or longer when the receiver's
//! `Retry-After` asks for it (up to `MAX_RETRY_AFTER`); each attempt signed anew, so
//! its Standard Webhooks timestamp is fresh. The dispatcher posts every event to every
//! push config this way, and so does any other announcer (the fleet inbox).

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{StatusCode, Url};
use sb_store::backoff::Backoff;

use crate::signing::sign;
use crate::ssrf::{AddressPolicy, GuardedResolver};

/// The longest `Retry-After` honoured; a receiver asking for more gets the normal delay.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// Why a post failed for good (a dead letter's reason), or why one attempt failed.
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

/// The HTTP client webhooks are posted with: only addresses `policy` allows (checked
/// when the name resolves, so a DNS answer cannot point it inward), no redirects.
pub fn webhook_client(
    policy: Arc<AddressPolicy>,
    attempt_timeout: Duration,
) -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(Arc::new(GuardedResolver::new(policy)))
        .timeout(attempt_timeout)
        .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
        .build()
}

/// The Standard Webhooks headers of one attempt: id, timestamp, content type, and the
/// signature over exactly those when there is a `secret`.
pub fn signed_headers(
    webhook_id: &str,
    timestamp: i64,
    body: &[u8],
    secret: Option<&[u8]>,
) -> Result<HeaderMap, FailureReason> {
    let mut headers = HeaderMap::new();
    let timestamp = timestamp.to_string();
    if let Some(secret) = secret {
        let signature = sign(secret, webhook_id, &timestamp, body);
        headers.insert("webhook-signature", header_value(&signature)?);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert("webhook-id", header_value(webhook_id)?);
    headers.insert("webhook-timestamp", header_value(&timestamp)?);
    Ok(headers)
}

/// A header value, or why it cannot be one.
pub fn header_value(text: &str) -> Result<HeaderValue, FailureReason> {
    HeaderValue::from_str(text).map_err(|_| FailureReason::InvalidHeaderValue)
}

/// What one attempt came to, for the caller's logs and metrics.
#[derive(Debug)]
pub enum Attempted<'a> {
    Delivered,
    /// Refused for good: no retry.
    Refused(&'a FailureReason),
    /// Failed; retried unless the retries have run out.
    Failed(&'a FailureReason),
}

/// One attempt as [`post_until_done`] reports it.
#[derive(Debug)]
pub struct AttemptReport<'a> {
    /// 1 for the first.
    pub attempt: usize,
    /// The receiver's status code, when it answered.
    pub status: Option<u16>,
    pub outcome: Attempted<'a>,
}

/// A post that failed for good, after `attempts` attempts.
#[derive(Debug)]
pub struct PostFailure {
    pub reason: FailureReason,
    pub attempts: usize,
    /// Why it ended: the receiver refused, the retries ran out, or it could not be sent.
    pub ended: Ended,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Refused,
    RetriesRanOut,
    NotSent,
}

/// Posts `body` to `url` until it is done; `headers` makes each attempt's headers from
/// its Unix timestamp, `report` hears of each attempt. The number of attempts it took.
pub async fn post_until_done(
    client: &reqwest::Client,
    url: Url,
    body: bytes::Bytes,
    mut retries: Backoff,
    mut headers: impl FnMut(i64) -> Result<HeaderMap, FailureReason>,
    mut report: impl FnMut(AttemptReport<'_>),
) -> Result<usize, PostFailure> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let now = chrono::Utc::now().timestamp();
        let mut headers = headers(now).map_err(|reason| PostFailure {
            reason,
            attempts: attempt - 1,
            ended: Ended::NotSent,
        })?;
        // The receiver can join the trace of what caused the webhook.
        sb_telemetry::inject(&mut headers);
        let (outcome, status) = post_once(client, url.clone(), headers, body.clone()).await;
        match outcome {
            Once::Delivered => {
                report(AttemptReport {
                    attempt,
                    status,
                    outcome: Attempted::Delivered,
                });
                return Ok(attempt);
            }
            Once::GiveUp(reason) => {
                report(AttemptReport {
                    attempt,
                    status,
                    outcome: Attempted::Refused(&reason),
                });
                return Err(PostFailure {
                    reason,
                    attempts: attempt,
                    ended: Ended::Refused,
                });
            }
            Once::Retry { reason, after } => {
                report(AttemptReport {
                    attempt,
                    status,
                    outcome: Attempted::Failed(&reason),
                });
                let Some(delay) = retries.next_delay() else {
                    return Err(PostFailure {
                        reason,
                        attempts: attempt,
                        ended: Ended::RetriesRanOut,
                    });
                };
                tokio::time::sleep(after.unwrap_or_default().max(delay)).await;
            }
        }
    }
}

/// What one attempt came to.
enum Once {
    Delivered,
    Retry {
        reason: FailureReason,
        after: Option<Duration>,
    },
    GiveUp(FailureReason),
}

async fn post_once(
    client: &reqwest::Client,
    url: Url,
    headers: HeaderMap,
    body: bytes::Bytes,
) -> (Once, Option<u16>) {
    let sent = client.post(url).headers(headers).body(body).send().await;
    let response = match sent {
        Ok(response) => response,
        Err(e) => {
            let reason = if e.is_timeout() {
                FailureReason::TimedOut
            } else {
                FailureReason::Unreachable(with_causes(&e))
            };
            let retry = Once::Retry {
                reason,
                after: None,
            };
            return (retry, None);
        }
    };
    let status = response.status();
    let code = Some(status.as_u16());
    if status.is_success() {
        return (Once::Delivered, code);
    }
    let retryable = status.is_server_error()
        || status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS;
    let reason = FailureReason::Answered(status);
    if !retryable {
        return (Once::GiveUp(reason), code);
    }
    let after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(retry_after)
        .filter(|d| *d <= MAX_RETRY_AFTER);
    (Once::Retry { reason, after }, code)
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
