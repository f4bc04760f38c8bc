//! `task download [AGENT] TASK_ID` (a2a-cli `A2ACLI_DOWNLOAD_001`): a task's artifacts
//! written to disk, which `send` and `task get` never do on their own (spec §10.2). Each
//! part becomes one file in `--dir` (default: the current directory): a file part's
//! inline bytes, or its URL's content (http(s) only; the caller's credentials go only
//! to the agent's own origin), a text part as `.txt` or `.md`, a data part as pretty
//! JSON. Names come from `artifact_names`. Nothing is overwritten without `--force`:
//! every target is checked before the first file is written.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use futures::StreamExt;
use sb_protocol::{Artifact, Part, PartContent, Task};
use serde_json::json;

use super::agent::{self, Agent};
use super::artifact_names::part_file_name;
use super::error::{CliError, exit};
use super::opts::AgentOpts;
use super::output::Out;
use super::render::Doc;
use super::task::{self, TaskArgs};

/// The most one URL part may bring (a runaway or endless answer stops here).
const MAX_URL_BYTES: u64 = 1 << 30;

#[derive(Debug, Args)]
pub(crate) struct DownloadArgs {
    #[command(flatten)]
    pub task: TaskArgs,
    /// The directory to write into (created if missing; default: the current one).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Only the artifact with this id or name.
    #[arg(long)]
    pub artifact: Option<String>,
    /// Overwrite files that already exist.
    #[arg(long)]
    pub force: bool,
}

/// One file to write: where, from which part.
struct Planned<'a> {
    path: PathBuf,
    artifact: &'a Artifact,
    part: &'a Part,
}

pub(crate) async fn run(args: DownloadArgs) -> Result<u8, CliError> {
    let out = Out::plain(&args.task.output, false);
    let (agent, task_id) = task::open(&args.task).await?;
    let task = agent
        .transport
        .get_task(&task_id, Some(0))
        .await
        .map_err(|e| agent.call_error(e))?;
    let artifacts = chosen_artifacts(&task, args.artifact.as_deref())?;
    let plan = plan(&artifacts, &args.dir);
    if !args.force {
        let existing: Vec<String> = plan
            .iter()
            .filter(|p| p.path.exists())
            .map(|p| p.path.display().to_string())
            .collect();
        if !existing.is_empty() {
            return Err(file_error(
                "FILE_EXISTS",
                format!("would overwrite {}", existing.join(", ")),
            )
            .with_hint("--force overwrites them; --dir writes elsewhere"));
        }
    }
    std::fs::create_dir_all(&args.dir).map_err(|e| {
        file_error(
            "WRITE_FAILED",
            format!("cannot create {}: {e}", args.dir.display()),
        )
    })?;
    let http = agent::http_client_quiet(&args.task.agent.card)?;
    let mut written = Vec::new();
    for planned in &plan {
        let bytes = write_part(&agent, &http, &args.task.agent, planned, args.force).await?;
        let media = media_type(planned.part);
        written.push(json!({
            "path": planned.path.display().to_string(),
            "bytes": bytes,
            "mediaType": media,
            "artifactId": planned.artifact.artifact_id,
            "artifactName": planned.artifact.name,
        }));
    }
    if out.is_json() {
        return out.json(&written).map(|()| 0);
    }
    if written.is_empty() {
        eprintln!("Note: task {} has no artifacts to download", task.id);
    }
    let mut doc = Doc::default();
    doc.field("Task ID", &task.id);
    for file in &written {
        doc.field(
            "File",
            format!(
                "{} ({} bytes, {})",
                file["path"].as_str().unwrap_or_default(),
                file["bytes"],
                file["mediaType"].as_str().unwrap_or_default()
            ),
        );
    }
    out.write(&doc.render()).map(|()| 0)
}

/// The task's artifacts, or the one `wanted` names (by id, else by name).
fn chosen_artifacts<'a>(
    task: &'a Task,
    wanted: Option<&str>,
) -> Result<Vec<&'a Artifact>, CliError> {
    let Some(wanted) = wanted else {
        return Ok(task.artifacts.iter().collect());
    };
    let by_id = task.artifacts.iter().find(|a| a.artifact_id == wanted);
    let by_name = || {
        task.artifacts
            .iter()
            .find(|a| a.name.as_deref() == Some(wanted))
    };
    match by_id.or_else(by_name) {
        Some(artifact) => Ok(vec![artifact]),
        None => {
            let known: Vec<&str> = task
                .artifacts
                .iter()
                .map(|a| a.name.as_deref().unwrap_or(&a.artifact_id))
                .collect();
            Err(CliError {
                code: "SWITCHBOARD_NOT_FOUND".into(),
                message: format!("task {} has no artifact {wanted:?}", task.id),
                hint: Some(match known.is_empty() {
                    true => "the task has no artifacts".into(),
                    false => format!("its artifacts: {}", known.join(", ")),
                }),
                a2a_code: None,
                exit: exit::FAILURE,
            })
        }
    }
}

