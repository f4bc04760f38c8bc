//! Mirrors an upstream task into the Switchboard task, in order and once: each upstream
//! event is compared with what the Switchboard task already holds, and only what is new
//! is reported. A snapshot (the task a poll read, or the first event of a
//! resubscription) is reduced to its differences, so after a restart or a broken stream
//! nothing is mirrored twice: upstream message and artifact ids are kept as they are.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crate::link::Link;
use sb_agent::Reporter;
use sb_protocol::{
    A2AError, Artifact, Message, Part, Role, StreamResponse, Task, TaskState, TaskStatus,
};

/// Where the mirroring left the turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mirrored {
    /// The upstream task goes on.
    Running,
    /// It ended or waits for input: so does the Switchboard task, and the turn is over.
    Settled(TaskState),
}

/// The Switchboard task as the mirror has reported it.
#[derive(Debug)]
pub struct Mirror {
    /// The task's link to its upstream task; its trajectory (outcome, latency) is
    /// recorded just before the task settles.
    pub link: Link,
    started: Instant,
    reporter: Reporter,
    state: TaskState,
    /// Ids of the messages the task holds (history and status).
    messages: BTreeSet<String>,
    artifacts: BTreeMap<String, Vec<Part>>,
}

impl Mirror {
    /// A mirror into `task` (as it stands when the turn starts), reporting to `reporter`.
    pub fn new(task: &Task, link: Link, reporter: Reporter) -> Mirror {
        Mirror {
            link,
            started: Instant::now(),
            reporter,
            state: task.status.state,
            messages: task
                .history
                .iter()
                .chain(&task.status.message)
                .map(|m| m.message_id.clone())
                .collect(),
            artifacts: task
                .artifacts
                .iter()
                .map(|a| (a.artifact_id.clone(), a.parts.clone()))
                .collect(),
        }
    }

    /// The task was moved to `state` outside the mirror (a routing agent saying where it
    /// sent the task): the mirror does not report that move again.
    pub fn moved_to(&mut self, state: TaskState) {
        self.state = state;
    }

    /// Mirrors one upstream event.
    pub async fn apply(&mut self, event: StreamResponse) -> Result<Mirrored, A2AError> {
        match event {
            StreamResponse::Task(task) => {
                // What the agent said while nobody followed (a restart, a broken
                // stream): each message it holds that this task does not, in order. The
                // status message is said with its status (@a2a-js/sdk also keeps it in
                // the history).
                let status_message = task.status.message.as_ref().map(|m| m.message_id.clone());
                let unseen: Vec<Message> = task
                    .history
                    .into_iter()
                    .filter(|m| m.role == Role::Agent && !self.messages.contains(&m.message_id))
                    .filter(|m| Some(&m.message_id) != status_message.as_ref())
                    .collect();
                for message in unseen {
                    self.said(message).await?;
                }
                for artifact in task.artifacts {
                    self.artifact(artifact, false, false).await?;
                }
                self.status(task.status).await
            }
            StreamResponse::StatusUpdate(update) => self.status(update.status).await,
            StreamResponse::ArtifactUpdate(update) => {
                self.artifact(update.artifact, update.append, update.last_chunk)
                    .await?;
                Ok(Mirrored::Running)
            }
            StreamResponse::Message(message) => {
                self.said(message).await?;
                Ok(Mirrored::Running)
            }
        }
    }

    /// A message of the agent's while its task runs: it becomes the status message
    /// (and so joins the history), the task working.
    async fn said(&mut self, message: Message) -> Result<(), A2AError> {
        if self.messages.contains(&message.message_id) || self.state.is_terminal() {
            return Ok(());
        }
        let status = TaskStatus {
            state: TaskState::Working,
            message: Some(message),
            timestamp: None,
        };
        self.status(status).await.map(drop)
    }

