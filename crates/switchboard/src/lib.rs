//! The `switchboard` binary's library: command line, configuration and the wiring of the
//! services. `main.rs` only calls [`main`]; tests drive [`serve`] directly.
//!
//! # Layout
//! - [`config`]: the configuration tree and its pure loader.
//! - [`serve`]: builds the store, the services and the gateway, and runs until shutdown.

pub mod config;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use sb_agent::builtin::{ConformanceAgent, ConsolidateAgent, EchoAgent};
use sb_agent::{Agent, AgentHost};
use sb_fanout::LocalFanout;
use sb_gateway::AppState;
use sb_gateway::auth::{AgentAuth, ApiKeys, Credential};
use sb_gateway::jwt::{JwksSource, JwtVerifier};
use sb_registry::{HostedAgent, StaticRegistry};
use sb_store::{
    DeadLetterStore, EventBus, LocalBus, MemoryStore, PushConfigStore, RedbStore, TaskStore,
};
use sb_tasks::{DeadlineConfig, DeadlineKeeper, LocalTaskService};
use sb_webhooks::{AddressPolicy, Dispatcher, DispatcherConfig, LocalPushConfigs};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::{AgentConfig, Config, Overrides};

/// `EX_USAGE`: the configuration or the command line is wrong.
const EXIT_USAGE: u8 = 64;

#[derive(Debug, Parser)]
#[command(
    name = "switchboard",
    version,
    about = "A horizontally scalable runtime for the A2A protocol"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve A2A (all services in one process, embedded durable store).
    Serve(ServeArgs),
    /// Exit 0 if a switchboard answers `GET /healthz` at ADDR (for container health
    /// checks, where no curl exists).
    Health {
        #[arg(default_value = "127.0.0.1:8080")]
        addr: std::net::SocketAddr,
    },
}

#[derive(Debug, Default, clap::Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "SWITCHBOARD_LISTEN")]
    listen: Option<std::net::SocketAddr>,
    /// Directory of the embedded store.
    #[arg(long, env = "SWITCHBOARD_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Keep everything in memory (nothing survives a restart).
    #[arg(long, env = "SWITCHBOARD_MEMORY")]
    memory: bool,
    /// TOML configuration file.
    #[arg(long, env = "SWITCHBOARD_CONFIG")]
    config: Option<PathBuf>,
    /// Base URL clients reach this server at (written into the agent cards).
    #[arg(long, env = "SWITCHBOARD_PUBLIC_URL")]
    public_url: Option<String>,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "SWITCHBOARD_MAX_BODY_BYTES")]
    max_body_bytes: Option<usize>,
    /// The agent also served at the root ("" for none).
    #[arg(long, env = "SWITCHBOARD_DEFAULT_AGENT")]
    default_agent: Option<String>,
    /// Trust these webhook targets beyond the public internet (CIDRs, addresses, host
    /// names; comma-separated or repeated), e.g. `127.0.0.1/32` for a local receiver.
    #[arg(long, env = "SWITCHBOARD_WEBHOOK_ALLOW", value_delimiter = ',')]
    webhook_allow: Vec<String>,
    /// Require `Authorization: Bearer TOKEN` on every hosted agent, as PRINCIPAL=TOKEN
    /// (repeatable, or comma-separated in the environment).
    #[arg(
        long = "auth-token",
        env = "SWITCHBOARD_AUTH_TOKENS",
        value_delimiter = ','
    )]
    auth_tokens: Vec<String>,
    /// Enables the admin endpoints (`/admin/…`, e.g. dead letters) for this bearer token.
    #[arg(long, env = "SWITCHBOARD_ADMIN_TOKEN")]
    admin_token: Option<String>,
    /// Only check the configuration: print what is wrong (exit 64) or "config ok".
    #[arg(long)]
    check: bool,
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Serve(args)) => args,
        Some(Command::Health { addr }) => return health(addr),
        None => ServeArgs::default_from_env(),
    };
    let file = match &args.config {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) => {
                eprintln!(
                    "switchboard: cannot read config file {}: {e}",
                    path.display()
                );
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => None,
    };
    let overrides = Overrides {
        listen: args.listen,
        data_dir: args.data_dir,
        memory: args.memory,
        public_url: args.public_url,
        max_body_bytes: args.max_body_bytes,
        default_agent: args.default_agent,
        webhook_allow: args.webhook_allow,
        auth_tokens: args.auth_tokens,
        admin_token: args.admin_token,
    };
    let config = match config::load(file.as_deref(), overrides) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("switchboard: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if args.check {
        println!(
            "config ok: {} agent(s), listening on {}",
            config.agents.len(),
            config.listen
        );
        return ExitCode::SUCCESS;
    }
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("switchboard: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
        serve(config, listener, shutdown_signal()).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "switchboard stopped");
            eprintln!("switchboard: {e:#}");
            ExitCode::FAILURE
        }
    }
}

