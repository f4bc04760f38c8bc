//! `auth login | status | logout` (spec §12.2): a token from the agent's authorization
//! server — the client-credentials flow when a client secret is given, else the device
//! code flow (RFC 8628: the person opens the verification URI, enters the code, and this
//! command polls until they approve) — stored for later calls (`token_store`), which
//! attach it themselves (`stored_auth`). Endpoints come from the card's OAuth 2 (or
//! OpenID Connect) scheme unless flags name them. A token is never printed.

use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use sb_client::oauth::{Endpoints, OAuthClient};
use serde_json::json;

use super::agent;
use super::error::CliError;
use super::opts::{CardOpts, Format, FormatOpts, parse_duration};
use super::output::Out;
use super::stored_auth::{self, CLIENT_CREDENTIALS, DEVICE_CODE};
use super::token_store::{self, StoredToken};

#[derive(Debug, Subcommand)]
pub(crate) enum AuthCommand {
    /// Get a token (device code, or client credentials with a secret) and store it.
    Login(LoginArgs),
    /// Which agents have a stored token, its expiry and scopes (never the token).
    Status(StatusArgs),
    /// Forget an agent's stored token (`--all`: every one).
    Logout(LogoutArgs),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Flow {
    /// RFC 8628: a person approves the login in a browser, on any device.
    Device,
    /// RFC 6749 §4.4: the client's own id and secret, unattended.
    ClientCredentials,
}

#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// The agent (unless -a names it).
    #[arg(value_name = "AGENT")]
    pub agent_ref: Option<String>,
    /// Default: client-credentials when a client secret is given, else device.
    #[arg(long, value_enum)]
    pub flow: Option<Flow>,
    /// The OAuth client id.
    #[arg(long, env = "A2ACLI_CLIENT_ID", default_value = "a2a-cli")]
    pub client_id: String,
    /// The client secret (client credentials). Prefer the environment or a .env file: a
    /// flag shows in the process table and the shell history.
    #[arg(long, env = "A2ACLI_CLIENT_SECRET", hide_env_values = true)]
    pub client_secret: Option<String>,
    /// The token endpoint (default: the card's OAuth 2 scheme's).
    #[arg(long, env = "A2ACLI_TOKEN_URL")]
    pub token_url: Option<String>,
    /// The device authorization endpoint (default: the card's device-code flow's).
    #[arg(long, env = "A2ACLI_DEVICE_AUTHORIZATION_URL")]
    pub device_authorization_url: Option<String>,
    /// A scope to ask for (repeatable; default: the scopes the card's flows list).
    #[arg(long = "scope", env = "A2ACLI_SCOPE", value_delimiter = ' ')]
    pub scopes: Vec<String>,
    /// The resource the token is for (RFC 8707 `resource`).
    #[arg(long, env = "A2ACLI_RESOURCE")]
    pub resource: Option<String>,
    /// The audience the token is for (`audience`, as some servers name it).
    #[arg(long, env = "A2ACLI_AUDIENCE")]
    pub audience: Option<String>,
    /// Give up waiting for the device code's approval after this long (default: when
    /// the code expires).
    #[arg(long, value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    #[command(flatten)]
    pub agent: CardOpts,
    #[command(flatten)]
    pub output: FormatOpts,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    pub output: FormatOpts,
}

#[derive(Debug, Args)]
pub(crate) struct LogoutArgs {
    /// The agent (unless -a names it).
    #[arg(value_name = "AGENT")]
    pub agent_ref: Option<String>,
    /// Forget every stored token.
    #[arg(long, conflicts_with = "agent_ref")]
    pub all: bool,
    #[command(flatten)]
    pub agent: CardOpts,
    #[command(flatten)]
    pub output: FormatOpts,
}

impl AuthCommand {
    pub(crate) fn settings(&self) -> (Format, bool) {
        match self {
            AuthCommand::Login(args) => (args.output.format(), args.agent.debug),
            AuthCommand::Status(args) => (args.output.format(), false),
            AuthCommand::Logout(args) => (args.output.format(), args.agent.debug),
        }
    }
}

