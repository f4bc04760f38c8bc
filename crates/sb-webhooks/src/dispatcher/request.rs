//! What one delivery sends: the body, in the version its config was registered in, and
//! the headers: the receiver's credentials and the Standard Webhooks id, timestamp and
//! signature, signed over exactly the id and timestamp they carry.

use std::sync::Arc;

use reqwest::header::{AUTHORIZATION, HeaderMap};
use sb_protocol::v03::{self, Dialect03};
use sb_protocol::{StreamResponse, TaskPushNotificationConfig, Version};
use sb_store::{PushConfigRecord, StoredEvent};

use super::Inner;
use crate::post::{FailureReason, header_value, signed_headers};

impl Inner {
    /// 1.0 receivers get the event as a `StreamResponse`; 0.3 receivers get the whole
    /// task in 0.3 JSON, as the 0.3 SDKs send it (digest §7.3).
    pub(super) async fn body(
        &self,
        record: &PushConfigRecord,
        event: &StoredEvent,
    ) -> Option<Vec<u8>> {
        let json = match Version::from(record.version) {
            // The event's JSON, made once for its streams and deliveries alike.
            Version::V1_0 => return Some(event.json.render(&event.event).as_bytes().to_vec()),
            Version::V0_3 => match &*event.event {
                StreamResponse::Task(task) => v03::task_to_v03(task, Dialect03::KindJson),
                _ => {
                    let current = self.tasks.get(&event.task_id).await.ok().flatten()?;
                    v03::task_to_v03(&current.task, Dialect03::KindJson)
                }
            },
        };
        serde_json::to_vec(&json).ok()
    }

    /// The key that signs the task's webhooks: its agent's, if it has one.
    pub(super) async fn signing_secret(&self, task_id: &str) -> Option<Arc<[u8]>> {
        if self.config.signing_secrets.is_empty() {
            return None;
        }
        let record = self.tasks.get(task_id).await.ok().flatten()?;
        self.config.signing_secrets.get(&record.agent)
    }
}

/// The headers of one attempt. A config's `authentication` becomes `Authorization`; its
/// `token` goes in `X-A2A-Notification-Token` and, when there is no `authentication`
/// (the shape @a2a-js/sdk registers), as `Authorization: Bearer` too, which is what the
/// receivers the fleet guides describe check.
pub(super) fn headers(
    config: &TaskPushNotificationConfig,
    webhook_id: &str,
    timestamp: i64,
    body: &[u8],
    secret: Option<&[u8]>,
) -> Result<HeaderMap, FailureReason> {
    let mut headers = signed_headers(webhook_id, timestamp, body, secret)?;
    let token = config.token.as_deref().filter(|t| !t.is_empty());
    match &config.authentication {
        Some(auth) => {
            if let Some(credentials) = auth.credentials.as_deref().filter(|c| !c.is_empty()) {
                headers.insert(
                    AUTHORIZATION,
                    header_value(&format!("{} {credentials}", auth.scheme))?,
                );
            }
        }
        None => {
            if let Some(token) = token {
                headers.insert(AUTHORIZATION, header_value(&format!("Bearer {token}"))?);
            }
        }
    }
    if let Some(token) = token {
        headers.insert("x-a2a-notification-token", header_value(token)?);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use sb_protocol::AuthenticationInfo;

    use super::*;
    use crate::signing::sign;

    fn config(
        token: Option<&str>,
        authentication: Option<AuthenticationInfo>,
    ) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig {
            tenant: None,
            id: None,
            task_id: "t1".into(),
            url: "http://127.0.0.1:9/hook".into(),
            token: token.map(str::to_owned),
            authentication,
        }
    }

    fn header(headers: &HeaderMap, name: &str) -> Option<String> {
        headers
            .get(name)
            .map(|v| v.to_str().unwrap_or_default().to_owned())
    }

    /// The signature covers the very id and timestamp the headers carry (the timestamp
    /// was once read from the clock twice, so a second boundary broke the signature).
    #[test]
    fn the_signature_covers_the_sent_id_and_timestamp() {
        let headers = headers(
            &config(Some("tok"), None),
            "t1:3",
            1_700_000_000,
            b"{}",
            Some(b"secret"),
        )
        .unwrap();
        assert_eq!(header(&headers, "webhook-id").unwrap(), "t1:3");
        assert_eq!(header(&headers, "webhook-timestamp").unwrap(), "1700000000");
        assert_eq!(
            header(&headers, "webhook-signature").unwrap(),
            sign(b"secret", "t1:3", "1700000000", b"{}")
        );
        assert_eq!(header(&headers, "x-a2a-notification-token").unwrap(), "tok");
    }

    #[test]
    fn a_token_without_authentication_is_also_a_bearer_credential() {
        let bare = headers(&config(Some("tok"), None), "t1:1", 0, b"{}", None).unwrap();
        assert_eq!(header(&bare, "authorization").unwrap(), "Bearer tok");
        assert_eq!(header(&bare, "x-a2a-notification-token").unwrap(), "tok");

        let authenticated = config(
            Some("tok"),
            Some(AuthenticationInfo {
                scheme: "Basic".into(),
                credentials: Some("dXNlcjpwdw==".into()),
            }),
        );
        let both = headers(&authenticated, "t1:1", 0, b"{}", None).unwrap();
        assert_eq!(
            header(&both, "authorization").unwrap(),
            "Basic dXNlcjpwdw=="
        );
        assert_eq!(header(&both, "x-a2a-notification-token").unwrap(), "tok");

        let neither = headers(&config(None, None), "t1:1", 0, b"{}", None).unwrap();
        assert_eq!(header(&neither, "authorization"), None);
    }

    #[test]
    fn a_header_value_that_cannot_be_sent_is_a_failure_not_a_panic() {
        let broken = headers(&config(Some("a\nb"), None), "t1:1", 0, b"{}", None);
        assert!(matches!(broken, Err(FailureReason::InvalidHeaderValue)));
    }
}
