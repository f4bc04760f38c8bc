//! The task state machine (digest §4.2), as a pure function over a task record.

use chrono::{DateTime, Utc};
use sb_protocol::{
    A2AError, Artifact, ErrorKind, Message, Metadata, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use sb_store::{StoredEvent, TaskRecord};

/// A change an agent (or the service itself) makes to a task. Serializable: remote
/// workers send it over the internal API.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum TaskUpdate {
    /// Move to `state`, with an optional status message (progress, question, reason).
    /// `metadata` entries are merged into the task's metadata with the change, and are
    /// the event's metadata: where a runner keeps what it must find again after a
    /// restart (a bridged task's upstream task, say). They ride on a change of status
    /// rather than make an event of their own, so that every event a client sees is a
    /// change it can see.
    Status {
        state: TaskState,
        message: Option<Message>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Metadata>,
    },
    /// Add an artifact, or extend one (`append`) with more parts.
    Artifact {
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    },
    /// A follow-up user message for a task that is not finished (typically the answer to
    /// an input request): it joins the history and the task goes (back) to working.
    Resume { message: Message },
}

/// Whether a task may move from `from` to `to`.
pub fn transition_allowed(from: TaskState, to: TaskState) -> bool {
    use TaskState::*;
    if from.is_terminal() || matches!(to, Unspecified | Submitted) {
        return false;
    }
    match from {
        Submitted | Working => true,
        InputRequired | AuthRequired => {
            matches!(to, Working | Canceled | Failed | Rejected | Completed)
        }
        _ => false,
    }
}

/// What every event of one commit shares: its task's id (one allocation for all of
/// them) and the trace that caused the commit.
#[derive(Clone, Debug)]
pub struct EventOrigin {
    pub task_id: std::sync::Arc<str>,
    pub traceparent: Option<String>,
}

impl EventOrigin {
    /// Events of `task_id` caused by the current span's trace.
    pub fn current(task_id: &str) -> EventOrigin {
        EventOrigin {
            task_id: task_id.into(),
            traceparent: sb_telemetry::traceparent(),
        }
    }

    /// The event of this origin numbered `seq`.
    pub fn event(&self, seq: u64, event: StreamResponse) -> StoredEvent {
        StoredEvent {
            task_id: self.task_id.clone(),
            seq,
            event: event.into(),
            traceparent: self.traceparent.clone(),
            json: Default::default(),
        }
    }
}

/// Applies `update` to a copy of `record`, returning the new record (with `seq` advanced)
/// and the event it produced; errors leave nothing changed.
pub fn apply(
    record: &TaskRecord,
    update: TaskUpdate,
    now: DateTime<Utc>,
) -> Result<(TaskRecord, StoredEvent), A2AError> {
    let mut next = record.clone();
    let origin = EventOrigin::current(&record.task.id);
    let event = apply_in_place(&mut next, update, now, &origin)?;
    Ok((next, event))
}

/// [`apply`] without the copy: `next` advances, or stays as it was on an error (every
/// check comes before the first change). `origin` must be `next`'s task.
pub fn apply_in_place(
    next: &mut TaskRecord,
    update: TaskUpdate,
    now: DateTime<Utc>,
    origin: &EventOrigin,
) -> Result<StoredEvent, A2AError> {
    let task_id = next.task.id.clone();
    let context_id = next.task.context_id.clone();
    let from = next.state();
    let event = match update {
        TaskUpdate::Status {
            state,
            message,
            metadata,
        } => {
            if !transition_allowed(from, state) {
                return Err(illegal(&task_id, from, state));
            }
            let message = message.map(|m| stamp(m, &task_id, &context_id));
            set_status(&mut next.task, state, message, now);
            if let Some(entries) = &metadata {
                next.task
                    .metadata
                    .get_or_insert_with(Default::default)
                    .extend(entries.clone());
            }
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id,
                context_id,
                status: next.task.status.clone(),
                metadata,
            })
        }
        TaskUpdate::Resume { message } => {
            if from.is_terminal() {
                return Err(illegal(&task_id, from, TaskState::Working));
            }
            let message = stamp(message, &task_id, &context_id);
            set_status(&mut next.task, TaskState::Working, None, now);
            next.task.history.push(message);
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id,
                context_id,
                status: next.task.status.clone(),
                metadata: None,
            })
        }
        TaskUpdate::Artifact {
            artifact,
            append,
            last_chunk,
        } => {
            if from.is_terminal() {
                return Err(A2AError::new(
                    ErrorKind::InvalidAgentResponse,
                    format!(
                        "task {task_id} is {}; artifacts can no longer change",
                        from.as_v03_str()
                    ),
                )
                .with_task(&task_id));
            }
            check_artifact(&artifact, &task_id)?;
            merge_artifact(&mut next.task.artifacts, artifact.clone(), append);
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id,
                context_id,
                artifact,
                append,
                last_chunk,
                metadata: None,
            })
        }
    };
    next.seq += 1;
    // A JSON made for the task before this change no longer describes it.
    next.task_json = Default::default();
    Ok(origin.event(next.seq, event))
}

