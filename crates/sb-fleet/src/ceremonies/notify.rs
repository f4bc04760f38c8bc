//! Run notices: each run of a ceremony with a `notifyChannel`, posted there once it is
//! over (every task it made ended) or, for a firing missed, when it is recorded. Posted
//! like every webhook (`sb_webhooks::post`: Standard Webhooks signature with
//! `[fleet.ceremonies] webhook_secret` — the inbox's when unset —, retries, no
//! redirects, only addresses `webhook_allow` permits).
//!
//! Once across replicas: the replica that marks the run notified (compare-and-set on
//! the run) posts it. A process stopped mid-post loses that notice: a notice is news,
//! and the run itself keeps the outcome.

use std::sync::Arc;
use std::time::Duration;

use sb_store::FleetStore;
use sb_store::backoff::Backoff;
use sb_webhooks::post::{Attempted, post_until_done, signed_headers};
use sb_webhooks::ssrf::AddressPolicy;
use serde::Serialize;

use super::runs::{self, Run, Trigger};

/// What a notify channel is told of a run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunNotice<'a> {
    /// `ceremony.run` (it fired and is over) or `ceremony.missed`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub ceremony: &'a str,
    pub name: &'a str,
    pub skill: &'a str,
    pub run: &'a Run,
}

/// How run notices are posted.
#[derive(Clone)]
pub struct Notifier {
    client: reqwest::Client,
    secret: Option<Arc<[u8]>>,
    token: Option<String>,
    retry_delays: Arc<[Duration]>,
    policy: Arc<AddressPolicy>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret or the token.
        f.debug_struct("Notifier").finish_non_exhaustive()
    }
}

/// What a [`Notifier`] is made from.
#[derive(Clone, Debug)]
pub struct NotifierSettings {
    /// The signing key; unsigned without one.
    pub secret: Option<Vec<u8>>,
    pub token: Option<String>,
    pub retry_delays: Vec<Duration>,
    pub attempt_timeout: Duration,
    pub policy: Arc<AddressPolicy>,
}

impl Notifier {
    pub fn new(settings: NotifierSettings) -> Result<Notifier, String> {
        let client =
            sb_webhooks::post::webhook_client(settings.policy.clone(), settings.attempt_timeout)
                .map_err(|e| format!("the ceremonies' webhook HTTP client: {e}"))?;
        Ok(Notifier {
            client,
            secret: settings.secret.map(Arc::from),
            token: settings.token,
            retry_delays: settings.retry_delays.into(),
            policy: settings.policy,
        })
    }

    /// Posts the notice of `run` to `url` (in the background) if this replica is the
    /// one that marks it notified.
    pub async fn notify(
        &self,
        store: &dyn FleetStore,
        url: &str,
        name: &str,
        skill: &str,
        run: &Run,
    ) {
        match runs::mark_notified(store, run).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %e, ceremony = %run.ceremony, "could not mark a run notified; its notice waits for the next look");
                return;
            }
        }
        let kind = match run.trigger {
            Trigger::Missed => "ceremony.missed",
            Trigger::Schedule | Trigger::Manual => "ceremony.run",
        };
        let notice = RunNotice {
            kind,
            ceremony: &run.ceremony,
            name,
            skill,
            run,
        };
        let Ok(body) = serde_json::to_vec(&notice) else {
            return;
        };
        let id = format!("ceremony:{}:{}", run.ceremony, run.id());
        let notifier = self.clone();
        let url = url.to_owned();
        tokio::spawn(async move { notifier.post(&url, &id, body.into()).await });
    }

    async fn post(&self, url: &str, id: &str, body: bytes::Bytes) {
        let target = match self.policy.check_url(url) {
            Ok(target) => target,
            Err(reason) => {
                tracing::error!(
                    reason,
                    id,
                    "a ceremony's notifyChannel is not an allowed address (webhook_allow); notice dropped"
                );
                return;
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
                    let value = sb_webhooks::post::header_value(&format!("Bearer {token}"))?;
                    headers.insert(reqwest::header::AUTHORIZATION, value);
                }
                Ok(headers)
            },
            |report| match report.outcome {
                Attempted::Delivered => {
                    tracing::info!(id, attempt = report.attempt, "ceremony run notice delivered")
                }
                Attempted::Refused(reason) | Attempted::Failed(reason) => {
                    tracing::info!(id, attempt = report.attempt, %reason, "ceremony run notice attempt failed")
                }
            },
        )
        .await;
        if let Err(failure) = posted {
            tracing::error!(id, attempts = failure.attempts, reason = %failure.reason, "ceremony run notice not delivered; given up");
        }
    }
}
