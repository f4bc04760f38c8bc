//! `send` and `answer` (spec §10.2): a message to start or continue a task; by default
//! the command waits until the task ends or waits for the caller, `--async` returns the
//! task at once, `--stream` prints each event as it comes.

use clap::{ArgMatches, Args};
use futures::StreamExt;
use sb_protocol::requests::{SendMessageConfiguration, SendMessageRequest};
use sb_protocol::{Message, Part, Role, SendMessageResponse, StreamResponse, Task};

use super::agent::{self, Agent};
use super::error::CliError;
use super::opts::{AgentOpts, OutputOpts, WaitOpts};
use super::output::Out;
use super::progress::Progress;
use super::{parts, render, wait};

#[derive(Debug, Args)]
pub(crate) struct SendArgs {
    /// `[AGENT] [TEXT]…`: the agent (unless -a names it), then the message text.
    #[arg(value_name = "AGENT_OR_TEXT")]
    pub words: Vec<String>,
    /// A text part (repeatable; parts keep their order).
    #[arg(long)]
    pub text: Vec<String>,
    /// A file part: a path (sent inline) or a URL (sent by reference).
    #[arg(long)]
    pub file: Vec<String>,
    /// A data part: a JSON file, `-` for stdin, or inline JSON.
    #[arg(long)]
    pub data: Vec<String>,
    /// The media type of the part flag just before it.
    #[arg(long)]
    pub media_type: Vec<String>,
    #[command(flatten)]
    pub turn: TurnOpts,
}

/// What `send` and `answer` share.
#[derive(Debug, Args)]
pub(crate) struct TurnOpts {
    /// Continue this task (e.g. answer its question).
    #[arg(long, env = "A2ACLI_TASK_ID")]
    pub task_id: Option<String>,
    /// Start a new task in this context (with --task-id: must be the task's).
    #[arg(long, env = "A2ACLI_CONTEXT_ID")]
    pub context_id: Option<String>,
    /// Metadata of the request, a JSON object (e.g. '{"skill":"consolidate"}').
    #[arg(long)]
    pub metadata: Option<String>,
    /// Do not wait: print the task as the agent first answers and return.
    #[arg(
        long = "async",
        visible_alias = "no-wait",
        alias = "return-immediately"
    )]
    pub no_wait: bool,
    /// Wait until the task ends or waits for you (the default).
    #[arg(long, conflicts_with = "no_wait")]
    pub wait: bool,
    /// Print each event as it comes (JSON Lines with -o json).
    #[arg(long, conflicts_with = "no_wait")]
    pub stream: bool,
    /// Messages of the task's history to return.
    #[arg(long)]
    pub history: Option<i32>,
    #[command(flatten)]
    pub agent: AgentOpts,
    #[command(flatten)]
    pub output: OutputOpts,
    #[command(flatten)]
    pub waiting: WaitOpts,
}

#[derive(Debug, Args)]
pub(crate) struct AnswerArgs {
    /// The agent the task runs on.
    pub agent_ref: String,
    /// The task waiting for input.
    pub answer_task_id: String,
    /// The answer.
    #[arg(required = true)]
    pub reply: Vec<String>,
    #[command(flatten)]
    pub turn: TurnOpts,
}

/// `send`: the agent is the first word unless `-a` named it.
pub(crate) async fn send(args: SendArgs, matches: Option<&ArgMatches>) -> Result<u8, CliError> {
    let mut words = args.words;
    let mut indices: Vec<usize> = matches
        .and_then(|m| m.indices_of("words"))
        .map(Iterator::collect)
        .unwrap_or_default();
    let reference = match args.turn.agent.card.agent_card.clone() {
        Some(reference) => reference,
        None if words.is_empty() => {
            return Err(CliError::usage(
                "name the agent: `switchboard send AGENT TEXT` or `switchboard send -a AGENT --text TEXT`",
            ));
        }
        None => {
            if !indices.is_empty() {
                indices.remove(0);
            }
            words.remove(0)
        }
    };
    // The text stands where its first word was given.
    let word_index = indices.first().copied();
    let parts = parts::ordered(matches, &words, word_index)?;
    turn(&reference, parts, args.turn).await
}