impl ServeArgs {
    /// `switchboard` with no subcommand behaves like `switchboard serve`, still honouring
    /// the `SWITCHBOARD_*` environment.
    fn default_from_env() -> ServeArgs {
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: ServeArgs,
        }
        Wrapper::parse_from(["switchboard"]).args
    }
}

fn health(addr: std::net::SocketAddr) -> ExitCode {
    use std::io::{Read, Write};
    let probe = || -> std::io::Result<bool> {
        let timeout = Duration::from_secs(2);
        let mut stream = std::net::TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.write_all(b"GET /healthz HTTP/1.0\r\nHost: localhost\r\n\r\n")?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head)?;
        Ok(head.starts_with(b"HTTP/1.") && &head[9..12] == b"200")
    };
    match probe() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("switchboard at {addr} is not healthy");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("switchboard at {addr} did not answer: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => drop(ctrl_c.await),
        }
    }
    #[cfg(not(unix))]
    drop(ctrl_c.await);
}

/// The agent's authentication: its own credentials plus the global `--auth-token`s.
/// A JWKS URL is fetched now and refreshed in the background until `stop`.
async fn build_auth(
    config: &Config,
    agent: &AgentConfig,
    stop: &CancellationToken,
) -> anyhow::Result<AgentAuth> {
    let mut auth = AgentAuth::default();
    for entry in &config.auth_tokens {
        let (principal, secret) = config::parse_token(entry).map_err(|e| anyhow::anyhow!(e))?;
        auth.bearer_tokens.push(Credential { principal, secret });
    }
    if let Some(own) = &agent.auth {
        for t in &own.bearer {
            auth.bearer_tokens.push(Credential {
                principal: t.principal.clone(),
                secret: t.token.clone(),
            });
        }
        auth.api_keys = own.api_keys.as_ref().map(|a| ApiKeys {
            header: a.header.clone(),
            keys: a
                .keys
                .iter()
                .map(|k| Credential {
                    principal: k.principal.clone(),
                    secret: k.key.clone(),
                })
                .collect(),
        });
        if let Some(jwt) = &own.jwt {
            let source = match (&jwt.jwks_file, &jwt.jwks_url) {
                (Some(file), _) => JwksSource::File(file.clone()),
                (None, Some(url)) => JwksSource::Url(url.clone()),
                (None, None) => anyhow::bail!("agent \"{}\": auth.jwt needs a key set", agent.name),
            };
            let verifier = JwtVerifier::load(
                source,
                jwt.issuer.clone(),
                jwt.audience.clone(),
                jwt.principal_claim.clone(),
            )
            .await
            .map_err(|e| anyhow::anyhow!("agent \"{}\": {e}", agent.name))?;
            if matches!(verifier.source, JwksSource::Url(_)) {
                tokio::spawn(refresh_jwks(verifier.clone(), stop.clone()));
            }
            auth.jwt = Some(verifier);
        }
    }
    Ok(auth)
}

/// Fetches a JWKS URL again every few minutes (key rotation); a failed fetch keeps the
/// keys it had.
async fn refresh_jwks(verifier: JwtVerifier, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(sb_gateway::jwt::JWKS_REFRESH) => {}
        }
        if let Err(e) = verifier.refresh().await {
            tracing::warn!(error = %e, "could not refresh the JWKS; keeping the previous keys");
        }
    }
}

/// The card entry of the stream-resume extension (docs/extensions.md).
fn resume_extension(memory: bool) -> sb_protocol::card::AgentExtension {
    let params = serde_json::json!({
        "sequence": "task-generation",
        "cursor": "Last-Event-ID",
        "durable": !memory,
    });
    sb_protocol::card::AgentExtension {
        uri: sb_gateway::ops::RESUME_EXTENSION.to_owned(),
        description: "Each task event has a per-task sequence number, sent as the SSE id. SubscribeToTask with \
                      Last-Event-ID replays exactly the events after it, then live ones, across restarts."
            .to_owned(),
        required: false,
        params: params.as_object().cloned(),
    }
}

fn build_agent(config: &AgentConfig) -> Arc<dyn Agent> {
    match config.kind.as_str() {
        "consolidate" => {
            let mut agent = ConsolidateAgent::default();
            if let Some(ms) = config.pause_ms {
                agent.pause = Duration::from_millis(ms);
            }
            Arc::new(agent)
        }
        "conformance" => Arc::new(ConformanceAgent::default()),
        _ => Arc::new(EchoAgent),
    }
}

/// The backend seen through each storage trait (one object in practice).
type Stores = (
    Arc<dyn TaskStore>,
    Arc<dyn PushConfigStore>,
    Arc<dyn DeadLetterStore>,
);

