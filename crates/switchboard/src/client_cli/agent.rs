//! From an agent reference to a connected transport (spec §10.1, §13): the card read
//! from a URL or a file, checked, an interface chosen (the caller's `--transport` order,
//! then the card's own), credentials placed as the card's security schemes say.

use std::sync::Arc;
use std::time::Duration;

use sb_client::interface::{Binding, Chosen, Preferences};
use sb_client::{Credentials, Discovered, Transport};
use sb_protocol::card::AgentCard;

use super::error::CliError;
use super::opts::{AgentOpts, CardOpts};

/// How long to wait for a connection to open (the calls themselves may take as long as
/// the agent needs: a blocking send waits for the task).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An agent ready to be called.
#[derive(Debug)]
pub(crate) struct Agent {
    /// The reference as the caller gave it (for the resume command printed back).
    pub reference: String,
    pub card: AgentCard,
    pub chosen: Chosen,
    pub transport: Arc<dyn Transport>,
    pub had_credentials: bool,
    /// The bearer is the token `auth login` stored.
    pub stored_token: bool,
}

impl Agent {
    /// The task's events can be streamed (the card says so).
    pub(crate) fn streams(&self) -> bool {
        self.card.capabilities.streaming == Some(true)
    }

    /// The server resumes a stream after `Last-Event-ID` (Switchboard's extension).
    pub(crate) fn resumes(&self) -> bool {
        self.card
            .capabilities
            .extensions
            .iter()
            .any(|e| e.uri == sb_protocol::card::RESUME_EXTENSION)
    }

    pub(crate) fn call_error(&self, error: sb_client::CallError) -> CliError {
        let error = CliError::from_call(error, self.had_credentials);
        match self.stored_token && error.exit == super::error::exit::AUTH {
            true => error.with_hint(format!(
                "the stored token was refused: run `switchboard auth login {}` again",
                self.reference
            )),
            false => error,
        }
    }
}

/// The HTTP client of every call: `--insecure` turns certificate checks off (with a
/// warning, spec §6.5).
pub(crate) fn http_client(opts: &CardOpts) -> Result<reqwest::Client, CliError> {
    let mut builder = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT);
    if opts.insecure {
        eprintln!(
            "Warning: --insecure: TLS certificates are not verified; credentials may go to an impostor"
        );
        builder = builder.danger_accept_invalid_certs(true);
    }
    builder
        .build()
        .map_err(|e| CliError::internal(format!("cannot build the HTTP client: {e}")))
}

/// The credentials given by flag, environment or `.env` file (`SWITCHBOARD_TOKEN`
/// after `A2ACLI_BEARER`), and the service parameters.
pub(crate) fn credentials(opts: &AgentOpts) -> Result<Credentials, CliError> {
    let bearer = opts
        .bearer
        .clone()
        .or_else(|| super::config_files::lookup("SWITCHBOARD_TOKEN"))
        .filter(|t| !t.is_empty());
    let mut headers = Vec::new();
    for param in &opts.svc_params {
        let Some((key, value)) = param.split_once(':') else {
            return Err(CliError::usage(format!(
                "--svc-param {param:?} is not KEY:VALUE"
            )));
        };
        headers.push((key.trim().to_owned(), value.trim().to_owned()));
    }
    Ok(Credentials {
        bearer,
        api_key: opts.api_key.clone().filter(|k| !k.is_empty()),
        headers,
    })
}

/// The agent `reference` names (the positional argument or `-a`), connected.
pub(crate) async fn open(reference: &str, opts: &AgentOpts) -> Result<Agent, CliError> {
    let http = http_client(&opts.card)?;
    let found = card(&http, reference).await?;
    // A credential the caller gave wins over the stored token.
    let given = credentials(opts)?;
    let stored = match given.bearer.is_none() && given.api_key.is_none() {
        true => super::stored_auth::bearer_for(&found.url, &found.card, opts.card.insecure).await?,
        false => None,
    };
    open_with_client(http, found, reference, opts, stored)
}

/// The agent of a card already read.
pub(crate) fn open_with(
    found: Discovered,
    reference: &str,
    opts: &AgentOpts,
) -> Result<Agent, CliError> {
    open_with_client(http_client_quiet(&opts.card)?, found, reference, opts, None)
}

pub(crate) fn http_client_quiet(opts: &CardOpts) -> Result<reqwest::Client, CliError> {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .danger_accept_invalid_certs(opts.insecure)
        .build()
        .map_err(|e| CliError::internal(format!("cannot build the HTTP client: {e}")))
}

