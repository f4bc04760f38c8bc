//! The `text` format (spec §11.2): one `Label: value` field per line, the same labels
//! every time, then blocks (`Label:` line, the content, a blank line) for what does not
//! fit on a line: artifacts, data parts, history. No control sequences.

use std::fmt::Write as _;

use sb_protocol::card::{AgentCard, OAuthFlows, SecurityScheme};
use sb_protocol::requests::ListTasksResponse;
use sb_protocol::{Message, Part, PartContent, Role, StreamResponse, Task, TaskState};

/// A text document: its fields, then its blocks.
#[derive(Debug, Default)]
pub(crate) struct Doc {
    fields: Vec<(String, String)>,
    blocks: Vec<(String, String)>,
}

impl Doc {
    pub(crate) fn field(&mut self, label: &str, value: impl std::fmt::Display) -> &mut Doc {
        // One field, one line: a value's own line breaks would read as other fields.
        let value = value.to_string().replace(['\r', '\n'], " ");
        self.fields.push((label.to_owned(), strip_controls(&value)));
        self
    }

    /// Blank lines inside the content are dropped: a blank line always closes a block.
    pub(crate) fn block(&mut self, label: &str, content: &str) -> &mut Doc {
        let content: Vec<&str> = content.lines().filter(|l| !l.trim().is_empty()).collect();
        let content = strip_controls(&content.join("\n"));
        self.blocks.push((label.to_owned(), content));
        self
    }

    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        for (label, value) in &self.fields {
            let _ = writeln!(out, "{label}: {value}");
        }
        for (label, content) in &self.blocks {
            let _ = writeln!(out, "{label}:\n{content}\n");
        }
        out
    }
}

/// Terminal control characters out (an agent's text must not move the cursor or colour
/// the caller's terminal); line breaks and tabs stay.
fn strip_controls(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .collect()
}

/// The short state name (`input-required`), or `unspecified` as received.
pub(crate) fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Unspecified => "unspecified",
        other => other.as_v03_str(),
    }
}

/// A message's parts as one text: text as is, data as JSON, files by name, type, size.
pub(crate) fn parts_text(parts: &[Part]) -> String {
    parts.iter().map(part_text).collect::<Vec<_>>().join("\n")
}

fn part_text(part: &Part) -> String {
    let described = |what: String| {
        let name = part.filename.as_deref().unwrap_or("(unnamed)");
        let media = part
            .media_type
            .as_deref()
            .unwrap_or("application/octet-stream");
        format!("[file {name}, {media}, {what}]")
    };
    match &part.content {
        PartContent::Text(text) => text.clone(),
        PartContent::Data(value) => {
            serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
        }
        PartContent::Raw(bytes) => described(format!("{} bytes", bytes.len())),
        PartContent::Url(url) => described(format!("at {url}")),
    }
}

/// How much of a task to show.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Detail {
    /// The history (as returned: `--history N` bounds it).
    pub history: bool,
    /// `--verbose`: each part described, the metadata, the whole history.
    pub verbose: bool,
}

/// A part described for `--verbose`: its kind, media type and name, then its content.
fn part_verbose(part: &Part) -> String {
    let kind = match &part.content {
        PartContent::Text(_) => "text",
        PartContent::Data(_) => "data",
        PartContent::Raw(_) => "file (inline)",
        PartContent::Url(_) => "file (by URL)",
    };
    let mut head = format!("[{kind}");
    if let Some(media) = &part.media_type {
        let _ = write!(head, ", {media}");
    }
    if let Some(name) = &part.filename {
        let _ = write!(head, ", {name}");
    }
    format!("{head}]\n{}", part_text(part))
}

fn parts_for(parts: &[Part], verbose: bool) -> String {
    match verbose {
        true => parts
            .iter()
            .map(part_verbose)
            .collect::<Vec<_>>()
            .join("\n"),
        false => parts_text(parts),
    }
}

