//! `conformance`: the behaviours the A2A conformance suites expect of a system under test.
//!
//! Two conventions name the behaviour a message asks for:
//! - the 1.0 TCK (a2aproject/a2a-tck, `scenarios/*.feature`) names it by the prefix of
//!   the `messageId`; every one of its ids starts with `tck-`;
//! - ACTS (a2aproject/A2A, `docs/acts-specification.md` §11) names it by the prefix of the
//!   text of the message's first part, and its runner makes up random messageIds.
//!
//! The 0.3 TCK sends other ids and expects a task that goes working and stays there until
//! canceled or continued (its `FireAndForget` reference agent). See [`behaviour_of_turn`]
//! for how the conventions combine.

use std::time::Duration;

use async_trait::async_trait;
use sb_protocol::{Artifact, Message, Part, PartContent, Role, new_id};
use serde_json::json;

use crate::api::{Agent, AgentDescriptor, AgentError, Reporter, TaskContext};

#[derive(Debug, Clone)]
pub struct ConformanceAgent {
    /// How long `test-resubscribe-message-id` keeps its task working before completing
    /// it. The scenario waits twice the TCK's streaming timeout (`TCK_STREAMING_TIMEOUT`,
    /// 2 s unless the TCK is told otherwise), and the 0.3 TCK resubscribes within that
    /// window, so anything shorter ends the task under its feet.
    pub resubscribe_pause: Duration,
    /// How long ACTS's `tck-long-running` works before completing: long enough for its
    /// tests to see the task working and to subscribe to it (the ACTS example behaviours
    /// file says 5 s), short enough for their polling (15 polls, 2 s apart).
    pub long_running_pause: Duration,
}

impl Default for ConformanceAgent {
    fn default() -> Self {
        ConformanceAgent {
            resubscribe_pause: Duration::from_secs(4),
            long_running_pause: Duration::from_secs(5),
        }
    }
}

/// The behaviours, by prefix, in matching order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Behaviour {
    StreamArtifactChunked,
    Resubscribe,
    StreamArtifactText,
    StreamArtifactFile,
    StreamOrdering,
    ArtifactFileUrl,
    MessageResponse,
    InputRequired,
    CompleteTask,
    ArtifactText,
    ArtifactFile,
    ArtifactData,
    RejectTask,
    Stream001,
    Stream002,
    Stream003,
    /// ACTS `tck-stream-basic`: working, one artifact, completed.
    StreamBasic,
    /// ACTS `tck-long-running`: working, a pause, an artifact, completed.
    LongRunning,
    /// ACTS `tck-multi-turn`: input required until the user says "done".
    MultiTurn,
    /// ACTS `tck-task-failure`: failed, with a status message.
    TaskFailure,
    /// ACTS `tck-auth-required`: auth required, with a status message.
    AuthRequired,
    /// Any other `tck-` messageId: complete, as the TCK's generated agents do.
    OtherTck,
    /// Named by nothing (the 0.3 TCK), and ACTS `tck-cancel`: working until canceled.
    WorkUntilCanceled,
}

/// The 1.0 TCK's prefixes in the order its generated agents check them (longest first,
/// so `tck-artifact-file-url` is not taken for `tck-artifact-file`), then ACTS's own.
const PREFIXES: [(&str, Behaviour); 23] = [
    (
        "tck-stream-artifact-chunked",
        Behaviour::StreamArtifactChunked,
    ),
    ("test-resubscribe-message-id", Behaviour::Resubscribe),
    ("tck-stream-artifact-text", Behaviour::StreamArtifactText),
    ("tck-stream-artifact-file", Behaviour::StreamArtifactFile),
    ("tck-stream-ordering-001", Behaviour::StreamOrdering),
    ("tck-artifact-file-url", Behaviour::ArtifactFileUrl),
    ("tck-message-response", Behaviour::MessageResponse),
    ("tck-input-required", Behaviour::InputRequired),
    ("tck-complete-task", Behaviour::CompleteTask),
    ("tck-artifact-text", Behaviour::ArtifactText),
    ("tck-artifact-file", Behaviour::ArtifactFile),
    ("tck-artifact-data", Behaviour::ArtifactData),
    ("tck-reject-task", Behaviour::RejectTask),
    ("tck-stream-001", Behaviour::Stream001),
    ("tck-stream-002", Behaviour::Stream002),
    ("tck-stream-003", Behaviour::Stream003),
    ("tck-stream-chunked", Behaviour::StreamArtifactChunked),
    ("tck-stream-basic", Behaviour::StreamBasic),
    ("tck-long-running", Behaviour::LongRunning),
    ("tck-multi-turn", Behaviour::MultiTurn),
    ("tck-task-failure", Behaviour::TaskFailure),
    // Not in the §11.2 table, but the ACTS suite's SEC-AUTH-005 requires it.
    ("tck-auth-required", Behaviour::AuthRequired),
    ("tck-cancel", Behaviour::WorkUntilCanceled),
];