/// Where each part goes; two parts that would share a name get `-2`, `-3`, … so that
/// one does not overwrite the other.
fn plan<'a>(artifacts: &[&'a Artifact], dir: &Path) -> Vec<Planned<'a>> {
    let mut taken = HashSet::new();
    let mut plan = Vec::new();
    for artifact in artifacts {
        for (index, part) in artifact.parts.iter().enumerate() {
            let name = part_file_name(artifact, index, part);
            let mut candidate = name.clone();
            let mut n = 1;
            while !taken.insert(candidate.clone()) {
                n += 1;
                candidate = match name.rsplit_once('.') {
                    Some((stem, ext)) => format!("{stem}-{n}.{ext}"),
                    None => format!("{name}-{n}"),
                };
            }
            plan.push(Planned {
                path: dir.join(candidate),
                artifact,
                part,
            });
        }
    }
    plan
}

fn media_type(part: &Part) -> String {
    match (&part.media_type, &part.content) {
        (Some(media), _) if !media.is_empty() => media.clone(),
        (_, PartContent::Text(_)) => "text/plain".into(),
        (_, PartContent::Data(_)) => "application/json".into(),
        _ => "application/octet-stream".into(),
    }
}

/// Writes one part; its size in bytes. A file left half-written by a failure is removed.
async fn write_part(
    agent: &Agent,
    http: &reqwest::Client,
    opts: &AgentOpts,
    planned: &Planned<'_>,
    force: bool,
) -> Result<u64, CliError> {
    let path = &planned.path;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(!force)
        .create(force)
        .truncate(force)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => file_error(
                "FILE_EXISTS",
                format!("{} appeared meanwhile", path.display()),
            ),
            _ => file_error(
                "WRITE_FAILED",
                format!("cannot create {}: {e}", path.display()),
            ),
        })?;
    let written = match &planned.part.content {
        PartContent::Raw(bytes) => write_all(&mut file, path, bytes).map(|()| bytes.len() as u64),
        PartContent::Text(text) => {
            write_all(&mut file, path, text.as_bytes()).map(|()| text.len() as u64)
        }
        PartContent::Data(value) => {
            let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
            let text = format!("{text}\n");
            write_all(&mut file, path, text.as_bytes()).map(|()| text.len() as u64)
        }
        PartContent::Url(url) => fetch(agent, http, opts, url, &mut file, path).await,
    };
    if written.is_err() {
        let _ = std::fs::remove_file(path);
    }
    written
}

fn write_all(file: &mut std::fs::File, path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    file.write_all(bytes).map_err(|e| {
        file_error(
            "WRITE_FAILED",
            format!("cannot write {}: {e}", path.display()),
        )
    })
}

/// A URL part's content, streamed into `file`. Credentials go along only when the URL
/// is on the agent's own origin: a file hosted elsewhere must not receive the caller's
/// token.
async fn fetch(
    agent: &Agent,
    http: &reqwest::Client,
    opts: &AgentOpts,
    url: &str,
    file: &mut std::fs::File,
    path: &Path,
) -> Result<u64, CliError> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| file_error("DOWNLOAD_REFUSED", format!("{url:?} is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(file_error(
            "DOWNLOAD_REFUSED",
            format!("{url}: only http and https URLs are fetched"),
        ));
    }
    let mut request = http.get(parsed.clone());
    let same_origin = reqwest::Url::parse(&agent.chosen.url)
        .is_ok_and(|interface| interface.origin() == parsed.origin());
    if same_origin {
        let credentials = agent::credentials(opts)?;
        request = credentials.placed_for(Some(&agent.card)).apply(request);
    }
    let response = request
        .send()
        .await
        .map_err(|e| CliError::unreachable(format!("cannot fetch {url}: {e}")))?;
    let status = response.status();
    if matches!(status.as_u16(), 401 | 403) {
        return Err(CliError::auth(
            format!("{url}: HTTP {status}"),
            same_origin && agent.had_credentials,
        ));
    }
    if !status.is_success() {
        return Err(file_error(
            "DOWNLOAD_FAILED",
            format!("{url}: HTTP {status}"),
        ));
    }
    let mut total: u64 = 0;
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| file_error("DOWNLOAD_FAILED", format!("{url}: {e}")))?;
        total += chunk.len() as u64;
        if total > MAX_URL_BYTES {
            return Err(file_error(
                "DOWNLOAD_FAILED",
                format!("{url}: more than {MAX_URL_BYTES} bytes"),
            ));
        }
        write_all(file, path, &chunk)?;
    }
    Ok(total)
}

/// A failure of the download's own (Switchboard's codes: the spec names none).
fn file_error(symbol: &str, message: String) -> CliError {
    CliError {
        code: format!("SWITCHBOARD_{symbol}"),
        message,
        hint: None,
        a2a_code: None,
        exit: exit::FAILURE,
    }
}
