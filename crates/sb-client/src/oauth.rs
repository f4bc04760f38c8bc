//! Getting a bearer token from an agent's authorization server (OAuth 2.1): where its
//! card says tokens come from ([`Endpoints::from_card`], or an OpenID Connect discovery
//! document, [`Endpoints::discover_openid`]), then the client-credentials flow, the
//! device-code flow (RFC 8628) and refreshing. The protocol work is the `oauth2` crate's:
//! it polls the device flow as RFC 8628 says (`interval`, `slow_down`,
//! `authorization_pending`, `expires_in`).
//!
//! The HTTP client given should not follow redirects: a token endpoint that redirects
//! could send the client's secret elsewhere.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use oauth2::basic::BasicClient;
use oauth2::{
    AsyncHttpClient, ClientId, ClientSecret, DeviceAuthorizationUrl, DeviceCodeErrorResponseType,
    ErrorResponse, RefreshToken, RequestTokenError, Scope, StandardDeviceAuthorizationResponse,
    TokenResponse, TokenUrl,
};
use sb_protocol::card::{AgentCard, SecurityScheme};
use serde_json::Value;

/// Consecutive connection failures while polling the device flow's token endpoint
/// after which the wait ends.
const UNREACHABLE_POLLS: u32 = 3;

/// Where tokens come from for one agent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Endpoints {
    /// The device-code flow's token endpoint.
    pub device_token_url: Option<String>,
    /// The client-credentials flow's token endpoint.
    pub client_token_url: Option<String>,
    pub device_authorization_url: Option<String>,
    /// Scopes the card's flows name (asked for when the caller names none).
    pub scopes: Vec<String>,
    /// An OpenID Connect discovery URL, when the card names one and no OAuth 2 flow.
    pub openid_configuration: Option<String>,
}

impl Endpoints {
    /// What the card's OAuth 2 schemes say: the device-code and client-credentials flows'
    /// endpoints (one scheme may give one, another the other), and the first OpenID
    /// Connect scheme's discovery URL.
    pub fn from_card(card: &AgentCard) -> Endpoints {
        let mut found = Endpoints::default();
        for scheme in card.security_schemes.values() {
            match scheme {
                SecurityScheme::Oauth2SecurityScheme { flows, .. } => {
                    let flows = [
                        (&flows.device_code, &mut found.device_token_url),
                        (&flows.client_credentials, &mut found.client_token_url),
                    ];
                    for (flow, token_url) in flows {
                        let Some(flow) = flow else { continue };
                        if token_url.is_none() {
                            token_url.clone_from(&flow.token_url);
                        }
                        if found.device_authorization_url.is_none() {
                            found
                                .device_authorization_url
                                .clone_from(&flow.device_authorization_url);
                        }
                        for scope in flow.scopes.keys() {
                            if !found.scopes.contains(scope) {
                                found.scopes.push(scope.clone());
                            }
                        }
                    }
                }
                SecurityScheme::OpenIdConnectSecurityScheme {
                    open_id_connect_url,
                    ..
                } if found.openid_configuration.is_none() => {
                    found.openid_configuration = Some(open_id_connect_url.clone());
                }
                _ => {}
            }
        }
        found
    }

    /// Whether the card declares a scheme whose tokens come from an authorization
    /// server (a stored token is sent to such an agent only).
    pub fn any(&self) -> bool {
        self.device_token_url.is_some()
            || self.client_token_url.is_some()
            || self.openid_configuration.is_some()
    }

    /// The token endpoint of a flow: its own, else the other flow's (one server).
    pub fn token_url(&self, device: bool) -> Option<&str> {
        let (own, other) = match device {
            true => (&self.device_token_url, &self.client_token_url),
            false => (&self.client_token_url, &self.device_token_url),
        };
        own.as_deref().or(other.as_deref())
    }

    /// Fills the endpoints still missing from the OpenID Connect discovery document.
    pub async fn discover_openid(&mut self, http: &reqwest::Client) -> Result<(), OAuthError> {
        let Some(url) = self.openid_configuration.clone() else {
            return Ok(());
        };
        let unreachable = |e: reqwest::Error| OAuthError::Unreachable(format!("{url}: {e}"));
        let response = http.get(&url).send().await.map_err(unreachable)?;
        if !response.status().is_success() {
            return Err(OAuthError::Unreachable(format!(
                "{url}: HTTP {}",
                response.status()
            )));
        }
        let document: Value = response.json().await.map_err(unreachable)?;
        let member = |name: &str| {
            document
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        if self.device_token_url.is_none() && self.client_token_url.is_none() {
            self.client_token_url = member("token_endpoint");
        }
        if self.device_authorization_url.is_none() {
            self.device_authorization_url = member("device_authorization_endpoint");
        }
        Ok(())
    }
}

/// A token granted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: Option<Duration>,
    pub scopes: Vec<String>,
}

