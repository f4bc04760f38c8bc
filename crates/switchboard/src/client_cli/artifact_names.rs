//! The file name an artifact's part is saved under (`task download`): the name the
//! agent gave, made safe to use as one path component in the chosen directory, else
//! one made from the artifact and the media type's extension. An agent's name is
//! untrusted input: it must not climb out of the directory (`..`, `/`, `\`, a drive
//! letter), hide a control character in a terminal, or be empty.

use sb_protocol::{Artifact, Part, PartContent, media_type_essence};

/// The longest name kept, in bytes (file systems take 255).
const MAX_NAME_BYTES: usize = 200;

/// The name of part `index` of `artifact`.
pub(crate) fn part_file_name(artifact: &Artifact, index: usize, part: &Part) -> String {
    if let Some(name) = part.filename.as_deref().and_then(sanitize) {
        return name;
    }
    let base = artifact
        .name
        .as_deref()
        .and_then(sanitize)
        .or_else(|| sanitize(&artifact.artifact_id))
        .unwrap_or_else(|| "artifact".to_owned());
    let base = match artifact.parts.len() {
        0 | 1 => base,
        _ => format!("{base}-{}", index + 1),
    };
    format!("{base}.{}", extension(part))
}

/// `name` as one safe path component, or `None` when nothing usable is left.
pub(crate) fn sanitize(name: &str) -> Option<String> {
    let cleaned: String = name
        .chars()
        .filter(|c| !c.is_control())
        .map(|c| match c {
            '/' | '\\' | ':' => '_',
            c => c,
        })
        .collect();
    // Leading dots would hide the file or, alone, name the directory or its parent.
    let cleaned = cleaned.trim().trim_start_matches('.').trim();
    if cleaned.is_empty() {
        return None;
    }
    let mut end = cleaned.len().min(MAX_NAME_BYTES);
    while !cleaned.is_char_boundary(end) {
        end -= 1;
    }
    Some(cleaned[..end].to_owned())
}

/// The extension a part's content is saved with: text by its media type, data as
/// JSON, a file by its media type.
fn extension(part: &Part) -> &'static str {
    let media = media_type_essence(part.media_type.as_deref().unwrap_or_default());
    match &part.content {
        PartContent::Text(_) if media == "text/markdown" => "md",
        PartContent::Text(_) => "txt",
        PartContent::Data(_) => "json",
        PartContent::Raw(_) | PartContent::Url(_) => file_extension(&media),
    }
}

fn file_extension(media: &str) -> &'static str {
    match media {
        "text/plain" => "txt",
        "text/markdown" => "md",
        "text/html" => "html",
        "text/csv" => "csv",
        "application/json" => "json",
        "application/xml" | "text/xml" => "xml",
        "application/pdf" => "pdf",
        "application/zip" => "zip",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/mpeg" => "mp3",
        "audio/wav" => "wav",
        "video/mp4" => "mp4",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_cannot_leave_the_directory_or_carry_controls() {
        assert_eq!(sanitize("../../etc/passwd").unwrap(), "_.._etc_passwd");
        assert_eq!(sanitize("/abs/path.txt").unwrap(), "_abs_path.txt");
        assert_eq!(sanitize("C:\\x.txt").unwrap(), "C__x.txt");
        assert_eq!(
            sanitize("re\u{1b}[31mport\n.pdf").unwrap(),
            "re[31mport.pdf"
        );
        assert_eq!(sanitize(".hidden").unwrap(), "hidden");
        for nothing in ["..", ".", "", "  ", "\u{7}"] {
            assert_eq!(sanitize(nothing), None, "{nothing:?}");
        }
        let long = "é".repeat(300);
        assert!(sanitize(&long).unwrap().len() <= MAX_NAME_BYTES);
    }

    #[test]
    fn unnamed_parts_are_named_after_the_artifact_and_the_media_type() {
        let part = |content: PartContent, media: Option<&str>| Part {
            content,
            metadata: None,
            filename: None,
            media_type: media.map(str::to_owned),
        };
        let artifact = Artifact {
            artifact_id: "a1".into(),
            name: Some("../report".into()),
            description: None,
            parts: vec![
                part(PartContent::Text("# t".into()), Some("text/markdown")),
                part(PartContent::Raw(vec![1]), Some("image/png")),
                part(PartContent::Data(serde_json::json!({})), None),
            ],
            metadata: None,
            extensions: Vec::new(),
        };
        let names: Vec<String> = artifact
            .parts
            .iter()
            .enumerate()
            .map(|(i, p)| part_file_name(&artifact, i, p))
            .collect();
        assert_eq!(names, ["_report-1.md", "_report-2.png", "_report-3.json"]);
    }
}
