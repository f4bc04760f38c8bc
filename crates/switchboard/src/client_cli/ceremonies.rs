//! `ceremonies`: a Switchboard's scheduled invocations through the fleet guide's API
//! (`/api/ceremonies`, docs/fleet.md): list them, create one from a file (the same
//! YAML, or JSON, as a file of the ceremonies directory), pause or resume one, fire one
//! now, show its runs, delete one. The key goes in `X-API-Key`: an agent's own key
//! (`--api-key`, `SWITCHBOARD_API_KEY`), or the admin token (`--token`), which is the
//! admin key.

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::error::CliError;
use super::output::Out;
use super::render::Doc;
use super::switchboard_api::{ApiOpts, clean};

#[derive(Debug, Subcommand)]
pub(crate) enum CeremoniesCommand {
    /// The ceremonies in force (the files' and the API's), with their next and last run.
    List(KeyArgs),
    /// Create a ceremony from a YAML or JSON file (a ceremony file's format).
    Create(CreateArgs),
    /// Fire a ceremony now (a run of its own, beside its schedule).
    Run(IdArgs),
    /// A ceremony's runs, newest first: each target's task and how it ended.
    Runs(IdArgs),
    /// Pause a ceremony (its firings are skipped until it is resumed).
    Pause(IdArgs),
    /// Resume a paused ceremony (from its next firing: the paused ones are not caught up).
    Resume(IdArgs),
    /// Delete a ceremony made through the API.
    Delete(IdArgs),
}

/// Where the Switchboard is, and the key.
#[derive(Debug, Args)]
pub(crate) struct KeyArgs {
    /// An agent's own key (its definition's `api_keys`), sent as `X-API-Key`; without
    /// one, `--token` (the admin token) is sent there.
    #[arg(long, env = "SWITCHBOARD_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    #[command(flatten)]
    pub api: ApiOpts,
}

#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// The ceremony: YAML or JSON, as in the ceremonies directory.
    pub file: std::path::PathBuf,
    #[command(flatten)]
    pub key: KeyArgs,
}

#[derive(Debug, Args)]
pub(crate) struct IdArgs {
    pub id: String,
    #[command(flatten)]
    pub key: KeyArgs,
}

impl CeremoniesCommand {
    pub(crate) fn key(&self) -> &KeyArgs {
        match self {
            CeremoniesCommand::List(key) => key,
            CeremoniesCommand::Create(args) => &args.key,
            CeremoniesCommand::Run(args)
            | CeremoniesCommand::Runs(args)
            | CeremoniesCommand::Pause(args)
            | CeremoniesCommand::Resume(args)
            | CeremoniesCommand::Delete(args) => &args.key,
        }
    }
}

impl KeyArgs {
    /// A call with the key in `X-API-Key`.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, CliError> {
        let key = self.api_key.clone().or_else(|| self.api.token.clone());
        let key = key.filter(|k| !k.is_empty()).ok_or_else(|| {
            CliError::auth("the ceremonies' API takes a key in X-API-Key", false).with_hint(
                "pass an agent's own key with --api-key (SWITCHBOARD_API_KEY), or the admin token with --token",
            )
        })?;
        self.api
            .call_with_headers(method, path, body, &[("x-api-key", key.as_str())])
            .await
    }
}

