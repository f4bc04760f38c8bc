//! The command line: `switchboard serve` (the default), `switchboard worker` and
//! `switchboard health`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use tokio::net::TcpListener;

use crate::config::{self, Overrides};
use crate::serve::serve;

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
    Serve(Box<ServeArgs>),
    /// Run the configured agents as a remote worker of the task-state service.
    Worker(WorkerArgs),
    /// Exit 0 if a switchboard answers `GET /healthz` at ADDR (for container health
    /// checks, where no curl exists).
    Health {
        #[arg(default_value = "127.0.0.1:8080")]
        addr: std::net::SocketAddr,
    },
}

#[derive(Debug, clap::Args)]
struct WorkerArgs {
    /// The task-state service (comma-separated replica URLs, `http://host:port`).
    #[arg(long, env = "SWITCHBOARD_TASKS_URL")]
    tasks_url: String,
    /// TOML configuration file (the same as the services'; its agents are run).
    #[arg(long, env = "SWITCHBOARD_CONFIG")]
    config: Option<PathBuf>,
    /// Run only these agents (comma-separated); default: every configured agent.
    #[arg(long, env = "SWITCHBOARD_WORKER_AGENTS", value_delimiter = ',')]
    agents: Vec<String>,
    /// Turns run at once.
    #[arg(long, env = "SWITCHBOARD_WORKER_CAPACITY", default_value_t = 64)]
    capacity: u32,
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
    /// Run only these services (comma-separated: gateway, tasks, fanout, dispatcher,
    /// registry); without it every service runs in this one process.
    #[arg(long, env = "SWITCHBOARD_SERVICES", value_delimiter = ',')]
    services: Vec<String>,
    /// Shared state in Redis: `redis://[:password@]host:port/db`, or `rediss://` for TLS.
    #[arg(long, env = "SWITCHBOARD_BACKEND")]
    backend: Option<String>,
    /// The task-state service (comma-separated replica URLs, `http://host:port`).
    #[arg(long, env = "SWITCHBOARD_TASKS_URL")]
    tasks_url: Option<String>,
    /// The fan-out service (comma-separated replica URLs).
    #[arg(long, env = "SWITCHBOARD_FANOUT_URL")]
    fanout_url: Option<String>,
    /// The registry service (comma-separated replica URLs).
    #[arg(long, env = "SWITCHBOARD_REGISTRY_URL")]
    registry_url: Option<String>,
    /// The dispatcher service, for the admin endpoints on a gateway.
    #[arg(long, env = "SWITCHBOARD_DISPATCHER_URL")]
    dispatcher_url: Option<String>,
    /// Only check the configuration: print what is wrong (exit 64) or "config ok".
    #[arg(long)]
    check: bool,
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let args = match cli.command {
        Some(Command::Serve(args)) => *args,
        Some(Command::Health { addr }) => return health(addr),
        Some(Command::Worker(args)) => return worker(args),
        None => ServeArgs::default_from_env(),
    };
    let file = match read_config(args.config.as_ref()) {
        Ok(file) => file,
        Err(code) => return code,
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
        services: args.services,
        backend: args.backend,
        tasks_url: args.tasks_url,
        fanout_url: args.fanout_url,
        registry_url: args.registry_url,
        dispatcher_url: args.dispatcher_url,
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
    let service = match config.services.as_slice() {
        [] => "switchboard".to_owned(),
        services => format!("switchboard-{}", services.join("-")),
    };
    let _telemetry = init_telemetry(&service);
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
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

fn read_config(path: Option<&PathBuf>) -> Result<Option<String>, ExitCode> {
    let Some(path) = path else {
        return Ok(None);
    };
    std::fs::read_to_string(path).map(Some).map_err(|e| {
        eprintln!(
            "switchboard: cannot read config file {}: {e}",
            path.display()
        );
        ExitCode::from(EXIT_USAGE)
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("switchboard: cannot start the runtime: {e}");
            ExitCode::FAILURE
        })
}

fn worker(args: WorkerArgs) -> ExitCode {
    let file = match read_config(args.config.as_ref()) {
        Ok(file) => file,
        Err(code) => return code,
    };
    let config = match config::load(file.as_deref(), Overrides::default()) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("switchboard: {message}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if args.capacity == 0 {
        eprintln!("switchboard: --capacity must be at least 1");
        return ExitCode::from(EXIT_USAGE);
    }
    let _telemetry = init_telemetry("switchboard-worker");
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let result = runtime.block_on(crate::worker::work(
        &config,
        &args.tasks_url,
        &args.agents,
        args.capacity,
        shutdown_signal(),
    ));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
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

/// Logs, and traces when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; the guard flushes them.
fn init_telemetry(service: &str) -> sb_telemetry::Telemetry {
    sb_telemetry::init(service)
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
