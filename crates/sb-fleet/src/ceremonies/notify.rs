//! Run notices: each run of a ceremony with a `notifyChannel`, posted there once it is
//! over (every task it made ended) or, for a firing missed, when it is recorded. Posted
//! like every webhook ([`crate::notice_post`]: Standard Webhooks signature with
//! `[fleet.ceremonies] webhook_secret` — the inbox's when unset —, retries, no
//! redirects, only addresses `webhook_allow` permits).
//!
//! Once across replicas: the replica that marks the run notified (compare-and-set on
//! the run) posts it. A process stopped mid-post loses that notice: a notice is news,
//! and the run itself keeps the outcome.

use sb_store::FleetStore;
use serde::Serialize;

use super::runs::{self, Run, Trigger};
use crate::notice_post::{NoticePoster, PosterSettings};

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
#[derive(Clone, Debug)]
pub struct Notifier {
    poster: NoticePoster,
}

impl Notifier {
    pub fn new(settings: PosterSettings) -> Result<Notifier, String> {
        Ok(Notifier {
            poster: NoticePoster::new("ceremony run notice", settings)?,
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
        let poster = self.poster.clone();
        let url = url.to_owned();
        tokio::spawn(async move { poster.post(&url, &id, body.into()).await });
    }
}
