//! The options the client commands share: which agent ([`CardOpts`]) and how to reach
//! it ([`AgentOpts`]), how to print ([`FormatOpts`]; with a reported task's view and
//! outcome, [`OutputOpts`]), how long to wait. Each command flattens only the ones it
//! uses, so its `--help` offers nothing that would do nothing. Names follow the a2a-cli
//! specification (§7.2), each with its `A2ACLI_*` variable; credentials never show their
//! values in `--help`.

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::error::CliError;

/// The output format (spec §11): `text` by default, `json` for programs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    #[default]
    Text,
    Json,
}

/// How to print, for a command that reports no task: the format alone.
#[derive(Clone, Debug, Args)]
pub(crate) struct FormatOpts {
    /// Output format: `text` (labelled fields, one per line) or `json` (the protocol's
    /// own objects; JSON Lines with --stream).
    #[arg(short = 'o', long = "output", value_enum, env = "A2ACLI_OUTPUT", default_value_t = Format::Text)]
    pub format: Format,
    /// Same as `-o json`.
    #[arg(long)]
    pub json: bool,
}

impl FormatOpts {
    pub(crate) fn format(&self) -> Format {
        match self.json {
            true => Format::Json,
            false => self.format,
        }
    }
}

/// How a reported task is shown, and whether its outcome sets the exit status.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct TaskViewOpts {
    /// Text: everything exchanged, not the concise view: the whole history, each part
    /// with its kind, media type and name, the metadata.
    #[arg(long)]
    pub verbose: bool,
    /// Exit 6 when the task ended failed, canceled or rejected, and 7 when it waits for
    /// input or auth (default: 0 for any outcome the command reported, spec §11.6).
    #[arg(long)]
    pub exit_status: bool,
}

/// How to print, for a command that reports a task: the format and the task's view.
#[derive(Clone, Debug, Args)]
pub(crate) struct OutputOpts {
    #[command(flatten)]
    pub shown: FormatOpts,
    #[command(flatten)]
    pub view: TaskViewOpts,
}

impl OutputOpts {
    pub(crate) fn format(&self) -> Format {
        self.shown.format()
    }
}

/// Which agent, for a command that reads its card and sends it nothing (`auth login`
/// and `logout`): no credentials, bindings or protocol version to choose.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct CardOpts {
    /// The agent: a bare host or origin (its `/.well-known/agent-card.json` is read), a
    /// Switchboard agent URL (`http://host/agents/NAME`), a card URL ending in `.json`,
    /// or a card file (`file://…` or a path).
    #[arg(short = 'a', long = "agent-card", env = "A2ACLI_AGENT_CARD")]
    pub agent_card: Option<String>,
    /// Accept any TLS certificate (development only: prints a warning).
    #[arg(long)]
    pub insecure: bool,
    /// Log what the client does (calls, retries, streams) and the raw messages on the
    /// wire (requests, answers, events; gRPC messages as JSON) to stderr; credentials
    /// are always redacted.
    #[arg(long)]
    pub debug: bool,
}

impl CardOpts {
    /// The agent named once, as the command's `AGENT` argument (`given`) or `-a`;
    /// `usage` completes "name the agent: " when it is named neither way.
    pub(crate) fn reference(
        &self,
        given: Option<&String>,
        usage: &str,
    ) -> Result<String, CliError> {
        match (&self.agent_card, given) {
            (Some(reference), None) | (None, Some(reference)) => Ok(reference.clone()),
            (Some(_), Some(_)) => Err(CliError::usage("name the agent once: AGENT or -a")),
            (None, None) => Err(CliError::usage(format!("name the agent: {usage}"))),
        }
    }
}

/// Which agent to talk to and how.
#[derive(Clone, Debug, Args)]
pub(crate) struct AgentOpts {
    #[command(flatten)]
    pub card: CardOpts,
    /// Bearer token sent as `Authorization: Bearer …` (also `A2ACLI_BEARER` or
    /// `SWITCHBOARD_TOKEN`; prefer the environment: a flag shows in the process table and
    /// the shell history).
    #[arg(
        long,
        visible_alias = "token",
        env = "A2ACLI_BEARER",
        hide_env_values = true
    )]
    pub bearer: Option<String>,
    /// API key, placed where the card's API-key security scheme says (header, query or
    /// cookie; `X-API-Key` when it declares none). Also `A2ACLI_API_KEY`.
    #[arg(long, env = "A2ACLI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// An A2A service parameter `KEY:VALUE`, sent as an HTTP header (repeatable).
    #[arg(long = "svc-param", value_name = "KEY:VALUE")]
    pub svc_params: Vec<String>,
    /// Binding preference, highest first (repeatable): JSONRPC, HTTP+JSON, GRPC.
    /// Default: the card's own order.
    #[arg(long = "transport", value_name = "BINDING")]
    pub transports: Vec<String>,
    /// A2A protocol version to speak (default 1.0; 0.3 only when asked for).
    #[arg(long, env = "A2ACLI_A2A_VERSION", default_value = "1.0")]
    pub a2a_version: String,
}

/// How long and how often to wait for a task.
#[derive(Clone, Debug, Args)]
pub(crate) struct WaitOpts {
    /// Interval between two reads of a task while polling (e.g. `2s`, `500ms`).
    #[arg(long, value_parser = parse_duration, default_value = "2s", env = "A2ACLI_POLL_INTERVAL")]
    pub poll_interval: Duration,
    /// Give up waiting after this long (exit 5, `A2ACLI_ERR_TIMEOUT`); the task goes on.
    #[arg(long, value_parser = parse_duration, env = "A2ACLI_TIMEOUT")]
    pub timeout: Option<Duration>,
}

/// `1500ms`, `30s`, `5m`, `1h`, or plain seconds.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 500ms, 30s, 5m)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("{text:?}: the unit must be ms, s, m or h")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_agent_is_named_once_by_argument_or_flag() {
        let given = "http://a".to_owned();
        let by_flag = CardOpts {
            agent_card: Some("http://b".into()),
            ..CardOpts::default()
        };
        let neither = CardOpts::default();
        assert_eq!(neither.reference(Some(&given), "x").unwrap(), "http://a");
        assert_eq!(by_flag.reference(None, "x").unwrap(), "http://b");
        let both = by_flag.reference(Some(&given), "x").unwrap_err();
        assert_eq!(both.message, "name the agent once: AGENT or -a");
        let none = neither.reference(None, "`card get AGENT`").unwrap_err();
        assert_eq!(none.message, "name the agent: `card get AGENT`");
        assert_eq!(none.exit, crate::client_cli::exit::USAGE);
    }

    #[test]
    fn durations_read_with_their_units() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("2 weeks").is_err());
        assert!(parse_duration("").is_err());
    }
}