/// `answer AGENT TASK TEXT`: `send --task-id TASK` with the text.
pub(crate) async fn answer(args: AnswerArgs) -> Result<u8, CliError> {
    let mut turn_opts = args.turn;
    turn_opts.task_id = Some(args.answer_task_id);
    let parts = vec![Part::text(args.reply.join(" "))];
    turn(&args.agent_ref, parts, turn_opts).await
}

async fn turn(reference: &str, parts: Vec<Part>, opts: TurnOpts) -> Result<u8, CliError> {
    if parts.is_empty() {
        return Err(CliError::usage(
            "the message is empty: give a text, --text, --file or --data",
        ));
    }
    let out = Out::new(&opts.output, opts.stream);
    let agent = agent::open(reference, &opts.agent).await?;
    let message = Message {
        message_id: sb_protocol::new_id(),
        context_id: opts.context_id.clone(),
        task_id: opts.task_id.clone(),
        role: Role::User,
        parts,
        metadata: None,
        extensions: Vec::new(),
        reference_task_ids: Vec::new(),
    };
    let mut request = SendMessageRequest {
        tenant: agent.chosen.tenant.clone(),
        message,
        configuration: Some(SendMessageConfiguration {
            history_length: opts.history,
            // Without a stream the task is followed by polling: the first answer comes
            // at once so that the progress display shows from the start.
            return_immediately: true,
            ..SendMessageConfiguration::default()
        }),
        metadata: parts::metadata(opts.metadata.as_deref())?,
    };
    tracing::debug!(
        message_id = %request.message.message_id,
        task_id = ?request.message.task_id,
        context_id = ?request.message.context_id,
        parts = request.message.parts.len(),
        streaming = agent.streams() && !opts.no_wait,
        "sending"
    );
    if opts.no_wait {
        let response = agent
            .transport
            .send(&request)
            .await
            .map_err(|e| agent.call_error(e))?;
        return report(&agent, &out, response, &opts);
    }
    let streaming = agent.streams();
    if opts.stream && !streaming {
        eprintln!(
            "Note: the agent does not stream (its card says so): following the task by polling"
        );
    }
    let mut first_id = None;
    let (first, stream) = match streaming {
        true => {
            if let Some(config) = request.configuration.as_mut() {
                config.return_immediately = false;
            }
            let mut stream = agent
                .transport
                .send_streaming(&request)
                .await
                .map_err(|e| agent.call_error(e))?;
            let first = match stream.next().await {
                Some(Ok(item)) => {
                    first_id = item.id;
                    item.event
                }
                Some(Err(e)) => return Err(agent.call_error(e)),
                None => {
                    return Err(CliError::internal(
                        "the agent closed the stream without an event",
                    ));
                }
            };
            (first, Some(stream))
        }
        false => {
            let response = agent
                .transport
                .send(&request)
                .await
                .map_err(|e| agent.call_error(e))?;
            let first = match response {
                SendMessageResponse::Task(task) => StreamResponse::Task(task),
                SendMessageResponse::Message(message) => StreamResponse::Message(message),
            };
            (first, None)
        }
    };
    let task_id = match &first {
        StreamResponse::Message(message) => {
            emit(&out, opts.stream, &first, first_id.as_deref())?;
            if !opts.stream {
                report(
                    &agent,
                    &out,
                    SendMessageResponse::Message(message.clone()),
                    &opts,
                )?;
            }
            return Ok(0);
        }
        StreamResponse::Task(task) => task.id.clone(),
        StreamResponse::StatusUpdate(update) => update.task_id.clone(),
        StreamResponse::ArtifactUpdate(update) => update.task_id.clone(),
    };
    emit(&out, opts.stream, &first, first_id.as_deref())?;
    let progress = Progress::start(!opts.stream && !out.is_json(), &task_id);
    progress.update(&first);
    if !first.ends_stream() {
        let mut sink = |event: &StreamResponse, id: Option<&str>| {
            progress.update(event);
            emit(&out, opts.stream, event, id)
        };
        let seen = match &first {
            StreamResponse::Task(task) => Some(task.clone()),
            _ => None,
        };
        let following = wait::follow(&agent, &task_id, stream, seen, &opts.waiting, &mut sink);
        wait::bounded(following, &opts.waiting, &agent, &task_id).await?;
    }
    progress.finish();
    let task = agent
        .transport
        .get_task(&task_id, opts.history)
        .await
        .map_err(|e| agent.call_error(e))?;
    match opts.stream {
        false => report(&agent, &out, SendMessageResponse::Task(task), &opts),
        true => Ok(out.outcome(&task)),
    }
}

