//! Announcing each new waiting task to the inbox's notification webhook (`[fleet.inbox]
//! webhook_url`), so a chat bot or a pager can raise the prompt: a JSON notice (agent,
//! task, question, where to answer) posted and signed like every webhook
//! (`sb_webhooks::post`: Standard Webhooks signature, retries, only allowed addresses).
//!
//! A notice is kept in the [`FleetStore`] until it is delivered or given up, and claimed
//! before it is posted, so a process that stops with notices pending leaves them to the
//! next start (its own or another replica's), and two replicas never post the same one.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use sb_protocol::{Message, TaskState};
use sb_store::{FleetStore, TaskRecord};
use serde::{Deserialize, Serialize};

use sb_store::fleet::now_ms;

use crate::notice_post::{NoticePoster, PosterSettings};

/// Where pending notices are kept.
const PENDING: &str = "inbox-notices";
/// How long a claim on a notice holds: longer than its retries take.
const CLAIM_MILLIS: u64 = 15 * 60_000;

/// What a receiver is told of a task that started waiting for a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Notice {
    /// `inbox.waiting`.
    #[serde(rename = "type")]
    pub kind: String,
    pub agent: String,
    pub task_id: String,
    pub context_id: String,
    pub state: TaskState,
    /// The principal it waits for (`""`: anonymous).
    pub owner: String,
    pub question: String,
    pub since: DateTime<Utc>,
    /// `POST` the answer here (`{"text": …}`), with the admin token or the owner's
    /// credentials.
    pub answer_url: String,
}

impl Notice {
    pub fn of(record: &TaskRecord, public_url: &str) -> Notice {
        let since = record.status_time();
        Notice {
            kind: "inbox.waiting".into(),
            agent: record.agent.clone(),
            task_id: record.task.id.clone(),
            context_id: record.task.context_id.clone(),
            state: record.state(),
            owner: record.owner.clone(),
            question: record
                .task
                .status
                .message
                .as_ref()
                .map(Message::text)
                .unwrap_or_default(),
            since,
            answer_url: format!(
                "{}/fleet/inbox/{}/answer",
                public_url.trim_end_matches('/'),
                record.task.id
            ),
        }
    }

    /// Its Standard Webhooks id: one per wait, so a receiver de-duplicates retries.
    fn id(&self) -> String {
        format!("inbox:{}:{}", self.task_id, self.since.timestamp_millis())
    }
}

/// The notification webhook and how to post to it.
#[derive(Clone)]
pub struct Announcer {
    url: String,
    poster: NoticePoster,
    store: Arc<dyn FleetStore>,
    /// Who claims notices: this process.
    holder: String,
}

impl std::fmt::Debug for Announcer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL's path: it may be a credential.
        f.debug_struct("Announcer").finish_non_exhaustive()
    }
}

impl Announcer {
    /// Announces to `url`, posting as `poster` says (signed: the inbox requires a
    /// secret), keeping pending notices in `store`.
    pub fn new(
        url: String,
        poster: PosterSettings,
        store: Arc<dyn FleetStore>,
    ) -> Result<Announcer, String> {
        Ok(Announcer {
            url,
            poster: NoticePoster::new("inbox notice", poster)?,
            store,
            holder: format!("{}-{}", std::process::id(), sb_protocol::new_id()),
        })
    }

    /// Keeps `notice` until it is posted, then posts it (in the background).
    pub async fn announce(&self, notice: Notice) {
        let Ok(json) = serde_json::to_vec(&notice) else {
            return;
        };
        if let Err(e) = self.store.doc_put(PENDING, &notice.id(), json).await {
            tracing::warn!(error = %e, task_id = %notice.task_id, "could not keep an inbox notice; posting it anyway");
        }
        self.spawn_post(notice);
    }