    async fn status(&mut self, status: TaskStatus) -> Result<Mirrored, A2AError> {
        let state = match status.state {
            // Switchboard's task already exists; an upstream that has not started yet
            // says nothing new.
            TaskState::Submitted | TaskState::Unspecified => return Ok(Mirrored::Running),
            state => state,
        };
        // A question the task holds already was answered: a snapshot taken before the
        // upstream took the answer (the first event of a follow-up's stream, a poll)
        // still shows it, and waiting again for it would end the turn with the answer
        // unheard.
        let asked_before = status
            .message
            .as_ref()
            .is_some_and(|m| self.messages.contains(&m.message_id));
        if state.is_interrupted() && asked_before && !self.state.is_interrupted() {
            return Ok(Mirrored::Running);
        }
        // A message the task holds already is not said again (a snapshot repeats it).
        let fresh = status
            .message
            .filter(|m| !self.messages.contains(&m.message_id));
        let same = state == self.state && fresh.is_none();
        let settles = state.is_terminal() || state.is_interrupted();
        if same && !settles {
            return Ok(Mirrored::Running);
        }
        if !matches!(
            state,
            TaskState::Working | TaskState::Rejected | TaskState::Canceled
        ) {
            self.taken().await?;
        }
        if !same {
            if settles {
                self.record_outcome(state.as_v03_str());
            }
            let message_id = fresh.as_ref().map(|m| m.message_id.clone());
            self.reporter.status(state, fresh).await?;
            self.state = state;
            if let Some(id) = &message_id {
                self.messages.insert(id.clone());
            }
        }
        Ok(match settles {
            true => Mirrored::Settled(state),
            false => Mirrored::Running,
        })
    }

    /// The upstream took the task: a task still submitted here goes working before
    /// the first thing the upstream made of it (an artifact, its end, a question) is
    /// mirrored. A follower that came late (a worker following a task a gateway opened,
    /// a poll) sees the upstream's working only as a snapshot already past it, and a
    /// client expects its task to have worked before it has results.
    async fn taken(&mut self) -> Result<(), A2AError> {
        if self.state == TaskState::Submitted {
            self.reporter.status(TaskState::Working, None).await?;
            self.state = TaskState::Working;
        }
        Ok(())
    }

    /// Completes the task with an upstream's message-only reply.
    pub async fn complete_with(&mut self, reply: Message) -> Result<(), A2AError> {
        self.record_outcome("completed");
        self.reporter
            .status(TaskState::Completed, Some(reply))
            .await
            .map(drop)
    }

    /// Records how the upstream call ended (outcome and latency) on the task, with the
    /// status change that follows.
    pub fn record_outcome(&mut self, outcome: &str) {
        let latency_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.link.outcome = Some(outcome.to_owned());
        self.link.latency_ms = Some(latency_ms);
        let span = tracing::Span::current();
        span.record("outcome", outcome);
        span.record("latency_ms", latency_ms);
        self.reporter.annotate(self.link.entry());
    }

    /// Records the upstream task (and the messages forwarded to it) on this one, with
    /// the next status change mirrored. Until then a restart sends the turn's message
    /// again: forwarding is at least once, as it is for any sender that crashes
    /// between sending and writing down that it sent.
    pub fn link_to(&mut self, task_id: &str, context_id: &str) {
        if self.link.upstream_task_id.is_none() {
            self.link.upstream_task_id = Some(task_id.to_owned());
            self.link.upstream_context_id = Some(context_id.to_owned());
            tracing::Span::current().record("upstream.task_id", task_id);
        }
        self.reporter.annotate(self.link.entry());
    }

