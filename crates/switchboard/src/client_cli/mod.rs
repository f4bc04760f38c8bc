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
//!   a task is followed; `parts`: message parts from the command line.

mod agent;
mod card;
mod error;
mod opts;
mod output;
mod parts;
mod progress;
mod render;
mod send;
mod task;
mod wait;

use std::process::ExitCode;

use clap::{ArgMatches, Subcommand};

use error::CliError;
pub(crate) use error::exit;

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
    Cancel(task::TaskArgs),
    /// Same as `task list`.
    List(task::ListArgs),
    /// Same as `task subscribe`.
    Subscribe(task::SubscribeArgs),
}

impl ClientCommand {
    /// The output options, to print a failure in the right format.
    fn format(&self) -> (opts::Format, bool) {
        let (output, streamed) = match self {
            ClientCommand::Card(c) => (
                match &c.sub {
                    Some(card::CardSub::Get(args)) => &args.output,
                    None => &c.args.output,
                },
                false,
            ),
            ClientCommand::Send(args) => (&args.turn.output, args.turn.stream),
            ClientCommand::Answer(args) => (&args.turn.output, args.turn.stream),
            ClientCommand::Task(task::TaskCommand::Get(args)) | ClientCommand::Get(args) => {
                (&args.task.output, false)
            }
            ClientCommand::Task(task::TaskCommand::Cancel(args)) | ClientCommand::Cancel(args) => {
                (&args.output, false)
            }
            ClientCommand::Task(task::TaskCommand::List(args)) | ClientCommand::List(args) => {
                (&args.output, false)
            }
            ClientCommand::Task(task::TaskCommand::Subscribe(args))
            | ClientCommand::Subscribe(args) => (&args.task.output, args.stream),
        };
        (output.format(), streamed)
    }

    fn debug(&self) -> bool {
        match self {
            ClientCommand::Card(c) => match &c.sub {
                Some(card::CardSub::Get(args)) => args.agent.debug,
                None => c.args.agent.debug,
            },
            ClientCommand::Send(args) => args.turn.agent.debug,
            ClientCommand::Answer(args) => args.turn.agent.debug,
            ClientCommand::Task(task::TaskCommand::Get(args)) | ClientCommand::Get(args) => {
                args.task.agent.debug
            }
            ClientCommand::Task(task::TaskCommand::Cancel(args)) | ClientCommand::Cancel(args) => {
                args.agent.debug
            }
            ClientCommand::Task(task::TaskCommand::List(args)) | ClientCommand::List(args) => {
                args.agent.debug
            }
            ClientCommand::Task(task::TaskCommand::Subscribe(args))
            | ClientCommand::Subscribe(args) => args.task.agent.debug,
        }
    }
}

/// Runs a client command; `matches` are its own (the order of message parts).
pub(crate) fn run(command: ClientCommand, matches: Option<&ArgMatches>) -> ExitCode {
    let (format, streamed) = command.format();
    if command.debug() {
        // sb-client's own logs; it never logs credentials (they travel in headers it
        // does not print).
        let _ = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter("sb_client=debug,switchboard=debug")
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
