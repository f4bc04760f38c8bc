//! Where results go (spec §11.1): the payload on stdout, in the chosen format;
//! warnings about the task's outcome on stderr; the exit status a reported task gives.

use std::io::Write as _;

use sb_protocol::{Task, TaskState};
use serde::Serialize;

use super::error::{CliError, exit};
use super::opts::{Format, FormatOpts, OutputOpts, TaskViewOpts};
use super::render;

/// How this invocation prints.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Out {
    pub format: Format,
    /// `--exit-status`: the task's outcome sets the exit status (6, 7).
    pub exit_status: bool,
    /// `--stream`: JSON Lines rather than one document.
    pub streamed: bool,
    /// `--verbose`: the full text view.
    pub verbose: bool,
}

impl Out {
    pub(crate) fn new(opts: &OutputOpts, streamed: bool) -> Out {
        Out::with(&opts.shown, &opts.view, streamed)
    }

    /// For a command that reports no task: the format alone.
    pub(crate) fn plain(opts: &FormatOpts, streamed: bool) -> Out {
        Out::with(opts, &TaskViewOpts::default(), streamed)
    }

    pub(crate) fn with(shown: &FormatOpts, view: &TaskViewOpts, streamed: bool) -> Out {
        Out {
            format: shown.format(),
            exit_status: view.exit_status,
            streamed,
            verbose: view.verbose,
        }
    }

    pub(crate) fn is_json(&self) -> bool {
        self.format == Format::Json
    }

    /// One protocol object: a document, or one line of JSON Lines under `--stream`.
    pub(crate) fn json<T: Serialize>(&self, value: &T) -> Result<(), CliError> {
        let text = match self.streamed {
            true => serde_json::to_string(value),
            false => serde_json::to_string_pretty(value),
        }
        .map_err(|e| CliError::internal(format!("cannot write the result: {e}")))?;
        self.write(&format!("{text}\n"))
    }

    /// Text, flushed now (a stream's events show as they come).
    pub(crate) fn write(&self, text: &str) -> Result<(), CliError> {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .map_err(|e| CliError::internal(format!("cannot write to stdout: {e}")))
    }

    /// The exit status for a task reported in `state`, after naming a non-success or
    /// paused outcome on stderr (spec §6.6, §11.6).
    pub(crate) fn outcome(&self, task: &Task) -> u8 {
        let state = task.status.state;
        let name = render::state_name(state);
        match state {
            TaskState::Failed | TaskState::Canceled | TaskState::Rejected => {
                eprintln!("Warning: task {} ended {name}", task.id);
                match self.exit_status {
                    true => exit::TASK_UNSUCCESSFUL,
                    false => 0,
                }
            }
            TaskState::InputRequired | TaskState::AuthRequired => {
                eprintln!("Warning: task {} waits: {name}", task.id);
                match self.exit_status {
                    true => exit::TASK_INTERRUPTED,
                    false => 0,
                }
            }
            _ => 0,
        }
    }
}