/// One event of `--stream`: a JSON line, or its text.
fn emit(
    out: &Out,
    streaming: bool,
    event: &StreamResponse,
    id: Option<&str>,
) -> Result<(), CliError> {
    if !streaming {
        return Ok(());
    }
    match out.is_json() {
        true => out.json(event),
        false => out.write(&render::event(event, id)),
    }
}

/// The result of a send that did not stream: `SendMessageResponse` in JSON, the task or
/// message in text, with the command that answers a waiting task.
fn report(
    agent: &Agent,
    out: &Out,
    response: SendMessageResponse,
    opts: &TurnOpts,
) -> Result<u8, CliError> {
    if out.is_json() {
        out.json(&response)?;
    } else {
        let mut doc = render::Doc::default();
        match &response {
            SendMessageResponse::Task(task) => {
                render::task(
                    &mut doc,
                    task,
                    render::Detail {
                        history: opts.history.is_some(),
                        verbose: out.verbose,
                    },
                );
                for (label, command) in next_commands(agent, task) {
                    doc.field(label, command);
                }
            }
            SendMessageResponse::Message(message) => render::message(&mut doc, message),
        }
        out.write(&doc.render())?;
    }
    Ok(match &response {
        // Not waited for: whatever state it is in now is not its outcome.
        SendMessageResponse::Task(_) if opts.no_wait => 0,
        SendMessageResponse::Task(task) => out.outcome(task),
        SendMessageResponse::Message(_) => 0,
    })
}

/// The commands to go on with a task: [`next_command`], and `Download` when its
/// artifacts hold a file part (spec §10.2: files are written to disk only on request).
pub(crate) fn next_commands(agent: &Agent, task: &Task) -> Vec<(&'static str, String)> {
    let mut commands: Vec<_> = next_command(agent, task).into_iter().collect();
    let has_file = task.artifacts.iter().flat_map(|a| &a.parts).any(|p| {
        matches!(
            p.content,
            sb_protocol::PartContent::Raw(_) | sb_protocol::PartContent::Url(_)
        )
    });
    if has_file {
        let agent_ref = shell_quote(&agent.reference);
        let command = format!("switchboard task download -a {agent_ref} {}", task.id);
        commands.push(("Download", command));
    }
    commands
}

/// The command to go on with a task (spec §8.2): for one waiting for input, the one
/// that answers it (`Resume`); for one still running, the one that waits for it
/// (`Follow`); none for a task that ended.
fn next_command(agent: &Agent, task: &Task) -> Option<(&'static str, String)> {
    let agent_ref = shell_quote(&agent.reference);
    let state = task.status.state;
    if state == sb_protocol::TaskState::InputRequired {
        return Some((
            "Resume",
            format!(
                "switchboard send -a {agent_ref} --task-id {} --context-id {} '<reply>'",
                task.id, task.context_id
            ),
        ));
    }
    if state.is_terminal() || state.is_interrupted() {
        return None;
    }
    Some((
        "Follow",
        format!("switchboard task get -a {agent_ref} --wait {}", task.id),
    ))
}

pub(crate) fn shell_quote(text: &str) -> String {
    match text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/:._-@".contains(c))
    {
        true => text.to_owned(),
        false => format!("'{}'", text.replace('\'', r"'\''")),
    }
}
