//! Push notifications from upstreams that do not stream: the bridge registers a push
//! config on the upstream task pointing at this receiver (`POST /bridge/push/{id}`),
//! with a token of its own per task, and the turn following that task reads it as soon
//! as a notification with that token comes, instead of on the polling schedule. The
//! notification only wakes the reader: the task as read is what is mirrored, so a forged
//! or out-of-order body can change nothing, and a lost one only delays the read until
//! the schedule's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use subtle::ConstantTimeEq;
use tokio::sync::Notify;

/// The header the SDKs send a push config's token in.
const TOKEN_HEADER: &str = "x-a2a-notification-token";

/// Where upstream tasks' push notifications come in, and who waits for them.
#[derive(Debug)]
pub struct PushReceiver {
    /// This Switchboard's public base URL (the upstream calls back there).
    public_url: String,
    waiting: Mutex<HashMap<String, Waiting>>,
    pushes: Family<Outcome, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    /// `received`: a registration's token; `refused`: no such registration, or the
    /// wrong token.
    outcome: &'static str,
}

#[derive(Debug)]
struct Waiting {
    token: String,
    wake: Arc<Notify>,
}

/// One upstream task's registration: the URL and token to give the upstream, and what
/// wakes the follower. Dropping it stops taking that task's notifications.
#[derive(Debug)]
pub struct PushWatch {
    pub url: String,
    pub token: String,
    pub wake: Arc<Notify>,
    id: String,
    receiver: Arc<PushReceiver>,
}

impl Drop for PushWatch {
    fn drop(&mut self) {
        if let Ok(mut waiting) = self.receiver.waiting.lock() {
            waiting.remove(&self.id);
        }
    }
}

fn random_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

impl PushReceiver {
    pub fn new(public_url: &str) -> Arc<PushReceiver> {
        Arc::new(PushReceiver {
            public_url: public_url.trim_end_matches('/').to_owned(),
            waiting: Mutex::new(HashMap::new()),
            pushes: Family::default(),
        })
    }

    /// A new registration, with a URL and token no one else has.
    pub fn watch(self: &Arc<Self>) -> PushWatch {
        let (id, token) = (random_hex(), format!("{}{}", random_hex(), random_hex()));
        let wake = Arc::new(Notify::new());
        if let Ok(mut waiting) = self.waiting.lock() {
            let entry = Waiting {
                token: token.clone(),
                wake: wake.clone(),
            };
            waiting.insert(id.clone(), entry);
        }
        PushWatch {
            url: format!("{}/bridge/push/{id}", self.public_url),
            token,
            wake,
            id,
            receiver: self.clone(),
        }
    }

    /// Takes a notification for registration `id` carrying `token`: whether it was one.
    pub fn deliver(&self, id: &str, token: Option<&str>) -> bool {
        let woken = self.waiting.lock().ok().and_then(|waiting| {
            let entry = waiting.get(id)?;
            let token = token?;
            bool::from(entry.token.as_bytes().ct_eq(token.as_bytes())).then(|| entry.wake.clone())
        });
        let outcome = if woken.is_some() {
            "received"
        } else {
            "refused"
        };
        self.pushes.get_or_create(&Outcome { outcome }).inc();
        match woken {
            Some(wake) => {
                // A permit is stored when the follower is not waiting yet (it is
                // reading): the next wait then returns at once, and nothing is missed.
                wake.notify_one();
                true
            }
            None => false,
        }
    }

    /// `switchboard_bridge_pushes_total{outcome}`: notifications taken and refused.
    pub fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.register(
            "switchboard_bridge_pushes",
            "Push notifications from bridged agents' upstreams, by outcome",
            self.pushes.clone(),
        );
    }

    /// `POST /bridge/push/{id}`: 204 for a notification with the right token, 404
    /// otherwise (an ended registration looks like one that never was).
    pub fn routes(self: Arc<Self>) -> axum::Router {
        axum::Router::new()
            .route("/bridge/push/{id}", post(receive))
            .with_state(self)
    }
}

async fn receive(
    State(receiver): State<Arc<PushReceiver>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> StatusCode {
    let token = headers.get(TOKEN_HEADER).and_then(|v| v.to_str().ok());
    match receiver.deliver(&id, token) {
        true => StatusCode::NO_CONTENT,
        false => StatusCode::NOT_FOUND,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_notification_wakes_its_task_only_with_its_token() {
        let receiver = PushReceiver::new("http://sb.example/");
        let watch = receiver.watch();
        assert!(watch.url.starts_with("http://sb.example/bridge/push/"));
        let id = watch.url.rsplit('/').next().unwrap_or_default().to_owned();
        assert!(!receiver.deliver(&id, None));
        assert!(!receiver.deliver(&id, Some("wrong")));
        assert!(!receiver.deliver("other", Some(&watch.token)));
        assert!(receiver.deliver(&id, Some(&watch.token)));
        // Delivered before anyone waited: the wait returns at once.
        let woken =
            tokio::time::timeout(std::time::Duration::from_secs(1), watch.wake.notified()).await;
        assert!(woken.is_ok(), "the notification was lost");
        let token = watch.token.clone();
        drop(watch);
        assert!(!receiver.deliver(&id, Some(&token)), "ended with its watch");
    }
}
