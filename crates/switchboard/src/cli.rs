//! The command line: `switchboard serve` (the default), `switchboard worker`,
//! `switchboard health`, and the A2A client commands (`card`, `send`, `task`, …:
//! `crate::client_cli`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use tokio::net::TcpListener;

use crate::config::{self, Overrides};
use crate::serve::serve;

/// `EX_USAGE`: the configuration or the command line is wrong.
const EXIT_USAGE: u8 = 64;

/// The exit statuses of the client commands (docs/cli.md); stable.
const EXIT_STATUSES: &str = "\
Exit statuses of the client commands (card, send, answer, task, push, auth, config,
conformance, agents, inbox, ceremonies):
  0  success: the command did its job, whatever the task's outcome (named on stderr)
  1  failure: a protocol error (its A2A name, e.g. TaskNotFoundError) or an unusable card
  2  usage: invalid arguments or flags
  3  the agent or its card could not be reached or found
  4  authentication: credentials missing or rejected
  5  timeout: --timeout expired before the task ended
  6  with --exit-status: the task ended failed, canceled or rejected
  7  with --exit-status: the task waits for input or auth
  130 interrupted (Ctrl-C) while waiting; the task goes on
`serve` and `worker` exit 64 on a bad configuration.";

#[derive(Debug, Parser)]
#[command(
    name = "switchboard",
    version,
    about = "A horizontally scalable runtime for the A2A protocol, and a client for any A2A agent",
    after_help = EXIT_STATUSES,
    disable_version_flag = true
)]
struct Cli {
    /// Print the version (`-v`, as the a2a-cli specification spells it, and `-V`).
    #[arg(short = 'v', short_alias = 'V', long, action = clap::ArgAction::Version)]
    version: Option<bool>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve A2A (all services in one process, embedded durable store).
    Serve(Box<ServeArgs>),
    /// Run the configured agents as a remote worker of the task-state service.
    Worker(WorkerArgs),
    /// `health ADDR` (host:port): exit 0 if a switchboard answers `GET /healthz` there
    /// (for container health checks, where no curl exists). `health URL` (http://…):
    /// the fleet's health table (`GET /fleet/health`).
    Health(HealthArgs),
    #[command(flatten)]
    Client(Box<crate::client_cli::ClientCommand>),
    /// Print a shell completion script: `switchboard completion bash > /etc/bash_completion.d/switchboard`.
    Completion {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Serve the fleet's agents as MCP tools (`A2A_<agent>`) on stdin/stdout, for an
    /// MCP client that starts this command.
    Mcp(crate::mcp::McpArgs),
}

#[derive(Debug, clap::Args)]
struct HealthArgs {
    /// ADDR (`host:port`) for the container check, or a Switchboard's URL for the table.
    #[arg(default_value = "127.0.0.1:8080", value_name = "ADDR_OR_URL")]
    target: String,
    /// With a URL: one window only (`1h` or `24h`).
    #[arg(long)]
    window: Option<String>,
    /// With a URL: the admin token (every agent) or a caller's credential.
    #[arg(long, env = "SWITCHBOARD_TOKEN", hide_env_values = true)]
    token: Option<String>,
    #[command(flatten)]
    output: crate::client_cli::FormatOpts,
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
    /// Turns run at once (by each worker session: one for the configured agents, one
    /// per bridged agent followed in the registry).
    #[arg(long, env = "SWITCHBOARD_WORKER_CAPACITY", default_value_t = 64)]
    capacity: u32,
    /// The registry service (`http://host:port`): also run every bridged agent
    /// (`kind = "a2a"`) it lists, as agents join and leave. Ignored with `--agents`.
    #[arg(long, env = "SWITCHBOARD_REGISTRY_URL")]
    registry_url: Option<String>,
}

#[derive(Debug, Default, clap::Args)]
struct ServeArgs {
    /// TOML configuration file.
    #[arg(long, env = "SWITCHBOARD_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    settings: Overrides,
    /// Only check the configuration: print what is wrong (exit 64) or "config ok".
    #[arg(long)]
    check: bool,
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // The a2a-cli configuration files, under the flags and the environment.
    let command = match crate::client_cli::config_files::prepare(Cli::command(), &args) {
        Ok(command) => command,
        Err(message) => return crate::client_cli::config_error(&args, message),
    };
    let matches = match command.try_get_matches_from(&args) {
        Ok(matches) => matches,
        Err(error) => {
            if error.use_stderr()
                && let Some(code) =
                    crate::client_cli::usage_error_as_json(&args, &error.to_string())
            {
                return code;
            }
            error.exit()
        }
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    let args = match cli.command {
        Some(Command::Client(command)) => {
            let own = matches.subcommand().map(|(_, m)| m);
            return crate::client_cli::run(*command, own);
        }
        Some(Command::Serve(args)) => *args,
        Some(Command::Health(args)) => {
            if args.target.starts_with("http://") || args.target.starts_with("https://") {
                return crate::client_cli::fleet_health(
                    args.target,
                    args.token,
                    args.output,
                    args.window,
                );
            }
            return match args.target.parse() {
                Ok(addr) => health(addr),
                Err(_) => {
                    eprintln!(
                        "switchboard: {:?} is neither host:port nor an http(s) URL",
                        args.target
                    );
                    ExitCode::from(crate::client_cli::exit::USAGE)
                }
            };
        }
        Some(Command::Completion { shell }) => {
            clap_complete::generate(
                shell,
                &mut full_command(),
                "switchboard",
                &mut std::io::stdout(),
            );
            return ExitCode::SUCCESS;
        }
        Some(Command::Worker(args)) => return worker(args),
        Some(Command::Mcp(args)) => return crate::mcp::run(args),
        None => ServeArgs::default_from_env(),
    };
    let file = match read_config(args.config.as_ref()) {
        Ok(file) => file,
        Err(code) => return code,
    };
    let config = match config::load(file.as_deref(), args.settings) {
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
    let service = match config.is_split() {
        false => "switchboard".to_owned(),
        true => format!("switchboard-{}", config.service_names("-")),
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

/// The command line with what is added at run time (`--config` of the client commands).
fn full_command() -> clap::Command {
    crate::client_cli::config_files::with_config_flag(Cli::command())
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
        args.registry_url.as_deref(),
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

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap checks the whole command tree (unique flags, valid defaults) only here, or
    /// when a subcommand is first parsed.
    #[test]
    fn the_command_line_is_well_formed() {
        super::Cli::command().debug_assert();
        super::full_command().debug_assert();
    }
}
