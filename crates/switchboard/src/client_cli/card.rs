//! `card get` (and `card AGENT`): fetch an agent's card, check it, show it (spec §10.1).
//! `-o json` prints the card as served. `--validate` also checks it against the A2A JSON
//! Schema of each version it claims (`card_schema`): the violations are listed and the
//! exit status is 1; with `-o json` the document is the report, the card in it.

use clap::{Args, Subcommand};

use super::agent;
use super::card_schema;
use super::error::{CliError, exit};
use super::opts::{AgentOpts, FormatOpts};
use super::output::Out;
use super::render;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct CardCommand {
    #[command(subcommand)]
    pub sub: Option<CardSub>,
    #[command(flatten)]
    pub args: CardArgs,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CardSub {
    /// Fetch, check and show an agent's card.
    Get(CardArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CardArgs {
    /// The agent (unless -a names it).
    #[arg(value_name = "AGENT")]
    pub agent_ref: Option<String>,
    /// Also check the card against the A2A JSON Schema of each version it claims (1.0,
    /// 0.3) and list every violation by JSON pointer; exit 1 when there is one. (The
    /// checks a card needs to be used are always made.)
    #[arg(long)]
    pub validate: bool,
    #[command(flatten)]
    pub agent: AgentOpts,
    #[command(flatten)]
    pub output: FormatOpts,
}

pub(crate) async fn run(command: CardCommand) -> Result<u8, CliError> {
    let args = match command.sub {
        Some(CardSub::Get(args)) => args,
        None => command.args,
    };
    let reference = args
        .agent
        .card
        .reference(args.agent_ref.as_ref(), "`card get AGENT`")?;
    let out = Out::plain(&args.output, false);
    let http = agent::http_client(&args.agent.card)?;
    let found = agent::card(&http, &reference).await?;
    // The same choice later calls make: a card no interface of which suits is unusable.
    agent::open_with(found.clone(), &reference, &args.agent)?;
    if args.validate {
        return validated(&out, &found);
    }
    match out.is_json() {
        true => out.json(&found.json)?,
        false => {
            out.write(&render::card(&found.card, &found.url))?;
        }
    }
    Ok(0)
}

/// The card and its schema report; exit 1 when the card breaks a schema.
fn validated(out: &Out, found: &sb_client::Discovered) -> Result<u8, CliError> {
    let (versions, violations) = card_schema::validate(&found.json).map_err(CliError::internal)?;
    let valid = violations.is_empty();
    match out.is_json() {
        true => out.json(&serde_json::json!({
            "valid": valid,
            "schemaVersions": versions,
            "violations": violations,
            "card": found.json,
        }))?,
        false => {
            let schemas = versions
                .iter()
                .map(|v| format!("A2A {v}"))
                .collect::<Vec<_>>();
            let mut head = render::Doc::default();
            head.field("Valid", if valid { "yes" } else { "no" })
                .field("Schema", schemas.join(", "));
            if !valid {
                let lines: Vec<String> = violations
                    .iter()
                    .map(|v| format!("[{}] {}: {}", v.version, pointer(&v.pointer), v.message))
                    .collect();
                head.block("Violations", &lines.join("\n"));
            }
            out.write(&head.render())?;
            out.write(&render::card(&found.card, &found.url))?;
        }
    }
    if valid {
        return Ok(0);
    }
    // The report is the output; the status says the card is invalid.
    if !out.is_json() {
        eprintln!(
            "Error: the card breaks the A2A JSON Schema ({} violations) (A2ACLI_ERR_CARD_INVALID)",
            violations.len()
        );
    }
    Ok(exit::FAILURE)
}

/// The pointer of the card itself reads as `/`.
fn pointer(pointer: &str) -> &str {
    match pointer {
        "" => "/",
        other => other,
    }
}