/// Runs every service in this process on `listener` until `shutdown` completes, then
/// drains streams and agent runs.
pub async fn serve(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (tasks_store, push_store, dead_store): Stores = if config.memory {
        let store = Arc::new(MemoryStore::new());
        (store.clone(), store.clone(), store)
    } else {
        let path = config.data_dir.join("switchboard.redb");
        let store = Arc::new(RedbStore::open(&path).map_err(|e| anyhow::anyhow!("{e}"))?);
        tracing::info!(path = %path.display(), "embedded store opened");
        (store.clone(), store.clone(), store)
    };
    let bus: Arc<dyn EventBus> = Arc::new(LocalBus::new());
    let task_service = Arc::new(
        LocalTaskService::new(tasks_store.clone(), bus.clone())
            .with_max_in_flight(config.max_tasks_in_flight_per_principal),
    );
    let recovered = task_service
        .recover_unfinished()
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if recovered > 0 {
        tracing::warn!(
            count = recovered,
            "failed tasks left running by the previous process"
        );
    }
    let stop = CancellationToken::new();
    let mut agents = BTreeMap::new();
    let mut hosted = Vec::new();
    let mut auths = BTreeMap::new();
    for agent_config in &config.agents {
        let agent = build_agent(agent_config);
        let descriptor = agent.describe();
        let auth = build_auth(&config, agent_config, &stop).await?;
        let (security_schemes, security_requirements) = auth.card_security();
        hosted.push(HostedAgent {
            name: agent_config.name.clone(),
            description: agent_config
                .description
                .clone()
                .unwrap_or(descriptor.description),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            skills: descriptor.skills,
            input_modes: descriptor.input_modes,
            output_modes: descriptor.output_modes,
            extensions: vec![resume_extension(config.memory)],
            security_schemes,
            security_requirements,
            merged_card_by_default: agent_config.card.as_deref() != Some("1.0"),
            extended_card: auth.is_enabled(),
        });
        auths.insert(agent_config.name.clone(), auth);
        agents.insert(agent_config.name.clone(), agent);
    }
    let policy = Arc::new(
        AddressPolicy::parse(&config.webhook_allow.join(",")).map_err(|e| anyhow::anyhow!(e))?,
    );
    let dispatcher_config = DispatcherConfig {
        retry_delays: config
            .webhook_retry_delays_ms
            .iter()
            .map(|ms| Duration::from_millis(*ms))
            .collect(),
        attempt_timeout: Duration::from_millis(config.webhook_timeout_ms),
        policy: policy.clone(),
        signing_secrets: config
            .agents
            .iter()
            .filter_map(|a| {
                let secret = a.webhook_secret.as_deref()?;
                let key = sb_webhooks::signing::parse_secret(secret).ok()?;
                Some((a.name.clone(), key))
            })
            .collect(),
    };
    let dispatcher = Dispatcher::new(
        push_store.clone(),
        dead_store,
        tasks_store.clone(),
        dispatcher_config,
    )
    .map_err(|e| anyhow::anyhow!(e))?;
    let registry = Arc::new(StaticRegistry::new(
        &config.public_url(),
        &hosted,
        config.default_agent.as_deref(),
    ));
    let host = AgentHost::new(agents, task_service.clone(), bus.clone());
    let state = AppState {
        tasks: task_service.clone(),
        fanout: Arc::new(LocalFanout::new(task_service.clone(), bus.clone())),
        push: Arc::new(LocalPushConfigs::new(
            push_store.clone(),
            task_service.clone(),
            policy,
        )),
        registry,
        host: host.clone(),
        shutdown: stop.clone(),
        max_body_bytes: config.max_body_bytes,
        auth: Arc::new(auths),
        streams: sb_gateway::limits::StreamLimits::new(config.max_streams_per_principal),
    };
    let mut app = sb_gateway::router(state);
    if let Some(token) = &config.admin_token {
        app = app.merge(sb_webhooks::admin::admin_router(dispatcher.clone(), token));
    }
    let dispatching = dispatcher.spawn(&*bus, stop.clone());
    let deadlines = DeadlineConfig {
        terminal_ttl: Duration::from_secs(config.task_ttl_secs),
        input_timeout: Duration::from_secs(config.input_timeout_secs),
        stall_timeout: Duration::from_secs(config.stall_timeout_secs),
    };
    let keeper = DeadlineKeeper::new(
        deadlines,
        task_service.clone(),
        tasks_store.clone(),
        push_store.clone(),
    );
    tokio::spawn(keeper.run(bus.clone(), stop.clone()));
    tracing::info!(listen = %listener.local_addr()?, public_url = %config.public_url(), "switchboard serving");
    let stopping = stop.clone();
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown.await;
        tracing::info!("shutting down: draining streams and agent runs");
        stopping.cancel();
    });
    server.await?;
    let grace = Duration::from_secs(config.shutdown_grace_secs);
    if !host.drain(grace).await {
        tracing::warn!(
            "agent runs still going after the grace period; they will be failed on the next start"
        );
    }
    dispatching.abort();
    if !dispatcher.drain(grace).await {
        tracing::warn!("webhook deliveries still pending after the grace period were dropped");
    }
    Ok(())
}
