//! A message's parts from the command line (spec §10.2), in the order given:
//! `--text`, `--file` (a path is sent inline, a URL by reference), `--data` (a JSON
//! file, `-` for stdin, or inline JSON) and the positional text; `--media-type` sets
//! the type of the part flag just before it.

use clap::ArgMatches;
use sb_protocol::{Part, PartContent};

use super::error::CliError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    File,
    Data,
    MediaType,
}

/// The parts `matches` name, in command-line order. `words` are the positional words
/// that make the text (their first index places it).
pub(crate) fn ordered(
    matches: Option<&ArgMatches>,
    words: &[String],
    word_index: Option<usize>,
) -> Result<Vec<Part>, CliError> {
    let mut given: Vec<(usize, Kind, String)> = Vec::new();
    if let Some(matches) = matches {
        for (id, kind) in [
            ("text", Kind::Text),
            ("file", Kind::File),
            ("data", Kind::Data),
            ("media_type", Kind::MediaType),
        ] {
            let (Some(indices), Ok(Some(values))) =
                (matches.indices_of(id), matches.try_get_many::<String>(id))
            else {
                continue;
            };
            given.extend(indices.zip(values).map(|(i, v)| (i, kind, v.clone())));
        }
    }
    if !words.is_empty() {
        given.push((
            word_index.unwrap_or(usize::MAX),
            Kind::Text,
            words.join(" "),
        ));
    }
    given.sort_by_key(|(index, ..)| *index);
    let mut parts: Vec<Part> = Vec::new();
    let mut typed_last = false;
    for (_, kind, value) in given {
        match kind {
            Kind::Text => parts.push(Part::text(value)),
            Kind::File => parts.push(file(&value)?),
            Kind::Data => parts.push(Part::data(data(&value)?)),
            Kind::MediaType => {
                let Some(last) = parts.last_mut().filter(|_| !typed_last) else {
                    return Err(CliError::usage(
                        "--media-type must follow the --text, --file or --data it types",
                    ));
                };
                last.media_type = Some(value);
                typed_last = true;
                continue;
            }
        }
        typed_last = false;
    }
    Ok(parts)
}

/// A file part: a URL by reference (the agent fetches it), a path inline.
fn file(value: &str) -> Result<Part, CliError> {
    let name = value
        .rsplit(['/', '\\'])
        .next()
        .filter(|n| !n.is_empty())
        .map(str::to_owned);
    let content = match value.starts_with("http://") || value.starts_with("https://") {
        true => PartContent::Url(value.to_owned()),
        false => PartContent::Raw(
            std::fs::read(value)
                .map_err(|e| CliError::usage(format!("--file {value}: cannot read it: {e}")))?,
        ),
    };
    Ok(Part {
        content,
        metadata: None,
        media_type: name
            .as_deref()
            .and_then(guess_media_type)
            .map(str::to_owned),
        filename: name,
    })
}

/// The media type of a file name's extension, for the common ones only: an unknown
/// extension leaves the type unset rather than guessed wrong.
fn guess_media_type(name: &str) -> Option<&'static str> {
    let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "txt" | "log" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        _ => return None,
    })
}

/// `--data`: `-` reads stdin, a JSON text is taken as is, anything else is a file.
fn data(value: &str) -> Result<serde_json::Value, CliError> {
    let text = match value {
        "-" => std::io::read_to_string(std::io::stdin())
            .map_err(|e| CliError::usage(format!("--data -: cannot read stdin: {e}")))?,
        inline if inline.trim_start().starts_with(['{', '[']) => inline.to_owned(),
        path => std::fs::read_to_string(path)
            .map_err(|e| CliError::usage(format!("--data {path}: cannot read it: {e}")))?,
    };
    serde_json::from_str(&text)
        .map_err(|e| CliError::usage(format!("--data {value}: not JSON: {e}")))
}

/// `--metadata`: a JSON object.
pub(crate) fn metadata(
    value: Option<&str>,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, CliError> {
    let Some(value) = value else {
        return Ok(None);
    };
    match serde_json::from_str(value) {
        Ok(serde_json::Value::Object(map)) => Ok(Some(map)),
        _ => Err(CliError::usage(format!(
            "--metadata {value:?} is not a JSON object (e.g. '{{\"k\":\"v\"}}')"
        ))),
    }
}
