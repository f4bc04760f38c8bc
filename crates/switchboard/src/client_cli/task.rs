//! `task get|cancel|list|subscribe` (spec §10.3, §10.4, Appendix A), also reachable as
//! the top-level `get`, `cancel`, `list` and `subscribe`. A task command takes
//! `[AGENT] TASK_ID`: the agent first unless `-a` names it.

use clap::{Args, Subcommand};
use sb_protocol::requests::{ListTasksRequest, ListTasksResponse};
use sb_protocol::{StreamResponse, Task, TaskState};

use super::agent::{self, Agent};
use super::error::CliError;
use super::opts::{AgentOpts, FormatOpts, TaskViewOpts, WaitOpts};
use super::output::Out;
use super::progress::Progress;
use super::{render, send, wait};

#[derive(Debug, Subcommand)]
pub(crate) enum TaskCommand {
    /// A task's state, artifacts and (with --history) messages; --wait polls until it
    /// ends or waits for you.
    Get(GetArgs),
    /// Cancel a task and print the state it is left in.
    Cancel(CancelArgs),
    /// List your tasks (filters: --state, --context-id; paging: --page-size,
    /// --page-token, --all).
    List(ListArgs),
    /// Follow a task's events until it ends or waits (--stream prints each one).
    Subscribe(SubscribeArgs),
    /// Save a task's artifacts to files: `download [AGENT] TASK_ID [--dir DIR]
    /// [--artifact ID|NAME] [--force]`.
    Download(super::download::DownloadArgs),
    /// A task's push-notification configs (same as `switchboard push`).
    #[command(subcommand)]
    PushConfig(super::push::PushCommand),
}

/// `[AGENT] TASK_ID` and the common options.
#[derive(Debug, Args)]
pub(crate) struct TaskArgs {
    /// `[AGENT] TASK_ID`.
    #[arg(value_name = "AGENT_OR_TASK", required = true, num_args = 1..=2)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub agent: AgentOpts,
    #[command(flatten)]
    pub output: FormatOpts,
}

#[derive(Debug, Args)]
pub(crate) struct CancelArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    #[command(flatten)]
    pub view: TaskViewOpts,
}

#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// Messages of the history to include (`historyLength`).
    #[arg(long)]
    pub history: Option<i32>,
    /// Poll until the task ends or waits for you.
    #[arg(long, visible_alias = "watch")]
    pub wait: bool,
    #[command(flatten)]
    pub waiting: WaitOpts,
    #[command(flatten)]
    pub view: TaskViewOpts,
}

#[derive(Debug, Args)]
pub(crate) struct SubscribeArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// Print each event as it comes (JSON Lines with -o json).
    #[arg(long)]
    pub stream: bool,
    /// Resume after this event id (servers offering the resume extension).
    #[arg(long)]
    pub last_event_id: Option<String>,
    #[command(flatten)]
    pub waiting: WaitOpts,
    #[command(flatten)]
    pub view: TaskViewOpts,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// The agent (unless -a names it).
    #[arg(value_name = "AGENT")]
    pub agent_ref: Option<String>,
    /// Only tasks in this state (e.g. working, input-required, completed).
    #[arg(long, value_parser = parse_state)]
    pub state: Option<TaskState>,
    /// Only tasks of this context.
    #[arg(long)]
    pub context_id: Option<String>,
    /// Tasks per page (1-100).
    #[arg(long)]
    pub page_size: Option<i32>,
    /// The page to read (a previous page's Next Page Token).
    #[arg(long)]
    pub page_token: Option<String>,
    /// Read every page.
    #[arg(long)]
    pub all: bool,
    /// Messages of each task's history to include.
    #[arg(long)]
    pub history: Option<i32>,
    /// Include each task's artifacts.
    #[arg(long)]
    pub include_artifacts: bool,
    #[command(flatten)]
    pub agent: AgentOpts,
    #[command(flatten)]
    pub output: FormatOpts,
}

fn parse_state(text: &str) -> Result<TaskState, String> {
    let upper = format!(
        "TASK_STATE_{}",
        text.trim().to_ascii_uppercase().replace('-', "_")
    );
    TaskState::parse(text)
        .or_else(|| TaskState::parse(&upper))
        .filter(|s| *s != TaskState::Unspecified)
        .ok_or_else(|| format!("{text:?} is not a task state (e.g. working, input-required)"))
}

pub(crate) async fn run(command: TaskCommand) -> Result<u8, CliError> {
    match command {
        TaskCommand::Get(args) => get(args).await,
        TaskCommand::Cancel(args) => cancel(args).await,
        TaskCommand::List(args) => list(args).await,
        TaskCommand::Subscribe(args) => subscribe(args).await,
        TaskCommand::Download(args) => super::download::run(args).await,
        TaskCommand::PushConfig(command) => super::push::run(command).await,
    }
}