fn behaviour_by_prefix(signal: &str) -> Option<Behaviour> {
    PREFIXES
        .iter()
        .find(|(prefix, _)| signal.starts_with(prefix))
        .map(|&(_, behaviour)| behaviour)
}

/// ACTS §11 says "the first message part"; its tests always lead with text, and a
/// leading file or data part should not hide the prefix that follows it.
fn first_text(message: &Message) -> Option<&str> {
    message.parts.iter().find_map(Part::as_text)
}

/// The behaviour a message names itself, by either convention.
///
/// The messageId is asked first. It is the one signal a sender sets on purpose: the TCK
/// writes free prose in its texts, while ACTS runners make up random messageIds (ACTS
/// §4.3), which never start with a behaviour's prefix. So the order only matters for a
/// message that carries both signals, and there the id was meant; the other way round, a
/// TCK text that happened to begin with a prefix would override the scenario's id.
fn named_behaviour(message: &Message) -> Option<Behaviour> {
    behaviour_by_prefix(&message.message_id)
        .or_else(|| first_text(message).and_then(behaviour_by_prefix))
}

/// The behaviour of one turn: what its message names; else, for a `tck-` id, the TCK's
/// default; else, for a follow-up, what the task's first message named (ACTS follow-ups
/// such as "done" name nothing, yet continue a `tck-multi-turn` conversation); else
/// working until canceled, as the 0.3 TCK expects. `first_of_task` is `None` before the
/// task exists.
fn behaviour_of_turn(message: &Message, first_of_task: Option<&Message>) -> Behaviour {
    named_behaviour(message)
        .or_else(|| {
            message
                .message_id
                .starts_with("tck-")
                .then_some(Behaviour::OtherTck)
        })
        .or_else(|| {
            first_of_task
                .filter(|first| first.message_id != message.message_id)
                .and_then(named_behaviour)
        })
        .unwrap_or(Behaviour::WorkUntilCanceled)
}

fn says_done(message: &Message) -> bool {
    first_text(message).is_some_and(|text| text.trim().eq_ignore_ascii_case("done"))
}

fn artifact(parts: Vec<Part>) -> Artifact {
    Artifact {
        artifact_id: new_id(),
        name: Some("response".into()),
        description: None,
        parts,
        metadata: None,
        extensions: Vec::new(),
    }
}

fn file_part(content: PartContent) -> Part {
    Part {
        content,
        metadata: None,
        filename: Some("output.txt".into()),
        media_type: Some("text/plain".into()),
    }
}

/// False when the task was canceled meanwhile: the cancel already ended it, and anything
/// reported after would only be refused.
async fn pause_unless_canceled(pause: Duration, ctx: &TaskContext) -> bool {
    tokio::select! {
        () = tokio::time::sleep(pause) => true,
        () = ctx.cancel.cancelled() => false,
    }
}

/// A whole artifact in one event: its first chunk (nothing to append to) and its last.
async fn finish_with_artifact(reporter: &Reporter, parts: Vec<Part>) -> Result<(), AgentError> {
    reporter.artifact(artifact(parts), false, true).await?;
    reporter.complete(None).await?;
    Ok(())
}

async fn stream_with_artifact(reporter: &Reporter, parts: Vec<Part>) -> Result<(), AgentError> {
    reporter.working(None).await?;
    finish_with_artifact(reporter, parts).await
}

#[async_trait]
impl Agent for ConformanceAgent {
    fn describe(&self) -> AgentDescriptor {
        AgentDescriptor {
            description: "Implements the behaviours the A2A conformance suites (TCK, ACTS) drive, chosen by messageId prefix or by the prefix of the first text part.".into(),
            skills: vec![super::skill("conformance", "Conformance", "TCK and ACTS system-under-test behaviours", &["tck", "acts", "conformance"], &["tck-complete-task"])],
            input_modes: super::text_modes(),
            output_modes: super::text_modes(),
        }
    }

