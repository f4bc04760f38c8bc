//! The client commands of `switchboard`: an A2A command-line client for any agent
//! (Switchboard's or anyone's), following the a2a-cli specification's command surface,
//! output contract and exit codes (docs/cli.md), built on `sb-client` (discovery,
//! interface choice, credentials, the calls of every binding, following a task).
//!
//! # Layout
//! - `opts`: the shared options; `agent`: reference → card → chosen interface →
//!   transport; `error`: failures, their codes and exit statuses; `output`, `render`:
//!   the JSON and text formats; `progress`: the spinner on a terminal.
//! - `card`, `send` (and `answer`), `task` (get, cancel, list, subscribe), `wait`: how
//!   a task is followed; `parts`: message parts from the command line; `push`: push
//!   configs and the local webhook receiver; `download` (`task download`) and
//!   `artifact_names`: artifacts saved to files.
//! - `conformance`, `conformance_checks`, `conformance_capabilities`: a smoke check of an agent against the A2A
//!   TCK's mandatory behaviours; `card_schema`: the card against the A2A JSON Schemas.
//! - Switchboard's own APIs: `switchboard_api` (base URL, token, error bodies),
//!   `registry_agents` (`agents`), `inbox`, `ceremonies`, `fleet_health` (`health URL`).
//! - Auth and configuration: `auth` (login, status, logout), `token_store` (the token
//!   files), `stored_auth` (a stored token attached to calls, renewed);
//!   `config_files` (the `.env` files under the flags and environment), `config_show`.

mod agent;
mod artifact_names;
mod auth;
mod card;
mod card_schema;
mod ceremonies;
pub(crate) mod config_files;
mod config_show;
mod conformance;
mod conformance_capabilities;
mod conformance_checks;
mod download;
mod error;
mod fleet_health;
mod inbox;
mod opts;
mod output;
mod parts;
mod progress;
mod push;
mod registry_agents;
mod render;
mod send;
mod stored_auth;
mod switchboard_api;
mod task;
mod token_store;
mod wait;

use std::process::ExitCode;

use clap::{ArgMatches, Subcommand};

use error::CliError;
pub(crate) use error::exit;
pub(crate) use opts::FormatOpts;

/// The client commands, flattened into the binary's own.
#[derive(Debug, Subcommand)]
pub(crate) enum ClientCommand {
    /// Fetch, check and show an agent's card (`card AGENT` or `card get AGENT`).
    Card(card::CardCommand),
    /// Send a message: `send AGENT TEXT` or `send -a AGENT --text TEXT`; waits until the
    /// task ends or waits for you unless --async; --stream prints its events.
    Send(send::SendArgs),
    /// Answer a task waiting for input: `answer AGENT TASK_ID TEXT`.
    Answer(send::AnswerArgs),
    /// Task operations: get, cancel, list, subscribe.
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// Same as `task get`.
    Get(task::GetArgs),
    /// Same as `task cancel`.
    Cancel(task::CancelArgs),
    /// Same as `task list`.
    List(task::ListArgs),
    /// Same as `task subscribe`.
    Subscribe(task::SubscribeArgs),
    /// Push notifications: a task's configs (create, get, list, delete) and a local
    /// receiver that prints deliveries and checks their signatures.
    #[command(subcommand)]
    Push(push::PushCommand),
    /// Smoke-check a live agent against the A2A TCK's mandatory behaviours: each check
    /// passed, failed or skipped, with its reason; exit 1 when one failed.
    Conformance(conformance::ConformanceArgs),
    /// A Switchboard's agents: list and search its registry, register from a TOML or
    /// JSON file, remove.
    #[command(subcommand)]
    Agents(registry_agents::AgentsCommand),
    /// A Switchboard's tasks waiting for a person (list; `inbox answer TASK_ID TEXT`).
    Inbox(inbox::InboxCommand),
    /// A Switchboard's scheduled invocations: list, create from a file, run now, runs,
    /// pause, resume, delete (`X-API-Key`: --api-key, or the admin --token).
    #[command(subcommand)]
    Ceremonies(ceremonies::CeremoniesCommand),
    /// OAuth 2.1 login to an agent (device code or client credentials), the stored
    /// tokens later calls attach, logout.
    #[command(subcommand)]
    Auth(auth::AuthCommand),
    /// The configuration in effect (read-only): each setting and where it came from.
    #[command(subcommand)]
    Config(config_show::ConfigCommand),
}

