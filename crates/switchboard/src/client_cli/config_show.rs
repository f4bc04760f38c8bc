//! `config show` (spec §8.3, read-only): each setting's effective value and where it
//! came from — a flag of this command, the environment, which file, the built-in
//! default — secrets redacted; and the files and token store in use. It never writes:
//! configuration is changed by editing the `.env` files or the environment.

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Subcommand};
use serde_json::{Value, json};

use super::config_files::{self, Setting};
use super::error::CliError;
use super::opts::{AgentOpts, FormatOpts, WaitOpts};
use super::output::Out;
use super::token_store;

/// What a redacted secret shows.
const REDACTED: &str = "<redacted>";

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// The effective settings and the source of each (flag, environment, file, default);
    /// a flag given here shows as the source of its setting.
    Show(ShowArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    #[command(flatten)]
    pub agent: AgentOpts,
    #[command(flatten)]
    pub wait: WaitOpts,
    #[command(flatten)]
    pub output: FormatOpts,
}

impl ConfigCommand {
    pub(crate) fn output(&self) -> &FormatOpts {
        let ConfigCommand::Show(args) = self;
        &args.output
    }
}

/// One line of the report.
struct Effective {
    variable: String,
    flag: String,
    value: Option<String>,
    source: String,
    file: Option<String>,
}

pub(crate) fn run(command: &ConfigCommand, matches: Option<&ArgMatches>) -> Result<u8, CliError> {
    let ConfigCommand::Show(args) = command;
    let own = matches.and_then(|m| m.subcommand_matches("show"));
    let loaded = config_files::loaded();
    let lines: Vec<Effective> = loaded
        .settings
        .iter()
        .map(|(variable, setting)| effective(variable, setting, own))
        .collect();
    let files = json!({
        "global": loaded.global.as_ref().map(|f| f.path.display().to_string()),
        "local": loaded.local.as_ref().map(|f| f.path.display().to_string()),
        "tokens": token_store::dir().map(|d| d.display().to_string()),
    });
    let out = Out::plain(&args.output, false);
    match out.is_json() {
        true => {
            let settings: Vec<Value> = lines
                .iter()
                .map(|l| {
                    json!({"name": l.variable, "flag": l.flag, "value": l.value,
                           "source": l.source, "file": l.file})
                })
                .collect();
            out.json(&json!({"files": files, "settings": settings}))?;
        }
        false => {
            let mut text = String::new();
            for (label, key) in [
                ("Global file", "global"),
                ("Local file", "local"),
                ("Token store", "tokens"),
            ] {
                let shown = files[key].as_str().unwrap_or("(none)");
                text.push_str(&format!("{label}: {shown}\n"));
            }
            text.push('\n');
            for line in &lines {
                let value = line.value.as_deref().unwrap_or("(unset)");
                let source = match &line.file {
                    Some(file) => format!("file {file}"),
                    None => line.source.clone(),
                };
                text.push_str(&format!("{}={value}  [{source}]\n", line.variable));
            }
            out.write(&text)?;
        }
    }
    Ok(0)
}

fn effective(variable: &str, setting: &Setting, own: Option<&ArgMatches>) -> Effective {
    let shown = |value: String| match setting.secret {
        true => REDACTED.to_owned(),
        false => value,
    };
    let mut line = Effective {
        variable: variable.to_owned(),
        flag: setting.flag.clone(),
        value: None,
        source: "default".into(),
        file: None,
    };
    if let Some(value) = flag_value(variable, own) {
        line.value = Some(shown(value));
        line.source = "flag".into();
    } else if let Ok(value) = std::env::var(variable) {
        line.value = Some(shown(value));
        line.source = "env".into();
    } else if let Some((path, value)) = config_files::file_source(variable) {
        line.value = Some(shown(value.to_owned()));
        line.source = "file".into();
        line.file = Some(path.display().to_string());
    } else {
        line.value = setting.default.clone().map(shown);
    }
    line
}

/// The value given on this command's own command line for the argument reading
/// `variable`, if one was.
fn flag_value(variable: &str, own: Option<&ArgMatches>) -> Option<String> {
    let own = own?;
    // `--config` is added to the command at run time, not declared with the others.
    if variable == config_files::CONFIG_VARIABLE {
        return (own.value_source(config_files::CONFIG_ARG) == Some(ValueSource::CommandLine))
            .then(|| own.get_one::<String>(config_files::CONFIG_ARG).cloned())
            .flatten();
    }
    let command = ConfigCommand::augment_subcommands(clap::Command::new("config"));
    let show = command.find_subcommand("show")?;
    let arg = show
        .get_arguments()
        .find(|a| a.get_env().and_then(|e| e.to_str()) == Some(variable))?;
    let id = arg.get_id().as_str();
    if own.value_source(id) != Some(ValueSource::CommandLine) {
        return None;
    }
    let values: Vec<String> = own
        .get_raw(id)?
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    Some(values.join(","))
}