    /// Reports what `artifact` adds to what the task holds: nothing when it holds it
    /// already, the missing parts when it holds a beginning of it, else all of it.
    async fn artifact(
        &mut self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), A2AError> {
        let held = self.artifacts.get(&artifact.artifact_id);
        if held.is_some_and(|parts| *parts == artifact.parts) && !append {
            return Ok(());
        }
        self.taken().await?;
        let held = self.artifacts.get(&artifact.artifact_id);
        let (report, append) = match (held, append) {
            (Some(parts), false) if artifact.parts.starts_with(parts) && !parts.is_empty() => {
                let mut rest = artifact.clone();
                rest.parts = artifact.parts[parts.len()..].to_vec();
                (rest, true)
            }
            (None, true) => (artifact.clone(), false),
            _ => (artifact.clone(), append),
        };
        let entry = self
            .artifacts
            .entry(artifact.artifact_id.clone())
            .or_default();
        match append {
            true => entry.extend(report.parts.iter().cloned()),
            false => *entry = report.parts.clone(),
        }
        self.reporter.artifact(report, append, last_chunk).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use sb_protocol::TaskStatusUpdateEvent;
    use sb_store::{LocalBus, MemoryStore};
    use sb_tasks::{LocalTaskService, NewTask, Scope, TaskService, TaskUpdate};

    use super::*;

    fn said(id: &str, text: &str) -> Message {
        Message {
            message_id: id.into(),
            ..Message::agent_text(text)
        }
    }

    fn new_scope() -> Scope {
        Scope {
            agent: "bridged".into(),
            owner: String::new(),
        }
    }

    fn upstream_status(state: TaskState, message: Option<Message>) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "up".into(),
            context_id: "up-ctx".into(),
            status: TaskStatus {
                state,
                message,
                timestamp: None,
            },
            metadata: None,
        })
    }

    /// A worker following a task its gateway opened reads the upstream task only once
    /// it is done: the snapshot's artifact and end come after the task went working.
    #[tokio::test]
    async fn a_snapshot_past_working_still_shows_the_task_working_first() {
        let tasks = Arc::new(LocalTaskService::new(
            Arc::new(MemoryStore::new()),
            Arc::new(LocalBus::new()),
        ));
        let first = Message {
            role: Role::User,
            ..Message::agent_text("hello")
        };
        let new = NewTask {
            scope: new_scope(),
            message: first,
            metadata: None,
        };
        let created = tasks.create(new).await.unwrap();
        let id = created.task.id.clone();
        let reporter = Reporter::new(tasks.clone(), id.clone());
        let mut mirror = Mirror::new(&created.task, Link::default(), reporter);
        let snapshot = Task {
            id: "up".into(),
            context_id: "up-ctx".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: Some(said("done", "hello")),
                timestamp: None,
            },
            artifacts: vec![Artifact {
                artifact_id: "echo".into(),
                name: None,
                description: None,
                parts: vec![Part::text("hello")],
                metadata: None,
                extensions: vec![],
            }],
            // As @a2a-js/sdk keeps it: the status message is in the history too.
            history: vec![said("done", "hello")],
            metadata: None,
        };
        let ended = mirror.apply(StreamResponse::Task(snapshot)).await.unwrap();
        assert_eq!(ended, Mirrored::Settled(TaskState::Completed));
        let events = tasks.events_after(&id, 1, 10).await.unwrap();
        let kinds: Vec<String> = events
            .iter()
            .map(|e| match &*e.event {
                StreamResponse::StatusUpdate(u) => u.status.state.as_v03_str().to_owned(),
                StreamResponse::ArtifactUpdate(_) => "artifact".to_owned(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(kinds, ["working", "artifact", "completed"]);
        let task = tasks.get(&new_scope(), &id).await.unwrap().task;
        let status = task.status.message.unwrap();
        assert_eq!(
            (status.message_id.as_str(), status.text()),
            ("done", "hello".into())
        );
    }

    /// The turn after an answer: the upstream's first event may still show the question
    /// it asked (taken before it heard the answer); that is not a new question, and the
    /// turn goes on to the task's end. A new question does end the turn.
    #[tokio::test]
    async fn a_question_already_answered_does_not_end_the_next_turn() {
        let tasks = Arc::new(LocalTaskService::new(
            Arc::new(MemoryStore::new()),
            Arc::new(LocalBus::new()),
        ));
        let scope = new_scope();
        let first = Message {
            role: Role::User,
            ..Message::agent_text("facts")
        };
        let id = tasks
            .create(NewTask {
                scope: scope.clone(),
                message: first,
                metadata: None,
            })
            .await
            .unwrap()
            .task
            .id;
        let question = said("q1", "which one?");
        let asked = TaskUpdate::Status {
            state: TaskState::InputRequired,
            message: Some(question.clone()),
            metadata: None,
        };
        tasks.update(&id, asked).await.unwrap();
        let answer = Message {
            role: Role::User,
            ..Message::agent_text("this one")
        };
        let resumed = tasks
            .update(&id, TaskUpdate::Resume { message: answer })
            .await
            .unwrap();

        let reporter = Reporter::new(tasks.clone(), id.clone());
        let mut mirror = Mirror::new(&resumed.task, Link::default(), reporter);
        let stale = upstream_status(TaskState::InputRequired, Some(question));
        assert_eq!(mirror.apply(stale).await.unwrap(), Mirrored::Running);
        let working = upstream_status(TaskState::Working, Some(said("w1", "applying")));
        assert_eq!(mirror.apply(working).await.unwrap(), Mirrored::Running);
        let again = upstream_status(TaskState::InputRequired, Some(said("q2", "and now?")));
        assert_eq!(
            mirror.apply(again).await.unwrap(),
            Mirrored::Settled(TaskState::InputRequired)
        );
        let task = tasks.get(&scope, &id).await.unwrap().task;
        assert_eq!(task.status.state, TaskState::InputRequired);
        let status = task.status.message.unwrap();
        assert_eq!(status.message_id, "q2");
    }
}