pub(crate) async fn run(command: AuthCommand) -> Result<u8, CliError> {
    match command {
        AuthCommand::Login(args) => login(args).await,
        AuthCommand::Status(args) => status(&args),
        AuthCommand::Logout(args) => logout(args).await,
    }
}

async fn login(args: LoginArgs) -> Result<u8, CliError> {
    let reference = args
        .agent
        .reference(args.agent_ref.as_ref(), "`auth login AGENT`")?;
    let found = agent::card(&agent::http_client(&args.agent)?, &reference).await?;
    let http = stored_auth::oauth_http(args.agent.insecure)?;
    let mut endpoints = Endpoints::from_card(&found.card);
    if args.token_url.is_none() || args.device_authorization_url.is_none() {
        endpoints
            .discover_openid(&http)
            .await
            .map_err(stored_auth::oauth_error)?;
    }
    let secret = args.client_secret.clone().filter(|s| !s.is_empty());
    let flow = args.flow.unwrap_or(match secret {
        Some(_) => Flow::ClientCredentials,
        None => Flow::Device,
    });
    let card_token_url = endpoints.token_url(flow == Flow::Device).map(str::to_owned);
    let Some(token_url) = args.token_url.clone().or(card_token_url) else {
        return Err(CliError::usage(format!(
            "the card at {} names no token endpoint (no OAuth 2 or OpenID Connect scheme)",
            found.url
        ))
        .with_hint(
            "give it with --token-url (and --device-authorization-url for the device flow)",
        ));
    };
    let mut extra_params = Vec::new();
    if let Some(resource) = &args.resource {
        extra_params.push(("resource".to_owned(), resource.clone()));
    }
    if let Some(audience) = &args.audience {
        extra_params.push(("audience".to_owned(), audience.clone()));
    }
    let client = OAuthClient {
        client_id: args.client_id.clone(),
        client_secret: secret.filter(|_| flow == Flow::ClientCredentials),
        token_url: token_url.clone(),
        device_authorization_url: args
            .device_authorization_url
            .clone()
            .or(endpoints.device_authorization_url),
        scopes: match args.scopes.is_empty() {
            true => endpoints.scopes,
            false => args.scopes.clone(),
        },
        extra_params: extra_params.clone(),
    };
    let grant = match flow {
        Flow::ClientCredentials => {
            if client.client_secret.is_none() {
                return Err(CliError::usage("the client-credentials flow needs a client secret")
                    .with_hint("set A2ACLI_CLIENT_SECRET (environment or .env file) or pass --client-secret"));
            }
            client.client_credentials(&http).await
        }
        Flow::Device => device(&client, &http, args.timeout).await?,
    }
    .map_err(stored_auth::oauth_error)?;
    let stored = StoredToken {
        agent: found.url.clone(),
        flow: match flow {
            Flow::ClientCredentials => CLIENT_CREDENTIALS,
            Flow::Device => DEVICE_CODE,
        }
        .to_owned(),
        token_url,
        client_id: args.client_id,
        access_token: grant.access_token,
        refresh_token: grant.refresh_token,
        expires_at: stored_auth::expires_at(grant.expires_in),
        scopes: match grant.scopes.is_empty() {
            true => client.scopes,
            false => grant.scopes,
        },
        extra_params,
    };
    let file = token_store::save(&stored)?;
    let out = Out::plain(&args.output, false);
    let report = json!({
        "agent": stored.agent, "flow": stored.flow, "expiresAt": expiry(stored.expires_at),
        "scopes": stored.scopes, "refreshable": stored.refresh_token.is_some(),
        "tokenFile": file.display().to_string(),
    });
    match out.is_json() {
        true => out.json(&report)?,
        false => out.write(&format!(
            "Logged in: {}\nFlow: {}\nExpires: {}\nScopes: {}\nToken file: {}\n",
            stored.agent,
            stored.flow,
            expiry(stored.expires_at).unwrap_or_else(|| "not said".into()),
            stored.scopes.join(" "),
            file.display()
        ))?,
    }
    Ok(0)
}