fn open_with_client(
    http: reqwest::Client,
    found: Discovered,
    reference: &str,
    opts: &AgentOpts,
    stored: Option<String>,
) -> Result<Agent, CliError> {
    let preferences = preferences(&found.card, opts)?;
    let Some(chosen) = sb_client::interface::choose(&found.card, &preferences) else {
        return Err(CliError::card_invalid(format!(
            "the card at {} offers no interface this client speaks at A2A {} (it lists {})",
            found.url,
            opts.a2a_version,
            offered(&found.card)
        ))
        .with_hint("try another --a2a-version or --transport"));
    };
    let mut credentials = credentials(opts)?;
    let stored_token = stored.is_some();
    if stored.is_some() {
        credentials.bearer = stored;
    }
    let placement = credentials.placed_for(Some(&found.card));
    // Where credentials go, by name only: their values are never logged.
    let headers: Vec<&str> = placement.headers.iter().map(|(n, _)| n.as_str()).collect();
    let query: Vec<&str> = placement.query.iter().map(|(n, _)| n.as_str()).collect();
    tracing::debug!(
        card = %found.url,
        binding = chosen.binding.card_name(),
        version = %chosen.version,
        url = %chosen.url,
        tenant = ?chosen.tenant,
        credential_headers = ?headers,
        credential_query = ?query,
        stored_token,
        "interface chosen"
    );
    let transport = sb_client::connect(http, &chosen, placement)
        .map_err(|e| CliError::from_call(e, !credentials.is_empty()))?;
    Ok(Agent {
        reference: reference.to_owned(),
        card: found.card,
        chosen,
        transport,
        had_credentials: credentials.bearer.is_some() || credentials.api_key.is_some(),
        stored_token,
    })
}

fn offered(card: &AgentCard) -> String {
    card.supported_interfaces
        .iter()
        .map(|i| format!("{} {}", i.protocol_binding, i.protocol_version))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The caller's bindings first, then the card's order (spec §13.1); one version, the
/// one asked for (1.0 unless the caller opts into 0.3, spec §13.2).
fn preferences(card: &AgentCard, opts: &AgentOpts) -> Result<Preferences, CliError> {
    let mut bindings = Vec::new();
    for name in &opts.transports {
        let binding = binding(name).ok_or_else(|| {
            CliError::usage(format!(
                "--transport {name:?}: expected JSONRPC, HTTP+JSON or GRPC"
            ))
        })?;
        if !bindings.contains(&binding) {
            bindings.push(binding);
        }
    }
    for interface in &card.supported_interfaces {
        if let Some(binding) = binding(&interface.protocol_binding)
            && !bindings.contains(&binding)
        {
            bindings.push(binding);
        }
    }
    let version = opts.a2a_version.trim();
    if !matches!(version, "1.0" | "0.3") {
        return Err(CliError::usage(format!(
            "--a2a-version {version:?}: this client speaks 1.0 and (on request) 0.3"
        )));
    }
    Ok(Preferences {
        versions: vec![version.to_owned()],
        bindings,
    })
}

pub(crate) fn binding(name: &str) -> Option<Binding> {
    match name.trim().to_ascii_uppercase().as_str() {
        "JSONRPC" | "JSON-RPC" => Some(Binding::JsonRpc),
        "HTTP+JSON" | "REST" | "HTTP" => Some(Binding::HttpJson),
        "GRPC" => Some(Binding::Grpc),
        _ => None,
    }
}

/// The card `reference` names: a URL (an origin or agent URL gets the well-known
/// path), a `file://` URL or a path to a file, or a bare `host[:port]` (http for
/// loopback hosts, https otherwise).
pub(crate) async fn card(http: &reqwest::Client, reference: &str) -> Result<Discovered, CliError> {
    let reference = reference.trim();
    if reference.is_empty() {
        return Err(CliError::usage("the agent reference is empty"));
    }
    if let Some(path) = reference.strip_prefix("file://") {
        return card_file(path);
    }
    if reference.starts_with("http://") || reference.starts_with("https://") {
        return sb_client::discover(http, reference, None)
            .await
            .map_err(CliError::from_card);
    }
    if std::path::Path::new(reference).exists() {
        return card_file(reference);
    }
    let host = reference.split(['/', ':']).next().unwrap_or_default();
    let scheme = match host {
        "localhost" | "127.0.0.1" | "[::1]" => "http",
        _ => "https",
    };
    sb_client::discover(http, &format!("{scheme}://{reference}"), None)
        .await
        .map_err(CliError::from_card)
}

fn card_file(path: &str) -> Result<Discovered, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::card_not_found(format!("cannot read the card file {path}: {e}")))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::card_invalid(format!("{path} is not JSON: {e}")))?;
    let card = match sb_client::legacy::is_v03_only(&json) {
        true => sb_client::legacy::from_v03(&json).map_err(CliError::card_invalid)?,
        false => AgentCard::from_served_json(&json)
            .map_err(|e| CliError::card_invalid(format!("{path} is not an agent card: {e}")))?,
    };
    sb_client::validate::check(&card)
        .map_err(|e| CliError::card_invalid(format!("the card in {path} cannot be used: {e}")))?;
    Ok(Discovered {
        card,
        url: format!("file://{path}"),
        etag: None,
        signed_by: None,
        json,
    })
}
