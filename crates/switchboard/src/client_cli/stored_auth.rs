//! The stored token as a call's bearer (spec §12.2): attached when the caller gave no
//! credential of their own and the agent's card declares an OAuth 2 or OpenID Connect
//! scheme; renewed when expired — with its refresh token, else, for a token of the
//! client-credentials flow, with the client secret from the environment or a `.env` file
//! (`A2ACLI_CLIENT_SECRET`, never stored with the token) — and stored again.

use std::time::Duration;

use sb_client::oauth::{Endpoints, Grant, OAuthClient, OAuthError};
use sb_protocol::card::AgentCard;

use super::config_files;
use super::error::CliError;
use super::token_store::{self, StoredToken};

/// The variable holding the client secret (also `--client-secret` of `auth login`).
pub(crate) const CLIENT_SECRET: &str = "A2ACLI_CLIENT_SECRET";

pub(crate) const CLIENT_CREDENTIALS: &str = "client_credentials";
pub(crate) const DEVICE_CODE: &str = "device_code";

/// How long one token request may take.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The HTTP client of token requests: no redirects (a redirected token request could
/// carry the client secret elsewhere), bounded in time.
pub(crate) fn oauth_http(insecure: bool) -> Result<reqwest::Client, CliError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .timeout(TOKEN_TIMEOUT)
        .danger_accept_invalid_certs(insecure)
        .build()
        .map_err(|e| CliError::internal(format!("cannot build the HTTP client: {e}")))
}

/// The stored token to send to the agent whose card is at `card_url`, renewed if it
/// expired; none when nothing is stored or the card declares no scheme it is for.
pub(crate) async fn bearer_for(
    card_url: &str,
    card: &AgentCard,
    insecure: bool,
) -> Result<Option<String>, CliError> {
    if !Endpoints::from_card(card).any() {
        return Ok(None);
    }
    let Some(stored) = token_store::load(card_url)? else {
        return Ok(None);
    };
    if !stored.is_expired(token_store::now()) {
        return Ok(Some(stored.access_token));
    }
    tracing::debug!(agent = %card_url, "the stored token expired: renewing it");
    let renewed = renew(&stored, &oauth_http(insecure)?).await?;
    token_store::save(&renewed)?;
    Ok(Some(renewed.access_token))
}

async fn renew(stored: &StoredToken, http: &reqwest::Client) -> Result<StoredToken, CliError> {
    let secret = config_files::lookup(CLIENT_SECRET).filter(|s| !s.is_empty());
    let confidential = stored.flow == CLIENT_CREDENTIALS;
    let client = OAuthClient {
        client_id: stored.client_id.clone(),
        // A public (device) client sends no secret.
        client_secret: secret.clone().filter(|_| confidential),
        token_url: stored.token_url.clone(),
        device_authorization_url: None,
        scopes: stored.scopes.clone(),
        extra_params: stored.extra_params.clone(),
    };
    let mut failure = None;
    if let Some(refresh) = &stored.refresh_token {
        match client.refresh(http, refresh).await {
            Ok(grant) => return Ok(updated(stored, grant)),
            Err(e) => failure = Some(e),
        }
    }
    if confidential && secret.is_some() {
        match client.client_credentials(http).await {
            Ok(grant) => return Ok(updated(stored, grant)),
            Err(e) => failure = Some(e),
        }
    }
    let reason = match failure {
        Some(error) => format!("; renewing it failed: {error}"),
        None if confidential => format!(" and {CLIENT_SECRET} is not set to get another"),
        None => " and there is no refresh token".to_owned(),
    };
    Err(expired_error(&stored.agent, &reason))
}

fn expired_error(agent: &str, reason: &str) -> CliError {
    CliError::auth(
        format!("the stored token for {agent} expired{reason}"),
        true,
    )
    .with_hint(format!("run `switchboard auth login {agent}` again"))
}

/// The stored token with a new grant.
pub(crate) fn updated(stored: &StoredToken, grant: Grant) -> StoredToken {
    StoredToken {
        access_token: grant.access_token,
        refresh_token: grant.refresh_token.or_else(|| stored.refresh_token.clone()),
        expires_at: expires_at(grant.expires_in),
        scopes: match grant.scopes.is_empty() {
            true => stored.scopes.clone(),
            false => grant.scopes,
        },
        ..stored.clone()
    }
}

pub(crate) fn expires_at(expires_in: Option<Duration>) -> Option<i64> {
    expires_in.map(|d| token_store::now() + i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2))
}

/// An OAuth failure as the CLI reports it: unreachable (3), refused or denied (4).
pub(crate) fn oauth_error(error: OAuthError) -> CliError {
    match error {
        OAuthError::Unreachable(_) => CliError::unreachable(error.to_string()).with_hint(
            "check the token URL (the card's, or --token-url / --device-authorization-url)",
        ),
        OAuthError::Denied => CliError::auth(error.to_string(), true)
            .with_hint("the request was declined at the verification page; run `auth login` again to retry"),
        OAuthError::Expired => CliError::auth(error.to_string(), true)
            .with_hint("approve the code sooner: run `auth login` again for a new one"),
        OAuthError::Refused(_) => CliError::auth(error.to_string(), true).with_hint(
            "check --client-id and --client-secret (A2ACLI_CLIENT_ID, A2ACLI_CLIENT_SECRET) and the scopes",
        ),
        OAuthError::Invalid(_) => CliError::usage(error.to_string()),
    }
}