/// What the person at the terminal is asked to do (RFC 8628 §3.2).
#[derive(Debug)]
pub struct DeviceStart {
    pub verification_uri: String,
    pub verification_uri_complete: Option<String>,
    pub user_code: String,
    pub expires_in: Duration,
    response: StandardDeviceAuthorizationResponse,
}

/// Why no token was had.
#[derive(Clone, Debug, thiserror::Error)]
pub enum OAuthError {
    /// The authorization server could not be reached.
    #[error("cannot reach the authorization server: {0}")]
    Unreachable(String),
    /// The person declined (RFC 8628 `access_denied`).
    #[error("the authorization was denied")]
    Denied,
    /// The device code expired before the person approved it.
    #[error("the device code expired before it was approved")]
    Expired,
    /// The server refused the request (`invalid_client`, `invalid_grant`, …).
    #[error("the authorization server refused: {0}")]
    Refused(String),
    /// Something is missing or unreadable (no token URL, a non-OAuth answer).
    #[error("{0}")]
    Invalid(String),
}

/// A client of one authorization server.
#[derive(Clone, Debug)]
pub struct OAuthClient {
    pub client_id: String,
    pub client_secret: Option<String>,
    pub token_url: String,
    pub device_authorization_url: Option<String>,
    pub scopes: Vec<String>,
    /// Sent with every token request: `resource` (RFC 8707), `audience`.
    pub extra_params: Vec<(String, String)>,
}

impl OAuthClient {
    fn basic(&self) -> Result<BasicClient<oauth2::EndpointNotSet>, OAuthError> {
        let mut client = BasicClient::new(ClientId::new(self.client_id.clone()));
        if let Some(secret) = &self.client_secret {
            client = client.set_client_secret(ClientSecret::new(secret.clone()));
        }
        Ok(client)
    }

    fn token_url(&self) -> Result<TokenUrl, OAuthError> {
        TokenUrl::new(self.token_url.clone())
            .map_err(|e| OAuthError::Invalid(format!("token URL {:?}: {e}", self.token_url)))
    }

    fn scopes(&self) -> Vec<Scope> {
        self.scopes.iter().cloned().map(Scope::new).collect()
    }

    /// The client-credentials flow (RFC 6749 §4.4): needs a secret.
    pub async fn client_credentials(&self, http: &reqwest::Client) -> Result<Grant, OAuthError> {
        if self.client_secret.is_none() {
            return Err(OAuthError::Invalid(
                "the client-credentials flow needs a client secret".into(),
            ));
        }
        let client = self.basic()?.set_token_uri(self.token_url()?);
        let mut request = client
            .exchange_client_credentials()
            .add_scopes(self.scopes());
        for (name, value) in &self.extra_params {
            request = request.add_extra_param(name.clone(), value.clone());
        }
        request
            .request_async(http)
            .await
            .map(grant)
            .map_err(failure)
    }

    /// Starts the device-code flow (RFC 8628 §3.1): what to show the person.
    pub async fn device_start(&self, http: &reqwest::Client) -> Result<DeviceStart, OAuthError> {
        let Some(url) = &self.device_authorization_url else {
            return Err(OAuthError::Invalid(
                "no device authorization URL: the card declares no device-code flow".into(),
            ));
        };
        let url = DeviceAuthorizationUrl::new(url.clone())
            .map_err(|e| OAuthError::Invalid(format!("device authorization URL {url:?}: {e}")))?;
        let client = self.basic()?.set_device_authorization_url(url);
        let mut request = client.exchange_device_code().add_scopes(self.scopes());
        for (name, value) in &self.extra_params {
            request = request.add_extra_param(name.clone(), value.clone());
        }
        let response: StandardDeviceAuthorizationResponse =
            request.request_async(http).await.map_err(failure)?;
        Ok(DeviceStart {
            verification_uri: response.verification_uri().to_string(),
            verification_uri_complete: response
                .verification_uri_complete()
                .map(|u| u.secret().clone()),
            user_code: response.user_code().secret().clone(),
            expires_in: response.expires_in(),
            response,
        })
    }

