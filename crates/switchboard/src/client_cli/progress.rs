//! The progress display while a task runs: a spinner and a status line (the state and
//! the agent's latest progress message) on stderr, only when stderr is a terminal and
//! the output is `text` (never in the machine-readable forms, spec §11.1). Cleared
//! before the result prints, so what stays on the terminal is the result alone.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use sb_protocol::StreamResponse;

use super::render;

/// The display, or nothing when it is off.
#[derive(Debug)]
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A spinner when `wanted` and stderr is a terminal.
    pub(crate) fn start(wanted: bool, task_id: &str) -> Progress {
        if !wanted || !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix} [{elapsed}] {msg}") {
            bar.set_style(style);
        }
        bar.set_prefix(format!("task {task_id}"));
        bar.set_message("submitted");
        bar.enable_steady_tick(Duration::from_millis(100));
        Progress { bar: Some(bar) }
    }

    /// Shows the state and message an event carries.
    pub(crate) fn update(&self, event: &StreamResponse) {
        let Some(bar) = &self.bar else {
            return;
        };
        let (state, message) = match event {
            StreamResponse::Task(t) => (t.status.state, t.status.message.as_ref()),
            StreamResponse::StatusUpdate(s) => (s.status.state, s.status.message.as_ref()),
            StreamResponse::ArtifactUpdate(a) => {
                let name = a
                    .artifact
                    .name
                    .as_deref()
                    .unwrap_or(&a.artifact.artifact_id);
                bar.set_message(format!("working: receiving artifact {name}"));
                return;
            }
            StreamResponse::Message(_) => return,
        };
        let text = message
            .map(|m| render::parts_text(&m.parts).replace('\n', " "))
            .filter(|t| !t.is_empty());
        match text {
            Some(text) => bar.set_message(format!("{}: {text}", render::state_name(state))),
            None => bar.set_message(render::state_name(state)),
        }
    }

    /// Clears the display (the result follows on stdout).
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