    fn direct_reply(&self, message: &Message) -> Option<Message> {
        (behaviour_of_turn(message, None) == Behaviour::MessageResponse).then(|| Message {
            role: Role::Agent,
            ..Message::agent_text("Direct message response")
        })
    }

    async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
        let text = |t: &str| vec![Part::text(t)];
        match behaviour_of_turn(&ctx.message, ctx.user_messages().next()) {
            Behaviour::CompleteTask => {
                drop(reporter.complete(Some("Hello from TCK".into())).await?)
            }
            Behaviour::ArtifactText => {
                finish_with_artifact(&reporter, text("Generated text content")).await?
            }
            Behaviour::ArtifactFile => {
                finish_with_artifact(
                    &reporter,
                    vec![file_part(PartContent::Raw(b"tck".to_vec()))],
                )
                .await?
            }
            Behaviour::ArtifactFileUrl => {
                let url = PartContent::Url("https://example.com/output.txt".into());
                finish_with_artifact(&reporter, vec![file_part(url)]).await?;
            }
            Behaviour::ArtifactData => {
                let data = PartContent::Data(json!({"key": "value", "count": 42}));
                finish_with_artifact(
                    &reporter,
                    vec![Part {
                        content: data,
                        metadata: None,
                        filename: None,
                        media_type: None,
                    }],
                )
                .await?;
            }
            // Only a follow-up gets here (a first message is answered by `direct_reply`),
            // and a task cannot turn into a message: its status carries the reply instead.
            Behaviour::MessageResponse => drop(
                reporter
                    .complete(Some("Direct message response".into()))
                    .await?,
            ),
            Behaviour::InputRequired => drop(
                reporter
                    .input_required("Please provide more input".into())
                    .await?,
            ),
            Behaviour::RejectTask => drop(reporter.reject("rejected".into()).await?),
            Behaviour::Stream001 => {
                stream_with_artifact(&reporter, text("Stream hello from TCK")).await?
            }
            Behaviour::Stream002 => drop(reporter.complete(None).await?),
            Behaviour::Stream003 => {
                stream_with_artifact(&reporter, text("Stream task lifecycle")).await?
            }
            Behaviour::StreamOrdering => {
                stream_with_artifact(&reporter, text("Ordered output")).await?
            }
            Behaviour::StreamArtifactText => {
                stream_with_artifact(&reporter, text("Streamed text content")).await?
            }
            Behaviour::StreamArtifactFile => {
                stream_with_artifact(
                    &reporter,
                    vec![file_part(PartContent::Raw(b"tck".to_vec()))],
                )
                .await?;
            }
            Behaviour::StreamArtifactChunked => {
                reporter.working(None).await?;
                let mut chunk = artifact(text("chunk-1 "));
                reporter.artifact(chunk.clone(), false, false).await?;
                chunk.parts = text("chunk-2");
                reporter.artifact(chunk, true, true).await?;
                reporter.complete(None).await?;
            }
            Behaviour::StreamBasic => {
                stream_with_artifact(&reporter, text("Streamed content")).await?
            }
            Behaviour::Resubscribe => {
                reporter.working(None).await?;
                if pause_unless_canceled(self.resubscribe_pause, &ctx).await {
                    reporter.complete(None).await?;
                }
            }
            Behaviour::LongRunning => {
                reporter.working(None).await?;
                if pause_unless_canceled(self.long_running_pause, &ctx).await {
                    finish_with_artifact(&reporter, text("Long-running result")).await?;
                }
            }
            Behaviour::MultiTurn if says_done(&ctx.message) => drop(
                reporter
                    .complete(Some("Conversation complete".into()))
                    .await?,
            ),
            Behaviour::MultiTurn => drop(
                reporter
                    .input_required("Please provide more input, or say \"done\"".into())
                    .await?,
            ),
            Behaviour::TaskFailure => drop(reporter.fail("Task failed as requested".into()).await?),
            Behaviour::AuthRequired => drop(
                reporter
                    .auth_required("Authorization required to continue".into())
                    .await?,
            ),
            Behaviour::OtherTck => {
                let reply = format!("Unhandled messageId prefix: {}", ctx.message.message_id);
                reporter.complete(Some(reply)).await?;
            }
            Behaviour::WorkUntilCanceled => {
                reporter.working(None).await?;
                reporter.keep_open();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sb_protocol::{StreamResponse, TaskState};
    use sb_store::{LocalBus, MemoryStore};
    use sb_tasks::{LocalTaskService, NewTask, Scope, TaskService, TaskUpdate};

    use super::*;

    fn user_message(message_id: &str, text: &str) -> Message {
        Message {
            message_id: message_id.to_owned(),
            role: Role::User,
            ..Message::agent_text(text)
        }
    }

    /// What a client sees of a turn, without ids and timestamps.
    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Status(TaskState, Option<String>),
        Artifact {
            text: Option<String>,
            append: bool,
            last_chunk: bool,
        },
    }

    struct Harness {
        tasks: Arc<LocalTaskService>,
        scope: Scope,
        task_id: String,
    }

    impl Harness {
        async fn start(first: Message) -> Harness {
            let store = Arc::new(MemoryStore::new());
            let tasks = Arc::new(LocalTaskService::new(store, Arc::new(LocalBus::new())));
            let scope = Scope {
                agent: "conformance".into(),
                owner: String::new(),
            };
            let task_id = tasks
                .create(NewTask {
                    scope: scope.clone(),
                    message: first,
                    metadata: None,
                })
                .await
                .unwrap()
                .task
                .id;
            Harness {
                tasks,
                scope,
                task_id,
            }
        }

        /// Runs one turn for `message`, which must already be in the task's history.
        async fn turn(&self, agent: &ConformanceAgent, message: Message) -> Reporter {
            let task = self
                .tasks
                .get(&self.scope, &self.task_id)
                .await
                .unwrap()
                .task;
            let reporter = Reporter::new(self.tasks.clone(), self.task_id.clone());
            let ctx = TaskContext {
                task: Box::new(task),
                message: Box::new(message),
                cancel: tokio_util::sync::CancellationToken::new(),
            };
            agent.execute(ctx, reporter.clone()).await.unwrap();
            reporter.flush().await.unwrap();
            reporter
        }

        async fn follow_up(&self, agent: &ConformanceAgent, message: Message) -> Reporter {
            let resume = TaskUpdate::Resume {
                message: message.clone(),
            };
            self.tasks.update(&self.task_id, resume).await.unwrap();
            self.turn(agent, message).await
        }

        async fn state(&self) -> TaskState {
            let record = self.tasks.get(&self.scope, &self.task_id).await.unwrap();
            record.task.status.state
        }

        /// Status and artifact updates so far, oldest first.
        async fn seen(&self) -> Vec<Seen> {
            let events = self
                .tasks
                .events_after(&self.task_id, 0, 100)
                .await
                .unwrap();
            events
                .iter()
                .filter_map(|stored| match &*stored.event {
                    StreamResponse::StatusUpdate(update) => Some(Seen::Status(
                        update.status.state,
                        update.status.message.as_ref().map(Message::text),
                    )),
                    StreamResponse::ArtifactUpdate(update) => Some(Seen::Artifact {
                        text: update.artifact.parts[0].as_text().map(str::to_owned),
                        append: update.append,
                        last_chunk: update.last_chunk,
                    }),
                    _ => None,
                })
                .collect()
        }
    }

    async fn run_first_turn(agent: &ConformanceAgent, message: Message) -> (Harness, Reporter) {
        let harness = Harness::start(message.clone()).await;
        let reporter = harness.turn(agent, message).await;
        (harness, reporter)
    }

    #[test]
    fn prefixes_match_in_tck_order() {
        let by_id = |id: &str| behaviour_of_turn(&user_message(id, "prose"), None);
        assert_eq!(
            by_id("tck-artifact-file-url-1234"),
            Behaviour::ArtifactFileUrl
        );
        assert_eq!(by_id("tck-artifact-file-1234"), Behaviour::ArtifactFile);
        assert_eq!(
            by_id("tck-stream-artifact-chunked-x"),
            Behaviour::StreamArtifactChunked
        );
        assert_eq!(by_id("tck-send-003"), Behaviour::OtherTck);
        assert_eq!(
            by_id("test-resubscribe-message-id-9"),
            Behaviour::Resubscribe
        );
        assert_eq!(by_id("msg-123"), Behaviour::WorkUntilCanceled);
    }

    #[test]
    fn no_prefix_is_shadowed_by_an_earlier_one() {
        for (earlier, (shorter, _)) in PREFIXES.iter().enumerate() {
            for (longer, _) in &PREFIXES[earlier + 1..] {
                assert!(
                    !longer.starts_with(shorter),
                    "{shorter} comes before {longer} and would always win"
                );
            }
        }
    }

    #[test]
    fn the_first_text_part_names_the_behaviour_when_the_message_id_does_not() {
        let acts = |text: &str| behaviour_of_turn(&user_message(&new_id(), text), None);
        assert_eq!(
            acts("tck-artifact-file-url document"),
            Behaviour::ArtifactFileUrl
        );
        assert_eq!(
            acts("tck-complete-task hello world"),
            Behaviour::CompleteTask
        );
        assert_eq!(acts("tck-cancel start"), Behaviour::WorkUntilCanceled);
        assert_eq!(
            acts("tck-stream-chunked multi-part"),
            Behaviour::StreamArtifactChunked
        );
        assert_eq!(acts("hello world"), Behaviour::WorkUntilCanceled);

        let data_first = Message {
            parts: vec![
                Part::data(json!({"k": 1})),
                Part::text("tck-task-failure trigger error"),
            ],
            ..user_message(&new_id(), "")
        };
        assert_eq!(
            behaviour_of_turn(&data_first, None),
            Behaviour::TaskFailure,
            "the first text part, not the first part"
        );
    }

    #[test]
    fn the_message_id_takes_precedence_over_the_text() {
        let both = user_message("tck-complete-task-1", "tck-reject-task please");
        assert_eq!(behaviour_of_turn(&both, None), Behaviour::CompleteTask);
        let unknown_tck_id = user_message("tck-dm-test-001-ab12", "tck-artifact-text");
        assert_eq!(
            behaviour_of_turn(&unknown_tck_id, None),
            Behaviour::ArtifactText,
            "an id the scenarios do not know names nothing; the text still may"
        );
    }

    #[test]
    fn a_text_prefix_asks_for_a_direct_message_reply() {
        let agent = ConformanceAgent::default();
        let reply = agent
            .direct_reply(&user_message(&new_id(), "tck-message-response hello"))
            .expect("a message, not a task");
        assert_eq!(reply.role, Role::Agent);
        assert_eq!(reply.text(), "Direct message response");
        assert!(
            agent
                .direct_reply(&user_message(&new_id(), "hello"))
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_chunked_artifact_appends_only_after_its_first_chunk() {
        for signal in [
            user_message("tck-stream-artifact-chunked-1", "go"),
            user_message(&new_id(), "tck-stream-chunked multi-part"),
        ] {
            let (harness, _) = run_first_turn(&ConformanceAgent::default(), signal).await;
            assert_eq!(
                harness.seen().await,
                [
                    Seen::Status(TaskState::Working, None),
                    Seen::Artifact {
                        text: Some("chunk-1 ".into()),
                        append: false,
                        last_chunk: false
                    },
                    Seen::Artifact {
                        text: Some("chunk-2".into()),
                        append: true,
                        last_chunk: true
                    },
                    Seen::Status(TaskState::Completed, None),
                ]
            );
            let task = harness.tasks.get(&harness.scope, &harness.task_id).await;
            let artifacts = task.unwrap().task.artifacts;
            assert_eq!(artifacts.len(), 1, "both chunks make one artifact");
            assert_eq!(artifacts[0].parts.len(), 2);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_resubscribe_task_works_for_the_pause_then_completes() {
        let agent = ConformanceAgent::default();
        let message = user_message("test-resubscribe-message-id-1", "Test message");
        let harness = Arc::new(Harness::start(message.clone()).await);
        let turn = tokio::spawn({
            let harness = harness.clone();
            let agent = agent.clone();
            async move { harness.turn(&agent, message).await }
        });

        tokio::time::sleep(agent.resubscribe_pause - Duration::from_millis(100)).await;
        assert_eq!(
            harness.state().await,
            TaskState::Working,
            "resubscribing needs the task still running"
        );

        let reporter = turn.await.unwrap();
        assert!(!reporter.is_kept_open());
        assert_eq!(
            harness.seen().await,
            [
                Seen::Status(TaskState::Working, None),
                Seen::Status(TaskState::Completed, None),
            ]
        );
    }

    #[test]
    fn the_resubscribe_pause_covers_twice_the_tck_streaming_timeout() {
        let tck_streaming_timeout = Duration::from_secs(2);
        assert!(ConformanceAgent::default().resubscribe_pause >= 2 * tck_streaming_timeout);
    }

    #[tokio::test]
    async fn every_scenario_reports_what_its_feature_file_says() {
        use Seen::Status;
        use TaskState::*;
        let whole = |text: Option<&str>| Seen::Artifact {
            text: text.map(str::to_owned),
            append: false,
            last_chunk: true,
        };
        let hello = Some("Hello from TCK".to_owned());
        let cases = [
            ("tck-complete-task-1", vec![Status(Completed, hello)]),
            (
                "tck-artifact-text-1",
                vec![
                    whole(Some("Generated text content")),
                    Status(Completed, None),
                ],
            ),
            (
                "tck-artifact-file-1",
                vec![whole(None), Status(Completed, None)],
            ),
            (
                "tck-artifact-file-url-1",
                vec![whole(None), Status(Completed, None)],
            ),
            (
                "tck-artifact-data-1",
                vec![whole(None), Status(Completed, None)],
            ),
            (
                "tck-input-required-1",
                vec![Status(
                    InputRequired,
                    Some("Please provide more input".into()),
                )],
            ),
            (
                "tck-reject-task-1",
                vec![Status(Rejected, Some("rejected".into()))],
            ),
            (
                "tck-stream-001-1",
                vec![
                    Status(Working, None),
                    whole(Some("Stream hello from TCK")),
                    Status(Completed, None),
                ],
            ),
            ("tck-stream-002-1", vec![Status(Completed, None)]),
            (
                "tck-stream-003-1",
                vec![
                    Status(Working, None),
                    whole(Some("Stream task lifecycle")),
                    Status(Completed, None),
                ],
            ),
            (
                "tck-stream-ordering-001-1",
                vec![
                    Status(Working, None),
                    whole(Some("Ordered output")),
                    Status(Completed, None),
                ],
            ),
            (
                "tck-stream-artifact-text-1",
                vec![
                    Status(Working, None),
                    whole(Some("Streamed text content")),
                    Status(Completed, None),
                ],
            ),
            (
                "tck-stream-artifact-file-1",
                vec![Status(Working, None), whole(None), Status(Completed, None)],
            ),
            (
                "tck-send-003-1",
                vec![Status(
                    Completed,
                    Some("Unhandled messageId prefix: tck-send-003-1".into()),
                )],
            ),
        ];
        for (message_id, expected) in cases {
            let message = user_message(message_id, "TCK prose");
            let (harness, _) = run_first_turn(&ConformanceAgent::default(), message).await;
            assert_eq!(harness.seen().await, expected, "{message_id}");
        }
    }

    #[tokio::test]
    async fn a_multi_turn_conversation_waits_for_done() {
        let agent = ConformanceAgent::default();
        let (harness, _) =
            run_first_turn(&agent, user_message(&new_id(), "tck-multi-turn start")).await;
        assert_eq!(harness.state().await, TaskState::InputRequired);

        harness
            .follow_up(&agent, user_message(&new_id(), "here is more input"))
            .await;
        assert_eq!(
            harness.state().await,
            TaskState::InputRequired,
            "a follow-up naming nothing continues the task's behaviour"
        );

        harness
            .follow_up(&agent, user_message(&new_id(), "done"))
            .await;
        assert_eq!(harness.state().await, TaskState::Completed);
    }

    #[tokio::test]
    async fn acts_only_behaviours_end_as_acts_expects() {
        let agent = ConformanceAgent {
            long_running_pause: Duration::from_millis(1),
            ..ConformanceAgent::default()
        };
        let cases = [
            ("tck-task-failure trigger error", TaskState::Failed, false),
            (
                "tck-auth-required trigger auth",
                TaskState::AuthRequired,
                false,
            ),
            ("tck-cancel start", TaskState::Working, true),
            ("tck-long-running start", TaskState::Completed, false),
            ("tck-stream-basic go", TaskState::Completed, false),
        ];
        for (text, state, kept_open) in cases {
            let (harness, reporter) = run_first_turn(&agent, user_message(&new_id(), text)).await;
            assert_eq!(harness.state().await, state, "{text}");
            assert_eq!(reporter.is_kept_open(), kept_open, "{text}");
            let task = harness.tasks.get(&harness.scope, &harness.task_id).await;
            let task = task.unwrap().task;
            if state == TaskState::Completed {
                assert_eq!(task.artifacts.len(), 1, "{text}: one artifact");
            }
            if matches!(state, TaskState::Failed | TaskState::AuthRequired) {
                assert!(task.status.message.is_some(), "{text}: says why");
            }
        }
    }
}