    /// Polls the token endpoint until the person approves, declines, or the code
    /// expires (or `timeout`, when shorter, passes).
    pub async fn device_finish(
        &self,
        http: &reqwest::Client,
        started: &DeviceStart,
        timeout: Option<Duration>,
    ) -> Result<Grant, OAuthError> {
        let client = self.basic()?.set_token_uri(self.token_url()?);
        let mut request = client.exchange_device_access_token(&started.response);
        for (name, value) in &self.extra_params {
            request = request.add_extra_param(name.clone(), value.clone());
        }
        // The crate keeps polling through connection failures until the code expires
        // (minutes); a token endpoint that stays down ends the wait sooner.
        let failures = AtomicU32::new(0);
        let counting = |request: oauth2::HttpRequest| {
            let call = http.call(request);
            let failures = &failures;
            async move {
                let result = call.await;
                match result.is_ok() {
                    true => failures.store(0, Ordering::Relaxed),
                    false => _ = failures.fetch_add(1, Ordering::Relaxed),
                }
                result
            }
        };
        let down = async {
            while failures.load(Ordering::Relaxed) < UNREACHABLE_POLLS {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };
        let polled = tokio::select! {
            polled = request.request_async(&counting, tokio::time::sleep, timeout) => polled,
            () = down => {
                return Err(OAuthError::Unreachable(format!(
                    "the token endpoint {} failed {UNREACHABLE_POLLS} times in a row",
                    self.token_url
                )));
            }
        };
        match polled {
            Ok(token) => Ok(grant(token)),
            Err(RequestTokenError::ServerResponse(e)) => Err(match e.error() {
                DeviceCodeErrorResponseType::AccessDenied => OAuthError::Denied,
                DeviceCodeErrorResponseType::ExpiredToken => OAuthError::Expired,
                _ => OAuthError::Refused(described(&e)),
            }),
            Err(other) => Err(failure(other)),
        }
    }

    /// A new token for a refresh token (RFC 6749 §6).
    pub async fn refresh(
        &self,
        http: &reqwest::Client,
        refresh_token: &str,
    ) -> Result<Grant, OAuthError> {
        let client = self.basic()?.set_token_uri(self.token_url()?);
        let refresh = RefreshToken::new(refresh_token.to_owned());
        let mut request = client.exchange_refresh_token(&refresh);
        for (name, value) in &self.extra_params {
            request = request.add_extra_param(name.clone(), value.clone());
        }
        let mut granted = request
            .request_async(http)
            .await
            .map(grant)
            .map_err(failure)?;
        // A server may keep the refresh token and not send it again (RFC 6749 §6).
        if granted.refresh_token.is_none() {
            granted.refresh_token = Some(refresh_token.to_owned());
        }
        Ok(granted)
    }
}

fn grant(token: impl TokenResponse) -> Grant {
    Grant {
        access_token: token.access_token().secret().clone(),
        refresh_token: token.refresh_token().map(|t| t.secret().clone()),
        expires_in: token.expires_in(),
        scopes: token
            .scopes()
            .map(|s| s.iter().map(|s| s.to_string()).collect())
            .unwrap_or_default(),
    }
}

fn described<T: ErrorResponse + std::fmt::Display>(error: &T) -> String {
    error.to_string()
}

/// The crate's error, as one of ours; never carries a token (the crate's errors hold
/// the server's error response or the HTTP failure, not the request).
fn failure<RE, T>(error: RequestTokenError<RE, T>) -> OAuthError
where
    RE: std::error::Error + 'static,
    T: ErrorResponse + std::fmt::Display + 'static,
{
    match error {
        RequestTokenError::ServerResponse(e) => OAuthError::Refused(described(&e)),
        RequestTokenError::Request(e) => OAuthError::Unreachable(chain(&e)),
        RequestTokenError::Parse(e, _body) => {
            OAuthError::Invalid(format!("the token endpoint's answer is not OAuth: {e}"))
        }
        RequestTokenError::Other(message) => OAuthError::Invalid(message),
    }
}

/// An error and its causes on one line (reqwest hides the reason in its source).
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn each_flow_keeps_its_own_token_endpoint() {
        let card: AgentCard = serde_json::from_value(serde_json::json!({
            "name": "a", "description": "d", "version": "1", "capabilities": {},
            "supportedInterfaces": [], "defaultInputModes": [], "defaultOutputModes": [],
            "skills": [],
            "securitySchemes": {
                "machines": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {
                    "tokenUrl": "https://m/token", "scopes": {"a2a": "call"}}}}},
                "people": {"oauth2SecurityScheme": {"flows": {"deviceCode": {
                    "deviceAuthorizationUrl": "https://p/device", "tokenUrl": "https://p/token",
                    "scopes": {"a2a": "call", "read": "read"}}}}}
            }
        }))
        .unwrap();
        let found = Endpoints::from_card(&card);
        assert_eq!(found.token_url(false), Some("https://m/token"));
        assert_eq!(found.token_url(true), Some("https://p/token"));
        assert_eq!(
            found.device_authorization_url.as_deref(),
            Some("https://p/device")
        );
        assert_eq!(found.scopes, ["a2a", "read"]);
        assert!(found.any());
        let only_machines = Endpoints {
            device_token_url: None,
            ..found
        };
        assert_eq!(only_machines.token_url(true), Some("https://m/token"));
    }
}
