//! `agents`: the fleet of a Switchboard: list or search its registry, register an agent
//! from a TOML or JSON definition (the fields of a `[[agents]]` entry), remove one
//! (docs/registry.md).

use clap::{Args, Subcommand};
use serde_json::Value;

use super::error::CliError;
use super::output::Out;
use super::render::Doc;
use super::switchboard_api::{ApiOpts, clean};

#[derive(Debug, Subcommand)]
pub(crate) enum AgentsCommand {
    /// The agents (`GET /agents`), or those matching a search (`GET /registry/agents`).
    List(ListArgs),
    /// Register (or replace) an agent from a TOML or JSON definition file.
    Register(RegisterArgs),
    /// Remove an agent from the registry.
    Remove(NameArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// Words to rank the agents by (name, skills, tags, descriptions, examples).
    #[arg(long, short = 'q')]
    pub query: Option<String>,
    /// Only agents declaring this skill id.
    #[arg(long)]
    pub skill: Option<String>,
    /// Only agents with this tag.
    #[arg(long)]
    pub tag: Option<String>,
    #[command(flatten)]
    pub api: ApiOpts,
}

#[derive(Debug, Args)]
pub(crate) struct RegisterArgs {
    /// The definition: a `.toml` file (one `[[agents]]` entry, or the entry's fields at
    /// the top) or a `.json` file.
    pub file: String,
    /// The agent's name (default: the definition's `name`).
    #[arg(long)]
    pub name: Option<String>,
    #[command(flatten)]
    pub api: ApiOpts,
}

#[derive(Debug, Args)]
pub(crate) struct NameArgs {
    pub name: String,
    #[command(flatten)]
    pub api: ApiOpts,
}

impl AgentsCommand {
    pub(crate) fn api(&self) -> &ApiOpts {
        match self {
            AgentsCommand::List(args) => &args.api,
            AgentsCommand::Register(args) => &args.api,
            AgentsCommand::Remove(args) => &args.api,
        }
    }
}

pub(crate) async fn run(command: AgentsCommand) -> Result<u8, CliError> {
    match command {
        AgentsCommand::List(args) => list(args).await,
        AgentsCommand::Register(args) => register(args).await,
        AgentsCommand::Remove(args) => {
            let out = Out::plain(&args.api.output, false);
            let path = format!("/registry/agents/{}", encode(&args.name));
            args.api.call(reqwest::Method::DELETE, &path, None).await?;
            match out.is_json() {
                true => out.json(&serde_json::json!({"removed": args.name}))?,
                false => out.write(&format!("Removed: {}\n", args.name))?,
            }
            Ok(0)
        }
    }
}

fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn list(args: ListArgs) -> Result<u8, CliError> {
    let out = Out::plain(&args.api.output, false);
    let mut filters = Vec::new();
    for (key, value) in [
        ("q", &args.query),
        ("skill", &args.skill),
        ("tag", &args.tag),
    ] {
        if let Some(value) = value {
            filters.push(format!("{key}={}", encode(value)));
        }
    }
    let path = match filters.is_empty() {
        true => "/agents".to_owned(),
        false => format!("/registry/agents?{}", filters.join("&")),
    };
    let answer = args.api.call(reqwest::Method::GET, &path, None).await?;
    if out.is_json() {
        out.json(&answer)?;
        return Ok(0);
    }
    let agents = answer["agents"].as_array().cloned().unwrap_or_default();
    let mut text = String::new();
    for agent in &agents {
        // The search answers each agent with its card; the list, with its fields.
        let card = agent.get("card").unwrap_or(agent);
        let mut doc = Doc::default();
        doc.field("Name", clean(&agent["name"]))
            .field("Card URL", clean(&agent["cardUrl"]))
            .field("Description", clean(&card["description"]));
        if let Some(score) = agent.get("score") {
            doc.field("Score", clean(score));
        }
        text.push_str(&doc.render());
        text.push('\n');
    }
    text.push_str(&format!("Agents: {}\n", agents.len()));
    out.write(&text)?;
    Ok(0)
}

/// The definition in `file`, as the JSON the registry takes.
fn definition(file: &str) -> Result<Value, CliError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| CliError::usage(format!("cannot read {file}: {e}")))?;
    if file.ends_with(".json") {
        return serde_json::from_str(&text)
            .map_err(|e| CliError::usage(format!("{file} is not JSON: {e}")));
    }
    let parsed: toml::Value =
        toml::from_str(&text).map_err(|e| CliError::usage(format!("{file} is not TOML: {e}")))?;
    let mut json =
        serde_json::to_value(parsed).map_err(|e| CliError::usage(format!("{file}: {e}")))?;
    if let Some(entries) = json.get("agents").and_then(Value::as_array) {
        match entries.as_slice() {
            [one] => json = one.clone(),
            _ => {
                return Err(CliError::usage(format!(
                    "{file} has {} [[agents]] entries: register one at a time",
                    entries.len()
                )));
            }
        }
    }
    Ok(json)
}

async fn register(args: RegisterArgs) -> Result<u8, CliError> {
    let out = Out::plain(&args.api.output, false);
    let definition = definition(&args.file)?;
    let Some(name) = args
        .name
        .clone()
        .or_else(|| definition["name"].as_str().map(str::to_owned))
    else {
        return Err(CliError::usage(
            "the definition has no name: add `name` or pass --name",
        ));
    };
    let path = format!("/registry/agents/{}", encode(&name));
    let agent = args
        .api
        .call(reqwest::Method::PUT, &path, Some(&definition))
        .await?;
    if out.is_json() {
        out.json(&agent)?;
        return Ok(0);
    }
    let mut doc = Doc::default();
    doc.field("Name", clean(&agent["name"]))
        .field("Card URL", clean(&agent["cardUrl"]))
        .field("Version", clean(&agent["version"]))
        .field("Source", clean(&agent["source"]));
    out.write(&doc.render())?;
    Ok(0)
}