impl ClientCommand {
    /// The output format (to print a failure in it), whether the output
    /// is streamed, and `--debug`.
    fn settings(&self) -> (opts::Format, bool, bool) {
        use task::TaskCommand as T;
        match self {
            ClientCommand::Card(c) => {
                let args = match &c.sub {
                    Some(card::CardSub::Get(args)) => args,
                    None => &c.args,
                };
                (args.output.format(), false, args.agent.card.debug)
            }
            ClientCommand::Send(args) => turn_settings(&args.turn),
            ClientCommand::Answer(args) => turn_settings(&args.turn),
            ClientCommand::Task(T::Get(args)) | ClientCommand::Get(args) => {
                (args.task.output.format(), false, args.task.agent.card.debug)
            }
            ClientCommand::Task(T::Cancel(args)) | ClientCommand::Cancel(args) => {
                (args.task.output.format(), false, args.task.agent.card.debug)
            }
            ClientCommand::Task(T::List(args)) | ClientCommand::List(args) => {
                (args.output.format(), false, args.agent.card.debug)
            }
            ClientCommand::Task(T::Download(args)) => {
                (args.task.output.format(), false, args.task.agent.card.debug)
            }
            ClientCommand::Task(T::Subscribe(args)) | ClientCommand::Subscribe(args) => (
                args.task.output.format(),
                args.stream,
                args.task.agent.card.debug,
            ),
            ClientCommand::Task(T::PushConfig(c)) | ClientCommand::Push(c) => push_settings(c),
            ClientCommand::Conformance(args) => {
                (args.output.format(), false, args.agent.card.debug)
            }
            ClientCommand::Agents(c) => (c.api().output.format(), false, false),
            ClientCommand::Inbox(c) => (c.api().output.format(), false, false),
            ClientCommand::Ceremonies(c) => (c.key().api.output.format(), false, false),
            ClientCommand::Auth(c) => {
                let (format, debug) = c.settings();
                (format, false, debug)
            }
            ClientCommand::Config(c) => (c.output().format(), false, false),
        }
    }
}

fn turn_settings(turn: &send::TurnOpts) -> (opts::Format, bool, bool) {
    (turn.output.format(), turn.stream, turn.agent.card.debug)
}

fn push_settings(command: &push::PushCommand) -> (opts::Format, bool, bool) {
    match command {
        push::PushCommand::Create(args) => (
            args.target.output.format(),
            false,
            args.target.agent.card.debug,
        ),
        push::PushCommand::Get(args)
        | push::PushCommand::List(args)
        | push::PushCommand::Delete(args) => (args.output.format(), false, args.agent.card.debug),
        push::PushCommand::Receive(args) => (args.output.format(), true, false),
    }
}

/// `health URL`: the fleet table of the Switchboard at `url`.
pub(crate) fn fleet_health(
    url: String,
    token: Option<String>,
    output: opts::FormatOpts,
    window: Option<String>,
) -> ExitCode {
    let format = output.format();
    let api = switchboard_api::ApiOpts { url, token, output };
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::internal(format!("cannot start the runtime: {e}")))
        .and_then(|runtime| runtime.block_on(fleet_health::run(api, window)));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            error.print(format, false);
            ExitCode::from(error.exit)
        }
    }
}

/// Runs a client command; `matches` are its own (the order of message parts).
pub(crate) fn run(command: ClientCommand, matches: Option<&ArgMatches>) -> ExitCode {
    let (format, streamed, debug) = command.settings();
    if debug {
        // sb-client's own logs, and the raw messages of its wire tap (at TRACE, which
        // redacts every credential itself: nothing here can show one).
        let _ = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_env_filter("sb_client=debug,sb_client::wire=trace,switchboard=debug")
            .try_init();
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            CliError::internal(format!("cannot start the runtime: {e}")).print(format, streamed);
            return ExitCode::from(exit::FAILURE);
        }
    };
    let result = runtime.block_on(async move {
        match command {
            ClientCommand::Card(c) => card::run(c).await,
            ClientCommand::Send(args) => send::send(args, matches).await,
            ClientCommand::Answer(args) => send::answer(args).await,
            ClientCommand::Task(c) => task::run(c).await,
            ClientCommand::Get(args) => task::run(task::TaskCommand::Get(args)).await,
            ClientCommand::Cancel(args) => task::run(task::TaskCommand::Cancel(args)).await,
            ClientCommand::List(args) => task::run(task::TaskCommand::List(args)).await,
            ClientCommand::Subscribe(args) => task::run(task::TaskCommand::Subscribe(args)).await,
            ClientCommand::Push(command) => push::run(command).await,
            ClientCommand::Conformance(args) => conformance::run(args).await,
            ClientCommand::Agents(command) => registry_agents::run(command).await,
            ClientCommand::Inbox(command) => inbox::run(command).await,
            ClientCommand::Ceremonies(command) => ceremonies::run(command).await,
            ClientCommand::Auth(command) => auth::run(command).await,
            ClientCommand::Config(command) => config_show::run(&command, matches),
        }
    });
    // Background work (a stream drained to its end) is not waited for.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            error.print(format, streamed);
            ExitCode::from(error.exit)
        }
    }
}

/// A configuration file that cannot be read: a usage error (exit 2).
pub(crate) fn config_error(args: &[String], message: String) -> ExitCode {
    let json = usage_error_as_json(args, &message);
    json.unwrap_or_else(|| {
        CliError::usage(message)
            .with_hint("fix or remove the file (docs/cli.md, Configuration)")
            .print(opts::Format::Text, false);
        ExitCode::from(exit::USAGE)
    })
}

/// A usage error clap found, printed as the error envelope when the command line asked
/// for JSON (spec §11.4); `None` when clap should print it itself.
pub(crate) fn usage_error_as_json(args: &[String], message: &str) -> Option<ExitCode> {
    let json = args
        .windows(2)
        .any(|w| matches!(w[0].as_str(), "-o" | "--output") && w[1] == "json")
        || args
            .iter()
            .any(|a| matches!(a.as_str(), "--json" | "-ojson" | "--output=json"));
    if !json {
        return None;
    }
    let first_line = message.lines().next().unwrap_or(message);
    let message = first_line.trim_start_matches("error: ").to_owned();
    CliError::usage(message).print(opts::Format::Json, false);
    Some(ExitCode::from(exit::USAGE))
}