/// What an artifact needs whatever state its task is in.
pub fn check_artifact(artifact: &Artifact, task_id: &str) -> Result<(), A2AError> {
    if artifact.artifact_id.is_empty() || artifact.parts.is_empty() {
        return Err(A2AError::new(
            ErrorKind::InvalidAgentResponse,
            "an artifact needs an artifactId and at least one part",
        )
        .with_task(task_id));
    }
    Ok(())
}

fn illegal(task_id: &str, from: TaskState, to: TaskState) -> A2AError {
    let kind = if from.is_terminal() {
        ErrorKind::UnsupportedOperation
    } else {
        ErrorKind::InvalidAgentResponse
    };
    A2AError::new(
        kind,
        format!(
            "task {task_id} cannot move from {} to {}",
            from.as_v03_str(),
            to.as_v03_str()
        ),
    )
    .with_task(task_id)
}

/// Sets the new status; the previous status message moves into the history, so the
/// conversation keeps every agent message (the Python SDK's rule).
fn set_status(task: &mut Task, state: TaskState, message: Option<Message>, now: DateTime<Utc>) {
    if let Some(previous) = task.status.message.take() {
        task.history.push(previous);
    }
    task.status = TaskStatus {
        state,
        message,
        timestamp: Some(now),
    };
}

/// Fills the task and context ids on a message that belongs to the task.
pub fn stamp(mut message: Message, task_id: &str, context_id: &str) -> Message {
    message.task_id = Some(task_id.to_owned());
    message.context_id = Some(context_id.to_owned());
    message
}