    /// Posts the notices a previous process left pending.
    pub async fn resume_pending(&self) {
        match self.store.doc_list(PENDING).await {
            Ok(pending) => {
                for (_, json) in pending {
                    if let Ok(notice) = serde_json::from_slice::<Notice>(&json) {
                        self.spawn_post(notice);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not read the pending inbox notices"),
        }
    }

    fn spawn_post(&self, notice: Notice) {
        let announcer = self.clone();
        tokio::spawn(async move { announcer.post(notice).await });
    }

    async fn post(&self, notice: Notice) {
        let id = notice.id();
        match self
            .store
            .claim(
                &format!("inbox-notice:{id}"),
                &self.holder,
                now_ms() + CLAIM_MILLIS,
            )
            .await
        {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %e, task_id = %notice.task_id, "could not claim an inbox notice; left for the next start");
                return;
            }
        }
        let Ok(body) = serde_json::to_vec(&notice) else {
            return;
        };
        // Delivered, refused or given up, it is dealt with: not posted again.
        self.poster.post(&self.url, &id, body.into()).await;
        if let Err(e) = self.store.doc_remove(PENDING, &id).await {
            tracing::warn!(error = %e, "could not drop a posted inbox notice");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use sb_store::MemoryStore;
    use sb_webhooks::ssrf::AddressPolicy;

    use super::*;

    type Arrived = Arc<Mutex<Vec<(String, String, String)>>>;

    /// A receiver answering `status`, keeping (webhook-id, signature, body).
    async fn receiver(status: u16) -> (String, Arrived) {
        let arrived: Arrived = Arc::default();
        let kept = arrived.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let kept = kept.clone();
                tokio::spawn(async move {
                    use tokio::io::{AsyncReadExt, AsyncWriteExt};
                    let mut request = Vec::new();
                    let mut buffer = [0u8; 4096];
                    loop {
                        let n = socket.read(&mut buffer).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        request.extend_from_slice(&buffer[..n]);
                        let text = String::from_utf8_lossy(&request).to_string();
                        if let Some((head, body)) = text.split_once("\r\n\r\n") {
                            let length = head
                                .lines()
                                .find_map(|l| {
                                    l.to_lowercase()
                                        .strip_prefix("content-length:")
                                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                                })
                                .unwrap_or(0);
                            if body.len() >= length {
                                let header = |name: &str| {
                                    head.lines()
                                        .find_map(|l| {
                                            l.to_lowercase()
                                                .starts_with(name)
                                                .then(|| l[name.len() + 1..].trim().to_owned())
                                        })
                                        .unwrap_or_default()
                                };
                                kept.lock().unwrap().push((
                                    header("webhook-id"),
                                    header("webhook-signature"),
                                    body.to_owned(),
                                ));
                                break;
                            }
                        }
                    }
                    let reply = format!(
                        "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    );
                    let _ = socket.write_all(reply.as_bytes()).await;
                });
            }
        });
        (url, arrived)
    }

    fn announcer(url: &str, store: Arc<dyn FleetStore>) -> Announcer {
        let settings = PosterSettings {
            secret: Some(b"a-secret-of-at-least-16".to_vec()),
            token: None,
            retry_delays: vec![Duration::from_millis(10)],
            attempt_timeout: Duration::from_secs(2),
            policy: Arc::new(AddressPolicy::parse("127.0.0.1/32").unwrap()),
        };
        Announcer::new(url.to_owned(), settings, store).unwrap()
    }

    fn notice(task_id: &str) -> Notice {
        Notice {
            kind: "inbox.waiting".into(),
            agent: "memory".into(),
            task_id: task_id.into(),
            context_id: "c".into(),
            state: TaskState::InputRequired,
            owner: "alice".into(),
            question: "which one?".into(),
            since: Utc::now(),
            answer_url: format!("http://sb/fleet/inbox/{task_id}/answer"),
        }
    }

    async fn settle(store: &MemoryStore) {
        for _ in 0..200 {
            if store.doc_list(PENDING).await.unwrap().is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("notices still pending");
    }

    #[tokio::test]
    async fn a_notice_is_posted_signed_and_then_forgotten() {
        let (url, arrived) = receiver(200).await;
        let store = Arc::new(MemoryStore::new());
        announcer(&url, store.clone()).announce(notice("t1")).await;
        settle(&store).await;
        let arrived = arrived.lock().unwrap().clone();
        assert_eq!(arrived.len(), 1);
        let (id, signature, body) = &arrived[0];
        assert!(id.starts_with("inbox:t1:"), "{id}");
        assert!(signature.starts_with("v1,"), "{signature}");
        let sent: Notice = serde_json::from_str(body).unwrap();
        assert_eq!(sent.task_id, "t1");
    }

    #[tokio::test]
    async fn notices_left_pending_are_posted_once_by_whoever_claims_them() {
        let (url, arrived) = receiver(200).await;
        let store = Arc::new(MemoryStore::new());
        let left = notice("t2");
        store
            .doc_put(PENDING, &left.id(), serde_json::to_vec(&left).unwrap())
            .await
            .unwrap();
        // Two replicas start at once, both find it pending.
        let (one, two) = (
            announcer(&url, store.clone()),
            announcer(&url, store.clone()),
        );
        one.resume_pending().await;
        two.resume_pending().await;
        settle(&store).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(arrived.lock().unwrap().len(), 1, "posted once");
    }

    #[tokio::test]
    async fn a_refused_notice_is_given_up_not_kept_forever() {
        let (url, arrived) = receiver(410).await;
        let store = Arc::new(MemoryStore::new());
        announcer(&url, store.clone()).announce(notice("t3")).await;
        settle(&store).await;
        assert_eq!(arrived.lock().unwrap().len(), 1, "a 410 is not retried");
    }
}