pub(crate) async fn run(command: CeremoniesCommand) -> Result<u8, CliError> {
    let out = Out::plain(&command.key().api.output, false);
    let (answer, shown) = match &command {
        CeremoniesCommand::List(key) => {
            let listed = key
                .call(reqwest::Method::GET, "/api/ceremonies", None)
                .await?;
            if !out.is_json() {
                out.write(&list_text(&listed))?;
                return Ok(0);
            }
            (listed, None)
        }
        CeremoniesCommand::Create(args) => {
            let text = std::fs::read_to_string(&args.file).map_err(|e| {
                CliError::usage(format!("cannot read {}: {e}", args.file.display()))
            })?;
            let ceremony: Value = serde_yaml_ng::from_str(&text).map_err(|e| {
                CliError::usage(format!(
                    "{} is not a ceremony (YAML or JSON): {e}",
                    args.file.display()
                ))
            })?;
            let made = args
                .key
                .call(
                    reqwest::Method::POST,
                    "/api/ceremonies/create",
                    Some(&ceremony),
                )
                .await?;
            let shown = made.clone();
            (made, Some(shown))
        }
        CeremoniesCommand::Run(args) => {
            let path = format!("/api/ceremonies/{}/run", args.id);
            let fired = args.key.call(reqwest::Method::POST, &path, None).await?;
            let run = fired["run"].clone();
            (fired, Some(run))
        }
        CeremoniesCommand::Runs(args) => {
            let path = format!("/api/ceremonies/{}/runs", args.id);
            let runs = args.key.call(reqwest::Method::GET, &path, None).await?;
            if !out.is_json() {
                let mut text = String::new();
                for run in runs["runs"].as_array().into_iter().flatten() {
                    text.push_str(&run_text(run));
                    text.push('\n');
                }
                text.push_str(&format!(
                    "Runs: {}\n",
                    runs["runs"].as_array().map_or(0, Vec::len)
                ));
                out.write(&text)?;
                return Ok(0);
            }
            (runs, None)
        }
        CeremoniesCommand::Pause(args) | CeremoniesCommand::Resume(args) => {
            let enabled = matches!(command, CeremoniesCommand::Resume(_));
            let path = format!("/api/ceremonies/{}/update", args.id);
            let body = json!({"enabled": enabled});
            let updated = args
                .key
                .call(reqwest::Method::POST, &path, Some(&body))
                .await?;
            let shown = updated.clone();
            (updated, Some(shown))
        }
        CeremoniesCommand::Delete(args) => {
            let path = format!("/api/ceremonies/{}/delete", args.id);
            let deleted = args.key.call(reqwest::Method::POST, &path, None).await?;
            if !out.is_json() {
                out.write(&format!("Deleted: {}\n", clean(&deleted["deleted"])))?;
                return Ok(0);
            }
            (deleted, None)
        }
    };
    match (out.is_json(), shown) {
        (false, Some(shown)) if shown.get("tasks").is_some() => out.write(&run_text(&shown))?,
        (false, Some(shown)) => out.write(&ceremony_text(&shown).render())?,
        _ => out.json(&answer)?,
    }
    Ok(0)
}

/// One ceremony as labelled fields.
fn ceremony_text(ceremony: &Value) -> Doc {
    let mut doc = Doc::default();
    doc.field("Ceremony", clean(&ceremony["id"]))
        .field("Name", clean(&ceremony["name"]))
        .field("Schedule", clean(&ceremony["schedule"]))
        .field("Skill", clean(&ceremony["skill"]))
        .field("Targets", targets(ceremony))
        .field(
            "Enabled",
            ceremony["enabled"].as_bool().unwrap_or(true).to_string(),
        );
    if let Some(by) = ceremony["createdBy"].as_str() {
        doc.field("Created by", clean(&json!(by)));
    }
    if ceremony["fromFile"].as_bool() == Some(true) {
        doc.field("From", "a file of the ceremonies directory");
    }
    if let Some(next) = ceremony["nextRun"].as_str() {
        doc.field("Next run", clean(&json!(next)));
    }
    doc
}

fn targets(ceremony: &Value) -> String {
    let names: Vec<String> = ceremony["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(clean)
        .collect();
    names.join(", ")
}

fn list_text(listed: &Value) -> String {
    let ceremonies = listed["ceremonies"].as_array().cloned().unwrap_or_default();
    let mut text = String::new();
    for ceremony in &ceremonies {
        let mut doc = ceremony_text(ceremony);
        if let Some(last) = ceremony.get("lastRun").filter(|r| !r.is_null()) {
            doc.field("Last run", clean(&last["scheduledFor"]))
                .field("Last trigger", clean(&last["trigger"]));
        }
        text.push_str(&doc.render());
        text.push('\n');
    }
    text.push_str(&format!("Ceremonies: {}\n", ceremonies.len()));
    text
}

/// A run: when, why, and each target's task.
fn run_text(run: &Value) -> String {
    let mut doc = Doc::default();
    doc.field("Ceremony", clean(&run["ceremony"]))
        .field("Scheduled for", clean(&run["scheduledFor"]))
        .field("Trigger", clean(&run["trigger"]));
    for task in run["tasks"].as_array().into_iter().flatten() {
        let state = match (&task["state"], &task["error"]) {
            (Value::Null, Value::Null) => "sent".to_owned(),
            (Value::Null, error) => format!("not sent: {}", clean(error)),
            (state, _) => clean(state),
        };
        doc.field(
            "Target",
            format!(
                "{} task {} {}",
                clean(&task["target"]),
                clean(&task["taskId"]),
                state
            ),
        );
    }
    doc.render()
}