/// The agent and the task id of `[AGENT] TASK_ID`.
pub(crate) async fn open(args: &TaskArgs) -> Result<(Agent, String), CliError> {
    let (reference, task_id) = match (&args.agent.card.agent_card, args.words.as_slice()) {
        (Some(reference), [task]) => (reference.clone(), task.clone()),
        (None, [reference, task]) => (reference.clone(), task.clone()),
        (Some(_), _) => return Err(CliError::usage("with -a, give only the task id")),
        (None, _) => {
            return Err(CliError::usage(
                "name the agent and the task: `AGENT TASK_ID`, or `-a AGENT TASK_ID`",
            ));
        }
    };
    Ok((agent::open(&reference, &args.agent).await?, task_id))
}

fn print_task(agent: &Agent, out: &Out, task: &Task, history: bool) -> Result<(), CliError> {
    if out.is_json() {
        return out.json(task);
    }
    let mut doc = render::Doc::default();
    let detail = render::Detail {
        history,
        verbose: out.verbose,
    };
    render::task(&mut doc, task, detail);
    for (label, command) in send::next_commands(agent, task) {
        doc.field(label, command);
    }
    out.write(&doc.render())
}

async fn get(args: GetArgs) -> Result<u8, CliError> {
    let out = Out::with(&args.task.output, &args.view, false);
    let (agent, task_id) = open(&args.task).await?;
    if args.wait {
        let progress = Progress::start(!out.is_json(), &task_id);
        let mut sink = |task: &Task| {
            progress.update(&StreamResponse::Task(task.clone()));
            Ok(())
        };
        let polling = wait::poll(&agent, &task_id, None, &args.waiting, &mut sink);
        wait::bounded(polling, &args.waiting, &agent, &task_id).await?;
        progress.finish();
    }
    let task = agent
        .transport
        .get_task(&task_id, args.history)
        .await
        .map_err(|e| agent.call_error(e))?;
    print_task(&agent, &out, &task, args.history.is_some())?;
    Ok(out.outcome(&task))
}

async fn cancel(args: CancelArgs) -> Result<u8, CliError> {
    let out = Out::with(&args.task.output, &args.view, false);
    let (agent, task_id) = open(&args.task).await?;
    let task = agent
        .transport
        .cancel_task(&task_id)
        .await
        .map_err(|e| agent.call_error(e))?;
    print_task(&agent, &out, &task, false)?;
    // Canceled is what was asked for: only another ending is worth a warning.
    Ok(match task.status.state {
        TaskState::Canceled => 0,
        _ => out.outcome(&task),
    })
}

async fn subscribe(args: SubscribeArgs) -> Result<u8, CliError> {
    let out = Out::with(&args.task.output, &args.view, args.stream);
    let (agent, task_id) = open(&args.task).await?;
    let stream = match agent.streams() {
        true => Some(
            agent
                .transport
                .subscribe(&task_id, args.last_event_id.as_deref())
                .await
                .map_err(|e| agent.call_error(e))?,
        ),
        false => {
            eprintln!(
                "Note: the agent does not stream (its card says so): following the task by polling"
            );
            None
        }
    };
    let progress = Progress::start(!args.stream && !out.is_json(), &task_id);
    let mut sink = |event: &StreamResponse, id: Option<&str>| {
        progress.update(event);
        match (args.stream, out.is_json()) {
            (false, _) => Ok(()),
            (true, true) => out.json(event),
            (true, false) => out.write(&render::event(event, id)),
        }
    };
    let following = wait::follow(&agent, &task_id, stream, None, &args.waiting, &mut sink);
    wait::bounded(following, &args.waiting, &agent, &task_id).await?;
    progress.finish();
    let task = agent
        .transport
        .get_task(&task_id, None)
        .await
        .map_err(|e| agent.call_error(e))?;
    if !args.stream {
        print_task(&agent, &out, &task, false)?;
    }
    Ok(out.outcome(&task))
}

async fn list(args: ListArgs) -> Result<u8, CliError> {
    let out = Out::plain(&args.output, false);
    let reference = args
        .agent
        .card
        .reference(args.agent_ref.as_ref(), "`list AGENT` or `list -a AGENT`")?;
    let agent = agent::open(&reference, &args.agent).await?;
    let mut request = ListTasksRequest {
        tenant: agent.chosen.tenant.clone(),
        context_id: args.context_id.clone(),
        status: args.state,
        page_size: args.page_size,
        page_token: args.page_token.clone(),
        history_length: args.history,
        status_timestamp_after: None,
        include_artifacts: args.include_artifacts,
    };
    let mut page = agent
        .transport
        .list_tasks(&request)
        .await
        .map_err(|e| agent.call_error(e))?;
    // --all: the pages after it, gathered into one response (one document in JSON).
    while args.all && !page.next_page_token.is_empty() {
        request.page_token = Some(page.next_page_token.clone());
        let next: ListTasksResponse = agent
            .transport
            .list_tasks(&request)
            .await
            .map_err(|e| agent.call_error(e))?;
        page.tasks.extend(next.tasks);
        page.next_page_token = next.next_page_token;
    }
    match out.is_json() {
        true => out.json(&page)?,
        false => out.write(&render::task_list(&page))?,
    }
    Ok(0)
}