/// RFC 8628: shows the person where to go and the code (stderr: stdout stays the
/// result), then polls until they approve.
async fn device(
    client: &OAuthClient,
    http: &reqwest::Client,
    timeout: Option<Duration>,
) -> Result<Result<sb_client::oauth::Grant, sb_client::oauth::OAuthError>, CliError> {
    let started = client
        .device_start(http)
        .await
        .map_err(stored_auth::oauth_error)?;
    eprintln!("To sign in, open {}", started.verification_uri);
    eprintln!("and enter the code: {}", started.user_code);
    if let Some(complete) = &started.verification_uri_complete {
        eprintln!("(or open {complete} , which carries the code)");
    }
    eprintln!(
        "Waiting for approval (the code expires in {}s)…",
        started.expires_in.as_secs()
    );
    Ok(client.device_finish(http, &started, timeout).await)
}

/// RFC 3339, for people and programs alike.
fn expiry(expires_at: Option<i64>) -> Option<String> {
    let at = chrono::DateTime::from_timestamp(expires_at?, 0)?;
    Some(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

fn status(args: &StatusArgs) -> Result<u8, CliError> {
    let now = token_store::now();
    let tokens = token_store::list()?;
    let out = Out::plain(&args.output, false);
    let rows: Vec<_> = tokens
        .iter()
        .map(|(file, t)| {
            json!({
                "agent": t.agent, "flow": t.flow, "expiresAt": expiry(t.expires_at),
                "expired": t.expires_at.is_some_and(|at| at <= now),
                "scopes": t.scopes, "refreshable": t.refresh_token.is_some(),
                "tokenFile": file.display().to_string(),
            })
        })
        .collect();
    if out.is_json() {
        out.json(&json!({ "tokens": rows }))?;
        return Ok(0);
    }
    if tokens.is_empty() {
        out.write("No stored tokens (`switchboard auth login AGENT` gets one).\n")?;
        return Ok(0);
    }
    let mut text = String::new();
    for (file, token) in &tokens {
        let state = match token.expires_at {
            Some(at) if at <= now => "expired",
            _ => "valid",
        };
        text.push_str(&format!(
            "Agent: {}\nFlow: {}\nExpires: {} ({state})\nScopes: {}\nRefreshable: {}\nToken file: {}\n\n",
            token.agent,
            token.flow,
            expiry(token.expires_at).unwrap_or_else(|| "not said".into()),
            token.scopes.join(" "),
            if token.refresh_token.is_some() { "yes" } else { "no" },
            file.display()
        ));
    }
    out.write(text.trim_end_matches('\n'))?;
    out.write("\n")?;
    Ok(0)
}

async fn logout(args: LogoutArgs) -> Result<u8, CliError> {
    let out = Out::plain(&args.output, false);
    let agents: Vec<String> = match args.all {
        true => token_store::list()?
            .into_iter()
            .map(|(_, t)| t.agent)
            .collect(),
        false => {
            let reference = args
                .agent
                .reference(args.agent_ref.as_ref(), "`auth logout AGENT`")?;
            vec![card_url(&reference, &args.agent).await?]
        }
    };
    let mut removed = Vec::new();
    for agent in &agents {
        if let Some(file) = token_store::remove(agent)? {
            removed.push(json!({"agent": agent, "tokenFile": file.display().to_string()}));
        }
    }
    match out.is_json() {
        true => out.json(&json!({ "removed": removed }))?,
        false if removed.is_empty() => out.write("No stored token to remove.\n")?,
        false => {
            for entry in &removed {
                out.write(&format!(
                    "Logged out: {}\n",
                    entry["agent"].as_str().unwrap_or("")
                ))?;
            }
        }
    }
    Ok(0)
}

/// The card URL a reference resolves to (the token's key). A stored agent's own URL is
/// taken as it is, so a token can be removed while its agent is down.
async fn card_url(reference: &str, opts: &CardOpts) -> Result<String, CliError> {
    if let Ok(tokens) = token_store::list()
        && let Some((_, token)) = tokens.into_iter().find(|(_, t)| t.agent == reference)
    {
        return Ok(token.agent);
    }
    Ok(agent::card(&agent::http_client(opts)?, reference)
        .await?
        .url)
}
