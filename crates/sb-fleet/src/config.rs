//! The `[fleet]` section of Switchboard's configuration: the fleet layer's settings,
//! deserialised here directly.

use std::path::PathBuf;

use serde::Deserialize;

use crate::health::report::HealthPolicy;

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FleetConfig {
    /// `[fleet.health]`: when an agent is healthy, when a wait is too long.
    pub health: HealthPolicy,
    /// `[fleet.inbox]`: where new waiting tasks are announced.
    pub inbox: InboxConfig,
    /// `[fleet.router]`: the routing agent.
    pub router: RouterConfig,
    /// `[fleet.ceremonies]`: scheduled invocations.
    pub ceremonies: CeremoniesConfig,
}

/// `[fleet.router]`: the routing agent, served at `/agents/{name}/` unless the
/// `[[agents]]` define one (`kind = "router"`) themselves.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RouterConfig {
    /// Serve the routing agent.
    pub enabled: bool,
    /// The name it is served under.
    pub name: String,
    /// How many times a routed task that failed or was rejected is sent on to another
    /// agent with the skill (seed I6's bounded execution: at most `1 + max_reroutes`
    /// attempts).
    pub max_reroutes: u32,
}

impl Default for RouterConfig {
    fn default() -> RouterConfig {
        RouterConfig {
            enabled: true,
            name: "fleet".into(),
            max_reroutes: 2,
        }
    }
}

/// `[fleet.ceremonies]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct CeremoniesConfig {
    /// Whether gateways fire ceremonies (the API answers either way): off, e.g., for a
    /// deployment whose ceremonies another one fires from the same store.
    pub enabled: bool,
    /// The directory of ceremony files (`*.yaml`, one ceremony each), read again within
    /// a few seconds of a change; none without it (the API's ceremonies still run).
    pub dir: Option<PathBuf>,
    /// How late a firing may still be fired (a process down at its time, catching up);
    /// later, it is recorded as missed.
    pub catch_up_grace_secs: u64,
    /// Signs the run notices posted to a ceremony's `notifyChannel`; the inbox's
    /// `webhook_secret` when unset (and unsigned when neither is set).
    pub webhook_secret: Option<String>,
    /// Sent as `Authorization: Bearer <token>` with each run notice.
    pub webhook_token: Option<String>,
}

impl Default for CeremoniesConfig {
    fn default() -> CeremoniesConfig {
        CeremoniesConfig {
            enabled: true,
            dir: None,
            catch_up_grace_secs: 300,
            webhook_secret: None,
            webhook_token: None,
        }
    }
}

impl CeremoniesConfig {
    /// The key that signs run notices: this section's, else the inbox's.
    pub fn signing_secret<'a>(&'a self, inbox: &'a InboxConfig) -> Option<&'a str> {
        self.webhook_secret
            .as_deref()
            .or(inbox.webhook_secret.as_deref())
    }
}

/// `[fleet.inbox]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct InboxConfig {
    /// Each task that starts waiting for a person is announced here (a JSON `POST`,
    /// signed like every webhook); none without it.
    pub webhook_url: Option<String>,
    /// The key that signs the announcements: `whsec_<base64>` or at least 16 characters
    /// of text. Required with `webhook_url`.
    pub webhook_secret: Option<String>,
    /// Sent as `Authorization: Bearer <token>`, for receivers that check one.
    pub webhook_token: Option<String>,
}

impl FleetConfig {
    /// What the types cannot say.
    pub fn validate(&self) -> Result<(), String> {
        let rate = self.health.min_success_rate;
        if !(0.0..=1.0).contains(&rate) {
            return Err(format!(
                "fleet.health.min_success_rate must be between 0 and 1, not {rate}"
            ));
        }
        if self.health.waiting_alert_secs == 0 {
            return Err("fleet.health.waiting_alert_secs must be positive".into());
        }
        if self.ceremonies.catch_up_grace_secs == 0 {
            return Err("fleet.ceremonies.catch_up_grace_secs must be positive: a firing is dealt with up to a second late".into());
        }
        if let Some(secret) = &self.ceremonies.webhook_secret {
            signing_key("fleet.ceremonies.webhook_secret", secret)?;
        }
        let inbox = &self.inbox;
        if let Some(url) = &inbox.webhook_url {
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| format!("fleet.inbox.webhook_url {url:?} is not a URL: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!(
                    "fleet.inbox.webhook_url must be http or https, not {url:?}"
                ));
            }
            let Some(secret) = &inbox.webhook_secret else {
                return Err("fleet.inbox.webhook_url needs fleet.inbox.webhook_secret: every webhook is signed".into());
            };
            signing_key("fleet.inbox.webhook_secret", secret)?;
        }
        Ok(())
    }
}

/// A webhook signing secret, checked: `whsec_<base64>` or 16+ characters of text.
fn signing_key(field: &str, secret: &str) -> Result<(), String> {
    let key = sb_webhooks::signing::parse_secret(secret).map_err(|e| format!("{field}: {e}"))?;
    if key.len() < 16 {
        return Err(format!("{field} needs at least 16 bytes of key"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inbox(url: Option<&str>, secret: Option<&str>) -> FleetConfig {
        FleetConfig {
            inbox: InboxConfig {
                webhook_url: url.map(str::to_owned),
                webhook_secret: secret.map(str::to_owned),
                webhook_token: None,
            },
            ..FleetConfig::default()
        }
    }

    #[test]
    fn an_inbox_webhook_must_be_signed_and_http() {
        let secret = Some("a-secret-of-at-least-16");
        assert_eq!(
            inbox(Some("https://hooks.example/x"), secret).validate(),
            Ok(())
        );
        let unsigned = inbox(Some("https://hooks.example/x"), None).validate();
        assert!(unsigned.unwrap_err().contains("webhook_secret"));
        let short = inbox(Some("https://hooks.example/x"), Some("short")).validate();
        assert!(short.unwrap_err().contains("at least 16"));
        let ftp = inbox(Some("ftp://hooks.example/x"), secret).validate();
        assert!(ftp.unwrap_err().contains("http or https"));
        assert!(inbox(Some("not a url"), secret).validate().is_err());
        assert_eq!(
            inbox(None, None).validate(),
            Ok(()),
            "no webhook, nothing to check"
        );
    }

    #[test]
    fn ceremonies_need_a_grace_and_a_real_signing_key() {
        let mut config = FleetConfig::default();
        assert!(config.ceremonies.enabled);
        assert_eq!(config.ceremonies.catch_up_grace_secs, 300);
        config.ceremonies.catch_up_grace_secs = 0;
        assert!(
            config
                .validate()
                .unwrap_err()
                .contains("catch_up_grace_secs")
        );
        config.ceremonies.catch_up_grace_secs = 60;
        config.ceremonies.webhook_secret = Some("short".into());
        let short = config.validate().unwrap_err();
        assert!(short.contains("fleet.ceremonies.webhook_secret"), "{short}");
        config.ceremonies.webhook_secret = None;
        config.inbox.webhook_secret = Some("the-inbox-secret-0123".into());
        assert_eq!(
            config.ceremonies.signing_secret(&config.inbox),
            Some("the-inbox-secret-0123"),
            "the inbox's secret signs run notices when the section has none"
        );
    }

    #[test]
    fn a_success_rate_past_one_is_refused() {
        let mut config = FleetConfig::default();
        config.health.min_success_rate = 1.5;
        assert!(config.validate().unwrap_err().contains("min_success_rate"));
    }
}