fn merge_artifact(artifacts: &mut Vec<Artifact>, artifact: Artifact, append: bool) {
    match artifacts
        .iter_mut()
        .find(|a| a.artifact_id == artifact.artifact_id)
    {
        Some(existing) if append => {
            existing.parts.extend(artifact.parts);
            if let Some(meta) = artifact.metadata {
                existing
                    .metadata
                    .get_or_insert_with(Default::default)
                    .extend(meta);
            }
            existing.extensions.extend(artifact.extensions);
        }
        Some(existing) => *existing = artifact,
        None => artifacts.push(artifact),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskState::*;
    use sb_protocol::{Part, Role};

    fn record(state: TaskState) -> TaskRecord {
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state,
                message: Some(Message::agent_text("progress")),
                timestamp: None,
            },
            artifacts: vec![],
            history: vec![],
            metadata: None,
        };
        TaskRecord {
            task,
            seq: 3,
            agent: "a".into(),
            owner: String::new(),
            created_at: Utc::now(),
            task_json: Default::default(),
        }
    }

    #[test]
    fn the_events_of_one_origin_share_its_task_id() {
        let mut record = record(Working);
        let origin = EventOrigin::current(&record.task.id);
        let status = |state| TaskUpdate::Status {
            state,
            message: None,
            metadata: None,
        };
        let first = apply_in_place(&mut record, status(Working), Utc::now(), &origin).unwrap();
        let second = apply_in_place(&mut record, status(Completed), Utc::now(), &origin).unwrap();
        assert_eq!((first.seq, second.seq), (4, 5));
        assert!(std::sync::Arc::ptr_eq(&first.task_id, &second.task_id));
        assert_eq!(&*second.task_id, "t");
    }

    #[test]
    fn metadata_rides_on_a_status_change_and_is_merged_into_the_task() {
        let mut record = record(Working);
        let origin = EventOrigin::current(&record.task.id);
        let with_entry = |state, key: &str, value: i64| {
            let mut metadata = Metadata::new();
            metadata.insert(key.into(), serde_json::json!(value));
            TaskUpdate::Status {
                state,
                message: None,
                metadata: Some(metadata),
            }
        };
        apply_in_place(
            &mut record,
            with_entry(Working, "a", 1),
            Utc::now(),
            &origin,
        )
        .unwrap();
        let event = apply_in_place(
            &mut record,
            with_entry(InputRequired, "b", 2),
            Utc::now(),
            &origin,
        )
        .unwrap();
        let metadata = record.task.metadata.clone().unwrap();
        assert_eq!(
            (metadata["a"].clone(), metadata["b"].clone()),
            (1.into(), 2.into())
        );
        assert_eq!(record.state(), InputRequired);
        let StreamResponse::StatusUpdate(update) = &*event.event else {
            panic!("a status event");
        };
        assert_eq!(update.status.state, InputRequired);
        let carried = update.metadata.as_ref().unwrap();
        assert_eq!((carried.len(), &carried["b"]), (1, &serde_json::json!(2)));
        // A refused change merges nothing.
        let refused = with_entry(Submitted, "c", 3);
        apply_in_place(&mut record, refused, Utc::now(), &origin).unwrap_err();
        assert!(!record.task.metadata.unwrap().contains_key("c"));
    }

    #[test]
    fn a_change_drops_the_json_made_for_the_state_before() {
        let mut record = record(InputRequired);
        record.to_stored_json().unwrap();
        let before = record.clone();
        assert!(before.task_json().is_some());
        let update = TaskUpdate::Status {
            state: Completed,
            message: None,
            metadata: None,
        };
        let origin = EventOrigin::current(&record.task.id);
        apply_in_place(&mut record, update, Utc::now(), &origin).unwrap();
        assert!(record.task_json().is_none());
        record.to_stored_json().unwrap();
        let json = record.task_json().expect("made for the new state");
        assert_eq!(&**json, serde_json::to_string(&record.task).unwrap());
        assert!(
            before.task_json().is_some(),
            "the copy before keeps its own"
        );
    }

    #[test]
    fn terminal_states_are_final() {
        for from in [Completed, Failed, Canceled, Rejected] {
            for to in TaskState::ALL {
                assert!(!transition_allowed(from, to), "{from:?} -> {to:?}");
            }
        }
        assert!(transition_allowed(Submitted, Completed));
        assert!(transition_allowed(Working, Working));
        assert!(transition_allowed(InputRequired, Canceled));
        assert!(!transition_allowed(InputRequired, AuthRequired));
        assert!(!transition_allowed(Working, Submitted));
    }

    #[test]
    fn status_update_advances_seq_and_keeps_history() {
        let rec = record(Working);
        let (next, event) = apply(
            &rec,
            TaskUpdate::Status {
                state: Completed,
                message: Some(Message::agent_text("done")),
                metadata: None,
            },
            Utc::now(),
        )
        .unwrap();
        assert_eq!(next.seq, 4);
        assert_eq!(event.seq, 4);
        assert_eq!(next.task.history[0].text(), "progress");
        let status_msg = next.task.status.message.as_ref().unwrap();
        assert_eq!(status_msg.task_id.as_deref(), Some("t"));
        assert_eq!(status_msg.context_id.as_deref(), Some("c"));
        let err = apply(
            &next,
            TaskUpdate::Status {
                state: Working,
                message: None,
                metadata: None,
            },
            Utc::now(),
        )
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::UnsupportedOperation);
    }

    #[test]
    fn artifacts_append_and_replace() {
        let rec = record(Working);
        let art = |text: &str| Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: vec![],
        };
        let (r1, _) = apply(
            &rec,
            TaskUpdate::Artifact {
                artifact: art("one"),
                append: false,
                last_chunk: false,
            },
            Utc::now(),
        )
        .unwrap();
        let (r2, _) = apply(
            &r1,
            TaskUpdate::Artifact {
                artifact: art("two"),
                append: true,
                last_chunk: true,
            },
            Utc::now(),
        )
        .unwrap();
        assert_eq!(r2.task.artifacts[0].parts.len(), 2);
        let (r3, _) = apply(
            &r2,
            TaskUpdate::Artifact {
                artifact: art("all"),
                append: false,
                last_chunk: true,
            },
            Utc::now(),
        )
        .unwrap();
        assert_eq!(r3.task.artifacts.len(), 1);
        assert_eq!(r3.task.artifacts[0].parts[0].as_text(), Some("all"));
    }

    #[test]
    fn resume_only_unfinished_tasks() {
        let user = Message {
            role: Role::User,
            ..Message::agent_text("answer")
        };
        assert!(
            apply(
                &record(Working),
                TaskUpdate::Resume {
                    message: user.clone()
                },
                Utc::now()
            )
            .is_ok()
        );
        assert!(
            apply(
                &record(Completed),
                TaskUpdate::Resume {
                    message: user.clone()
                },
                Utc::now()
            )
            .is_err()
        );
        let (next, _) = apply(
            &record(InputRequired),
            TaskUpdate::Resume { message: user },
            Utc::now(),
        )
        .unwrap();
        assert_eq!(next.state(), Working);
        assert_eq!(next.task.history.last().unwrap().text(), "answer");
        assert!(next.task.status.message.is_none());
    }
}