/// The fields of a task, and its artifacts (and history when asked) as blocks.
pub(crate) fn task(doc: &mut Doc, task: &Task, detail: Detail) {
    let with_history = detail.history || detail.verbose;
    doc.field("Task ID", &task.id)
        .field("Context ID", &task.context_id)
        .field("State", state_name(task.status.state));
    if let Some(message) = &task.status.message {
        let text = parts_text(&message.parts);
        match text.contains('\n') {
            true => doc.block("Status Message", &text),
            false => doc.field("Status Message", text),
        };
    }
    if let Some(at) = task.status.timestamp {
        doc.field("Updated", at.to_rfc3339());
    }
    for artifact in &task.artifacts {
        let name = artifact.name.as_deref().unwrap_or(&artifact.artifact_id);
        doc.block(
            &format!("Artifact {name}"),
            &parts_for(&artifact.parts, detail.verbose),
        );
    }
    if with_history && !task.history.is_empty() {
        let lines: Vec<String> = task
            .history
            .iter()
            .map(|m| format!("[{}] {}", role(m.role), parts_for(&m.parts, detail.verbose)))
            .collect();
        doc.block("History", &lines.join("\n"));
    }
    if detail.verbose
        && let Some(metadata) = &task.metadata
    {
        let json = serde_json::to_string_pretty(metadata).unwrap_or_default();
        doc.block("Metadata", &json);
    }
}

fn role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Agent => "agent",
        Role::Unspecified => "unspecified",
    }
}

/// A direct reply (no task).
pub(crate) fn message(doc: &mut Doc, message: &Message) {
    doc.field("Message ID", &message.message_id);
    if let Some(context) = &message.context_id {
        doc.field("Context ID", context);
    }
    if let Some(task) = &message.task_id {
        doc.field("Task ID", task);
    }
    doc.field("Role", role(message.role));
    doc.block("Message", &parts_text(&message.parts));
}

/// One event of a stream, in the same fields and blocks; a status event restates the
/// task, the context and the state (spec §11.2). `id` is the stream's event id, which
/// `subscribe --last-event-id` resumes after.
pub(crate) fn event(event: &StreamResponse, id: Option<&str>) -> String {
    let mut doc = Doc::default();
    if let Some(id) = id {
        doc.field("Event ID", id);
    }
    match event {
        StreamResponse::Task(t) => {
            doc.field("Event", "task");
            task(&mut doc, t, Detail::default());
        }
        StreamResponse::Message(m) => {
            doc.field("Event", "message");
            message(&mut doc, m);
        }
        StreamResponse::StatusUpdate(update) => {
            doc.field("Event", "status-update")
                .field("Task ID", &update.task_id)
                .field("Context ID", &update.context_id)
                .field("State", state_name(update.status.state));
            if let Some(message) = &update.status.message {
                doc.field("Status Message", parts_text(&message.parts));
            }
        }
        StreamResponse::ArtifactUpdate(update) => {
            let artifact = &update.artifact;
            let name = artifact.name.as_deref().unwrap_or(&artifact.artifact_id);
            doc.field("Event", "artifact-update")
                .field("Task ID", &update.task_id)
                .field("Context ID", &update.context_id)
                .field("Append", update.append)
                .field("Last Chunk", update.last_chunk);
            doc.block(&format!("Artifact {name}"), &parts_text(&artifact.parts));
        }
    }
    let mut text = doc.render();
    if !text.ends_with("\n\n") {
        text.push('\n');
    }
    text
}

/// A page of tasks: each task's fields, a blank line between tasks, then the paging.
pub(crate) fn task_list(page: &ListTasksResponse) -> String {
    let mut out = String::new();
    for t in &page.tasks {
        let mut doc = Doc::default();
        doc.field("Task ID", &t.id)
            .field("Context ID", &t.context_id)
            .field("State", state_name(t.status.state));
        if let Some(at) = t.status.timestamp {
            doc.field("Updated", at.to_rfc3339());
        }
        out.push_str(&doc.render());
        out.push('\n');
    }
    let mut doc = Doc::default();
    doc.field("Tasks", page.tasks.len())
        .field("Total Size", page.total_size);
    if !page.next_page_token.is_empty() {
        doc.field("Next Page Token", &page.next_page_token);
    }
    out.push_str(&doc.render());
    out
}

