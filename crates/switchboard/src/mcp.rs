//! The fleet's agents as MCP tools in a deployment: `/mcp` on every gateway
//! (streamable HTTP; its catalog follows the gateway's registry, and each call reaches
//! the agent's A2A endpoint with the caller's own credentials), and `switchboard mcp`,
//! the same server over stdio for a client that starts it, reading the registry of the
//! Switchboard at `--url`.

use std::process::ExitCode;
use std::time::Duration;

use sb_client::Credentials;
use sb_mcp::call::Caller;
use sb_mcp::{CatalogFeed, FleetTools};
use sb_registry::LiveRegistry;
use tokio_util::sync::CancellationToken;

use crate::config::Config;

/// `switchboard mcp`: the fleet's agents as MCP tools, over stdio.
#[derive(Debug, clap::Args)]
pub(crate) struct McpArgs {
    /// The Switchboard whose agents are the tools (its base URL).
    #[arg(long, env = "SWITCHBOARD_URL")]
    url: String,
    /// A bearer token sent to the agents (and to the registry).
    #[arg(long, env = "SWITCHBOARD_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// An API key sent to the agents, where their cards say.
    #[arg(long, env = "SWITCHBOARD_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Longest a call waits for its task to end or ask something, in seconds.
    #[arg(long, default_value_t = 30)]
    wait_secs: u64,
}

/// Serves one MCP client on stdin/stdout until it leaves.
pub(crate) fn run(args: McpArgs) -> ExitCode {
    if args.wait_secs == 0 {
        eprintln!("switchboard: --wait-secs must be at least 1");
        return ExitCode::from(2);
    }
    let _telemetry = sb_telemetry::init("switchboard-mcp");
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("switchboard: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result: Result<(), String> = runtime.block_on(async {
        let credentials = Credentials {
            bearer: args.token,
            api_key: args.api_key,
            headers: Vec::new(),
        };
        let http = reqwest::Client::new();
        let stop = CancellationToken::new();
        let base = args.url.trim_end_matches('/').to_owned();
        let feed = CatalogFeed::polling(http.clone(), base, credentials.clone(), stop.clone())
            .await
            .map_err(|e| format!("cannot read the agents of {}: {e}", args.url))?;
        let caller = Caller {
            http,
            credentials,
            wait: Duration::from_secs(args.wait_secs),
        };
        let served = sb_mcp::serve_stdio(FleetTools::new(feed, caller, false)).await;
        stop.cancel();
        served
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("switchboard: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `/mcp` of a gateway whose registry is `live`; nothing when `[mcp]` is off.
pub(crate) fn routes(
    config: &Config,
    live: &LiveRegistry,
    stop: &CancellationToken,
) -> axum::Router {
    if !config.mcp.enabled {
        return axum::Router::new();
    }
    let feed = CatalogFeed::following(live, stop.clone());
    let caller = Caller {
        http: reqwest::Client::new(),
        credentials: Credentials::default(),
        wait: Duration::from_secs(config.mcp.wait_secs),
    };
    let public = config.public_url();
    let hosts: Vec<String> = reqwest::Url::parse(&public)
        .ok()
        .and_then(|url| {
            let host = url.host_str()?.to_owned();
            Some(match url.port() {
                Some(port) => vec![host.clone(), format!("{host}:{port}")],
                None => vec![host],
            })
        })
        .unwrap_or_default();
    let service = sb_mcp::http_service(feed, caller, hosts, stop.child_token());
    axum::Router::new().nest_service("/mcp", service)
}
