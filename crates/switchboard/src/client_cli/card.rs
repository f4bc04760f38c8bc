//! `card get` (and `card AGENT`): fetch an agent's card, check it, show it (spec §10.1).
//! `-o json` prints the card as served.

use clap::{Args, Subcommand};

use super::agent;
use super::error::CliError;
use super::opts::{AgentOpts, OutputOpts};
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
    /// Check the card and say what is wrong with it, if anything (always done; a card
    /// that fails is an error, `A2ACLI_ERR_CARD_INVALID`).
    #[arg(long)]
    pub validate: bool,
    #[command(flatten)]
    pub agent: AgentOpts,
    #[command(flatten)]
    pub output: OutputOpts,
}

pub(crate) async fn run(command: CardCommand) -> Result<u8, CliError> {
    let args = match command.sub {
        Some(CardSub::Get(args)) => args,
        None => command.args,
    };
    let reference = match (&args.agent.agent_card, &args.agent_ref) {
        (Some(reference), None) | (None, Some(reference)) => reference.clone(),
        (Some(_), Some(_)) => return Err(CliError::usage("name the agent once: AGENT or -a")),
        (None, None) => return Err(CliError::usage("name the agent: `card get AGENT`")),
    };
    let out = Out::new(&args.output, false);
    let http = agent::http_client(&args.agent)?;
    let found = agent::card(&http, &reference).await?;
    // The same choice later calls make: a card no interface of which suits is unusable.
    agent::open_with(found.clone(), &reference, &args.agent)?;
    match out.is_json() {
        true => out.json(&found.json)?,
        false => {
            let mut text = render::card(&found.card, &found.url);
            if args.validate {
                text.insert_str(0, "Valid: yes\n");
            }
            out.write(&text)?;
        }
    }
    Ok(0)
}