/// A card: identity, capabilities, interfaces, security schemes, skills.
pub(crate) fn card(card: &AgentCard, url: &str) -> String {
    let mut doc = Doc::default();
    let yes_no = |flag: Option<bool>| match flag {
        Some(true) => "yes",
        _ => "no",
    };
    doc.field("Name", &card.name)
        .field("Description", &card.description)
        .field("Version", &card.version)
        .field("Card URL", url);
    if let Some(provider) = &card.provider {
        doc.field(
            "Provider",
            format!("{} ({})", provider.organization, provider.url),
        );
    }
    let caps = &card.capabilities;
    doc.field("Streaming", yes_no(caps.streaming))
        .field("Push Notifications", yes_no(caps.push_notifications))
        .field("Extended Card", yes_no(caps.extended_agent_card));
    for interface in &card.supported_interfaces {
        let tenant = interface
            .tenant
            .as_deref()
            .map(|t| format!(" (tenant {t})"))
            .unwrap_or_default();
        doc.field(
            "Interface",
            format!(
                "{} {} {}{tenant}",
                interface.protocol_binding, interface.protocol_version, interface.url
            ),
        );
    }
    for extension in &caps.extensions {
        doc.field("Extension", &extension.uri);
    }
    for (name, scheme) in &card.security_schemes {
        let kind = match scheme {
            SecurityScheme::ApiKeySecurityScheme { location, name, .. } => {
                format!("API key in {location} {name}")
            }
            SecurityScheme::HttpAuthSecurityScheme { scheme, .. } => format!("HTTP {scheme}"),
            SecurityScheme::Oauth2SecurityScheme { flows, .. } => oauth_flows(flows),
            SecurityScheme::OpenIdConnectSecurityScheme {
                open_id_connect_url,
                ..
            } => format!("OpenID Connect {open_id_connect_url}"),
        };
        doc.field("Security Scheme", format!("{name}: {kind}"));
    }
    doc.field("Input Modes", card.default_input_modes.join(", "))
        .field("Output Modes", card.default_output_modes.join(", "));
    doc.field(
        "Signature",
        match card.signatures.is_empty() {
            true => "absent",
            false => "present (not verified)",
        },
    );
    for skill in &card.skills {
        doc.field("Skill", format!("{}: {}", skill.id, skill.name));
    }
    for skill in &card.skills {
        let mut text = skill.description.clone();
        if !skill.tags.is_empty() {
            let _ = write!(text, "\nTags: {}", skill.tags.join(", "));
        }
        for example in &skill.examples {
            let _ = write!(text, "\nExample: {}", example.replace('\n', "\\n"));
        }
        doc.block(&format!("Skill {}", skill.id), &text);
    }
    doc.render()
}

/// An OAuth 2 scheme's flows and where each gets its tokens (`auth login` uses them).
fn oauth_flows(flows: &OAuthFlows) -> String {
    let named = [
        ("device code", &flows.device_code),
        ("client credentials", &flows.client_credentials),
        ("authorization code", &flows.authorization_code),
    ];
    let described: Vec<String> = named
        .iter()
        .filter_map(|(name, flow)| {
            let flow = flow.as_ref()?;
            Some(format!(
                "{name} (token URL {})",
                flow.token_url.as_deref().unwrap_or("not given")
            ))
        })
        .collect();
    format!("OAuth 2: {}", described.join(", "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn fields_stay_on_one_line_and_blocks_close_with_one_blank_line() {
        let mut doc = Doc::default();
        doc.field("State", "working\nState: forged")
            .block("Artifact a", "- one\n\n- two\n\n")
            .block("Artifact b", "x");
        assert_eq!(
            doc.render(),
            "State: working State: forged\nArtifact a:\n- one\n- two\n\nArtifact b:\nx\n\n"
        );
    }

    #[test]
    fn an_agents_control_sequences_never_reach_the_terminal() {
        let mut doc = Doc::default();
        doc.field("Status Message", "\u{1b}[31mred\u{7}")
            .block("Artifact a", "\u{1b}]0;title\u{7}ok\tcell");
        let text = doc.render();
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text:?}"
        );
        assert!(
            text.contains("[31mred") && text.contains("ok\tcell"),
            "{text:?}"
        );
    }

    #[test]
    fn parts_render_by_kind() {
        let file = Part {
            content: PartContent::Raw(vec![0; 42]),
            metadata: None,
            filename: Some("r.pdf".into()),
            media_type: Some("application/pdf".into()),
        };
        let parts = [
            Part::text("hello"),
            Part::data(serde_json::json!({"k": [1]})),
            file,
        ];
        assert_eq!(
            parts_text(&parts),
            "hello\n{\n  \"k\": [\n    1\n  ]\n}\n[file r.pdf, application/pdf, 42 bytes]"
        );
        assert_eq!(state_name(TaskState::InputRequired), "input-required");
        assert_eq!(state_name(TaskState::Unspecified), "unspecified");
    }
}
