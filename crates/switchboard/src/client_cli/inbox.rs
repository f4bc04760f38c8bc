//! `inbox`: the tasks waiting for a person across a Switchboard's fleet (`GET
//! /fleet/inbox`) and `inbox answer`, which answers one as its owner would
//! (`POST /fleet/inbox/{taskId}/answer`, docs/fleet.md).

use clap::{Args, Subcommand};
use sb_protocol::Task;
use serde_json::{Value, json};

use super::error::CliError;
use super::opts::TaskViewOpts;
use super::output::Out;
use super::render::{self, Doc};
use super::switchboard_api::{ApiOpts, clean};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct InboxCommand {
    #[command(subcommand)]
    pub sub: Option<InboxSub>,
    #[command(flatten)]
    pub list: ListArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum InboxSub {
    /// The waiting tasks, longest waiting first.
    List(ListArgs),
    /// Answer a waiting task: `inbox answer TASK_ID TEXT`.
    Answer(AnswerArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Only this agent's tasks.
    #[arg(long)]
    pub agent: Option<String>,
    #[command(flatten)]
    pub api: ApiOpts,
}

#[derive(Debug, Args)]
pub(crate) struct AnswerArgs {
    pub task_id: String,
    /// The answer's text.
    pub text: Vec<String>,
    /// A data part (inline JSON).
    #[arg(long)]
    pub data: Option<String>,
    /// Wait until the task ends or waits again.
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub api: ApiOpts,
    #[command(flatten)]
    pub view: TaskViewOpts,
}

impl InboxCommand {
    pub(crate) fn api(&self) -> &ApiOpts {
        match &self.sub {
            Some(InboxSub::List(args)) => &args.api,
            Some(InboxSub::Answer(args)) => &args.api,
            None => &self.list.api,
        }
    }
}

pub(crate) async fn run(command: InboxCommand) -> Result<u8, CliError> {
    match command.sub {
        Some(InboxSub::Answer(args)) => answer(args).await,
        Some(InboxSub::List(args)) => list(args).await,
        None => list(command.list).await,
    }
}

async fn list(args: ListArgs) -> Result<u8, CliError> {
    let out = Out::plain(&args.api.output, false);
    let path = match &args.agent {
        Some(agent) => format!("/fleet/inbox?agent={agent}"),
        None => "/fleet/inbox".to_owned(),
    };
    let inbox = args.api.call(reqwest::Method::GET, &path, None).await?;
    if out.is_json() {
        out.json(&inbox)?;
        return Ok(0);
    }
    let tasks = inbox["tasks"].as_array().cloned().unwrap_or_default();
    let mut text = String::new();
    for task in &tasks {
        let mut doc = Doc::default();
        let state = sb_protocol::TaskState::parse(&clean(&task["state"])).map_or_else(
            || clean(&task["state"]),
            |s| render::state_name(s).to_owned(),
        );
        doc.field("Task ID", clean(&task["taskId"]))
            .field("Context ID", clean(&task["contextId"]))
            .field("State", state)
            .field("Agent", clean(&task["agent"]))
            .field("Waiting", format!("{}s", clean(&task["waitingSecs"])));
        let question = match &task["question"] {
            Value::Null => clean(&task["message"]),
            question => clean(question),
        };
        if !question.is_empty() {
            doc.field("Question", question);
        }
        doc.field(
            "Answer",
            format!(
                "switchboard inbox answer {} '<reply>'",
                clean(&task["taskId"])
            ),
        );
        text.push_str(&doc.render());
        text.push('\n');
    }
    text.push_str(&format!("Waiting: {}\n", tasks.len()));
    out.write(&text)?;
    Ok(0)
}

async fn answer(args: AnswerArgs) -> Result<u8, CliError> {
    let out = Out::with(&args.api.output, &args.view, false);
    let mut body = json!({"wait": args.wait});
    if !args.text.is_empty() {
        body["text"] = json!(args.text.join(" "));
    }
    if let Some(data) = &args.data {
        body["data"] = serde_json::from_str(data)
            .map_err(|e| CliError::usage(format!("--data is not JSON: {e}")))?;
    }
    if body.get("text").is_none() && body.get("data").is_none() {
        return Err(CliError::usage("give the answer: a text or --data"));
    }
    let path = format!("/fleet/inbox/{}/answer", args.task_id);
    let answered = args
        .api
        .call(reqwest::Method::POST, &path, Some(&body))
        .await?;
    let task: Task = serde_json::from_value(answered["task"].clone())
        .map_err(|e| CliError::internal(format!("the answer is not a task: {e}")))?;
    match out.is_json() {
        true => out.json(&task)?,
        false => {
            let mut doc = Doc::default();
            render::task(
                &mut doc,
                &task,
                render::Detail {
                    history: false,
                    verbose: out.verbose,
                },
            );
            out.write(&doc.render())?;
        }
    }
    Ok(out.outcome(&task))
}
