//! Posting one of the fleet layer's notices (the inbox's waits, ceremonies' runs) to a
//! receiver: like every webhook (`sb_webhooks::post`: Standard Webhooks signature when
//! there is a secret, the receiver's bearer token when there is one, retries, no
//! redirects, only addresses `webhook_allow` permits), each outcome logged under the
//! notice's kind and id.

use std::sync::Arc;
use std::time::Duration;

use sb_store::backoff::Backoff;
use sb_webhooks::post::{Attempted, header_value, post_until_done, signed_headers};
use sb_webhooks::ssrf::AddressPolicy;

/// How a kind of notice is posted.
#[derive(Clone)]
pub struct NoticePoster {
    /// What the logs call it (`inbox notice`, `ceremony run notice`).
    kind: &'static str,
    client: reqwest::Client,
    secret: Option<Arc<[u8]>>,
    token: Option<String>,
    retry_delays: Arc<[Duration]>,
    policy: Arc<AddressPolicy>,
}

impl std::fmt::Debug for NoticePoster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret or the token.
        f.debug_struct("NoticePoster")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// How one notice ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Posted {
    Delivered,
    /// The receiver's address is not allowed: never attempted.
    NotAllowed,
    /// Every attempt failed, or the receiver refused it for good.
    GivenUp,
}

/// What a [`NoticePoster`] is made from.
#[derive(Clone, Debug)]
pub struct PosterSettings {
    /// The signing key; unsigned without one.
    pub secret: Option<Vec<u8>>,
    /// Sent as `Authorization: Bearer`.
    pub token: Option<String>,
    pub retry_delays: Vec<Duration>,
    pub attempt_timeout: Duration,
    pub policy: Arc<AddressPolicy>,
}

impl NoticePoster {
    pub fn new(kind: &'static str, settings: PosterSettings) -> Result<NoticePoster, String> {
        let client =
            sb_webhooks::post::webhook_client(settings.policy.clone(), settings.attempt_timeout)
                .map_err(|e| format!("the HTTP client of {kind}s: {e}"))?;
        Ok(NoticePoster {
            kind,
            client,
            secret: settings.secret.map(Arc::from),
            token: settings.token,
            retry_delays: settings.retry_delays.into(),
            policy: settings.policy,
        })
    }

    /// Posts `body` to `url` as webhook `id`, retrying until delivered or given up.
    pub async fn post(&self, url: &str, id: &str, body: bytes::Bytes) -> Posted {
        let kind = self.kind;
        let target = match self.policy.check_url(url) {
            Ok(target) => target,
            Err(reason) => {
                tracing::error!(
                    reason,
                    id,
                    "the address of a {kind} is not allowed (webhook_allow); notice dropped"
                );
                return Posted::NotAllowed;
            }
        };
        let secret = self.secret.as_deref();
        let token = self.token.as_deref();
        let posted = post_until_done(
            &self.client,
            target,
            body.clone(),
            Backoff::listed(self.retry_delays.clone()),
            |now| {
                let mut headers = signed_headers(id, now, &body, secret)?;
                if let Some(token) = token {
                    let value = header_value(&format!("Bearer {token}"))?;
                    headers.insert(reqwest::header::AUTHORIZATION, value);
                }
                Ok(headers)
            },
            |report| match report.outcome {
                Attempted::Delivered => {
                    tracing::info!(id, attempt = report.attempt, "{kind} delivered")
                }
                Attempted::Refused(reason) | Attempted::Failed(reason) => {
                    tracing::info!(id, attempt = report.attempt, %reason, "{kind} attempt failed")
                }
            },
        )
        .await;
        match posted {
            Ok(_) => Posted::Delivered,
            Err(failure) => {
                tracing::error!(id, attempts = failure.attempts, reason = %failure.reason, "{kind} not delivered; given up");
                Posted::GivenUp
            }
        }
    }
}
