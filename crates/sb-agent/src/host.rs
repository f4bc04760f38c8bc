//! Runs agents in process: one tokio task per turn, owned by the host (never by the
//! HTTP request that caused it), tracked for graceful shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use sb_protocol::{A2AError, Message, Task, TaskState};
use sb_store::{EventBus, TaskRecord};
use sb_tasks::{NewTask, TaskService};
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::api::{Agent, Reporter, TaskContext};
use crate::roster::Roster;
use crate::turn::{TurnEnd, fail_unsettled, run_turn};

/// A task created and its first turn started (see
/// [`AgentHost::create_with_first_reports`]).
#[derive(Debug)]
pub struct Launched<K> {
    /// What the caller kept of the task as created (submitted, its first message in
    /// its history).
    pub submitted: K,
    /// The task as the creation's commit stored it, with the agent's first reports;
    /// `None` when the task was created before its agent started (a task service that
    /// cannot draft).
    pub first_round: Option<Arc<TaskRecord>>,
    /// Resolves when the turn is over (see [`TurnSignal`]).
    pub turn: TurnSignal,
}

/// Resolves when a turn is over: with an error when the turn's end could not be stored
/// (the agent's last report was refused, and so was the task's failure after it), so
/// whoever waits is not answered with the task as it stood before.
pub type TurnSignal = oneshot::Receiver<Result<(), A2AError>>;

#[derive(Debug, Clone)]
pub struct AgentHost {
    agents: Arc<Roster>,
    tasks: Arc<dyn TaskService>,
    bus: Arc<dyn EventBus>,
    runs: TaskTracker,
}

impl AgentHost {
    pub fn new(
        agents: BTreeMap<String, Arc<dyn Agent>>,
        tasks: Arc<dyn TaskService>,
        bus: Arc<dyn EventBus>,
    ) -> AgentHost {
        AgentHost {
            agents: Arc::new(Roster::with_code(agents)),
            tasks,
            bus,
            runs: TaskTracker::new(),
        }
    }

    pub fn agent(&self, name: &str) -> Option<Arc<dyn Agent>> {
        self.agents.code(name)
    }

    /// The agents hosted; replaced when the registry changes.
    pub fn roster(&self) -> &Arc<Roster> {
        &self.agents
    }

    /// The task service the hosted agents report to.
    pub fn tasks(&self) -> &dyn TaskService {
        &*self.tasks
    }

    pub fn names(&self) -> Vec<String> {
        self.agents.names()
    }

    /// Starts a turn of the task's agent for `message` in the background. The returned
    /// receiver resolves when the turn is over (whatever state the task is in then) or,
    /// sooner, once the task has ended (an agent that is slow to stop after a
    /// cancellation does not hold up whoever waits).
    pub fn spawn_turn(&self, record: &TaskRecord, message: Message) -> TurnSignal {
        let reporter = Reporter::new(self.tasks.clone(), record.task.id.clone());
        self.run(&record.agent, record.task.clone(), message, reporter)
            .0
    }

    /// Creates a task for `new` and starts its first turn, with the agent running while
    /// the creation is on its way to the store: the creation is committed together with
    /// what the agent reports first (for the echo agent, everything), one durable write
    /// instead of two. Returns, once that is durable, what `keep` takes of the task as
    /// created (a copy, or only its id: a blocking send answers with the task as the
    /// turn leaves it and needs no copy of the draft), the task as the commit left it,
    /// and the turn's end; or why it could not be created (the agent is then canceled,
    /// and its reports are refused). Where the task service cannot draft tasks, creates,
    /// then starts the turn.
    pub async fn create_with_first_reports<K>(
        &self,
        new: NewTask,
        keep: impl FnOnce(&TaskRecord) -> K,
    ) -> Result<Launched<K>, A2AError> {
        let drafts = self
            .tasks
            .drafts()
            .filter(|_| self.agents.serves(&new.scope.agent));
        let Some(drafts) = drafts else {
            let submitted = self.tasks.create(new).await?;
            let turn = self.spawn_turn(&submitted, first_message(&submitted)?);
            return Ok(Launched {
                submitted: keep(&submitted),
                first_round: None,
                turn,
            });
        };
        let draft = drafts.draft(new)?;
        let first = first_message(&draft)?;
        let submitted = keep(&draft);
        let (agent, task) = (draft.agent.clone(), draft.task.clone());
        let (created_tx, created) = oneshot::channel();
        let reporter = Reporter::creating(self.tasks.clone(), draft, created_tx);
        let (turn, cancel) = self.run(&agent, task, first, reporter);
        match created.await {
            Ok(Ok(first_round)) => Ok(Launched {
                submitted,
                first_round: Some(first_round),
                turn,
            }),
            Ok(Err(err)) => {
                cancel.cancel();
                Err(err)
            }
            Err(_) => {
                cancel.cancel();
                Err(
                    A2AError::internal("the task's creation was abandoned; try again")
                        .retryable(true),
                )
            }
        }
    }

    /// Spawns the agent's run for one turn; returns when it is over and its cancel.
    fn run(
        &self,
        agent_name: &str,
        task: Task,
        message: Message,
        reporter: Reporter,
    ) -> (TurnSignal, CancellationToken) {
        let (turn_over, turn) = oneshot::channel();
        let cancel = CancellationToken::new();
        let Some(agent) = self.agents.code(agent_name) else {
            tracing::error!(task_id = %task.id, agent = agent_name, "no such agent hosted here");
            return (turn, cancel);
        };
        let bus = self.bus.clone();
        let task_id = task.id.clone();
        let ctx = TaskContext {
            task: Box::new(task),
            message: Box::new(message),
            cancel: cancel.clone(),
        };
        let tasks = self.tasks.clone();
        let run_cancel = cancel.clone();
        self.runs.spawn(async move {
            // Subscribe before the run starts so no terminal event can slip past the watch.
            let watch = match bus.subscribe(&task_id).await {
                Ok(watch) => watch,
                Err(e) => {
                    let end = TurnEnd::Failed(format!("cannot watch the task: {e}"));
                    let reason = end.failure_reason().unwrap_or_default();
                    let _ = turn_over.send(fail_unsettled(&*tasks, &task_id, reason).await);
                    return;
                }
            };
            let judge = reporter.clone();
            let mut turn_over = Some(turn_over);
            // The watch runs inside the run, not as a task of its own: one task per turn.
            let stop = async {
                tokio::select! {
                    () = cancel_when_finished(watch) => {
                        // The task has ended (canceled, most likely): whoever waits for
                        // the turn need not wait for the agent to notice.
                        if let Some(over) = turn_over.take() {
                            let _ = over.send(Ok(()));
                        }
                    }
                    () = run_cancel.cancelled() => {}
                }
            };
            let end = run_turn(&*agent, ctx, reporter, stop).await;
            let mut outcome = Ok(());
            if let Some(reason) = end.failure_reason()
                && !judge.never_created()
            {
                outcome = fail_unsettled(&*tasks, &task_id, reason).await;
            }
            if let Some(over) = turn_over {
                let _ = over.send(outcome);
            }
        });
        (turn, cancel)
    }

    /// Waits for running turns, at most `grace`. Returns whether all finished.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.runs.close();
        tokio::time::timeout(grace, self.runs.wait()).await.is_ok()
    }
}

/// The user message that starts a task's first turn.
pub(crate) fn first_message(record: &TaskRecord) -> Result<Message, A2AError> {
    record
        .task
        .history
        .first()
        .cloned()
        .ok_or_else(|| A2AError::internal("a new task has no message"))
}

/// Resolves when the task reaches a terminal state (a client's cancel, a deadline, or
/// the agent's own final report), which stops the turn. Never resolves if the bus closes
/// first (the process is stopping and the run is drained).
async fn cancel_when_finished(mut watch: broadcast::Receiver<sb_store::StoredEvent>) {
    loop {
        match watch.recv().await {
            Ok(event) if event.event.state().is_some_and(TaskState::is_terminal) => return,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use sb_protocol::{ErrorKind, Role};
    use std::sync::atomic::{AtomicBool, Ordering};

    use async_trait::async_trait;
    use sb_store::LocalBus;
    use sb_tasks::{LocalTaskService, NewTask, Scope};

    use super::*;
    use crate::api::{AgentDescriptor, AgentError, StoredTask};
    use crate::builtin::EchoAgent;
    use crate::testing::CountingStore;
    use crate::turn::CANCEL_GRACE;

    fn scope() -> Scope {
        Scope {
            agent: "a".into(),
            owner: String::new(),
        }
    }

    fn new_task(text: &str) -> NewTask {
        NewTask {
            scope: scope(),
            message: Message {
                role: Role::User,
                ..Message::agent_text(text)
            },
            metadata: None,
        }
    }

    /// A task created with its first turn started, the turn's end as the host signals it.
    async fn start(host: &AgentHost, new: NewTask) -> Result<(TaskRecord, TurnSignal), A2AError> {
        let launched = host
            .create_with_first_reports(new, TaskRecord::clone)
            .await?;
        Ok((launched.submitted, launched.turn))
    }

    /// A host of `agent` as "a" over a counting store.
    fn host_of(agent: Arc<dyn Agent>) -> (AgentHost, Arc<CountingStore>, Arc<LocalTaskService>) {
        let store = Arc::new(CountingStore::default());
        let bus = Arc::new(LocalBus::new());
        let tasks = Arc::new(LocalTaskService::new(store.clone(), bus.clone()));
        let agents = BTreeMap::from([("a".to_owned(), agent)]);
        (AgentHost::new(agents, tasks.clone(), bus), store, tasks)
    }

    async fn states(tasks: &LocalTaskService, id: &str) -> Vec<Option<TaskState>> {
        let events = tasks.events_after(id, 0, 100).await.unwrap();
        events.iter().map(|e| e.event.state()).collect()
    }

    #[tokio::test]
    async fn a_task_and_its_agents_first_reports_are_one_commit() {
        let (host, store, tasks) = host_of(Arc::new(EchoAgent));
        let (created, turn) = start(&host, new_task("hi")).await.unwrap();
        assert_eq!((created.seq, created.state()), (1, TaskState::Submitted));
        turn.await.unwrap().unwrap();
        assert_eq!(store.commits.load(Ordering::SeqCst), 1);
        let id = &created.task.id;
        let done = tasks.get(&scope(), id).await.unwrap();
        assert_eq!(done.state(), TaskState::Completed);
        assert_eq!(done.task.artifacts[0].parts[0].as_text(), Some("hi"));
        use TaskState::*;
        let expected = [Some(Submitted), Some(Working), None, Some(Completed)];
        assert_eq!(states(&tasks, id).await, expected);
    }

    #[tokio::test]
    async fn a_blocking_start_answers_from_the_commit_that_ended_the_task() {
        use crate::runner::TurnRunner;
        let (host, store, tasks) = host_of(Arc::new(EchoAgent));
        let wait = Duration::from_secs(5);
        let done = host.start_and_wait(new_task("hi"), wait).await;
        let done = done.unwrap();
        assert_eq!((done.seq, done.state()), (4, TaskState::Completed));
        assert_eq!(done.task.artifacts[0].parts[0].as_text(), Some("hi"));
        assert_eq!(store.gets.load(Ordering::SeqCst), 0, "nothing read back");
        let committed = store.last_committed.lock().clone().unwrap();
        assert!(
            Arc::ptr_eq(&done, &committed),
            "the record committed, not a copy"
        );
        assert_eq!(tasks.get(&scope(), &done.task.id).await.unwrap(), *done);
    }

    #[tokio::test]
    async fn an_agent_is_answered_with_the_record_committed_not_a_copy() {
        use crate::runner::TurnRunner;
        let agent = Arc::new(KeepsItsEnd::default());
        let (host, store, _) = host_of(agent.clone());
        let wait = Duration::from_secs(5);
        let done = host.start_and_wait(new_task("hi"), wait).await;
        assert_eq!(done.unwrap().state(), TaskState::Completed);
        let told = agent
            .0
            .lock()
            .take()
            .expect("the agent heard its report is durable");
        assert_eq!(told.status.state, TaskState::Completed);
        let committed = store.last_committed.lock().clone().unwrap();
        assert!(std::ptr::eq(&*told, &committed.task), "a copy of the task");
    }

    #[tokio::test]
    async fn a_blocking_start_waits_for_a_turn_its_first_commit_did_not_end() {
        use crate::runner::TurnRunner;
        let (host, store, _) = host_of(Arc::new(WaitsForCancel::default()));
        let wait = Duration::from_millis(300);
        let started = std::time::Instant::now();
        let held = host.start_and_wait(new_task("hi"), wait).await;
        assert_eq!(held.unwrap().state(), TaskState::Working);
        assert!(started.elapsed() >= wait, "waited for the turn");
        assert_eq!(
            store.gets.load(Ordering::SeqCst),
            1,
            "read when the wait ran out"
        );
    }

    /// Completes, then notes whether its cancel had fired by the time it heard so.
    #[derive(Debug, Default)]
    struct CompletesAndLooks {
        saw_cancel: AtomicBool,
        /// Turns that reached the look after their own completion.
        looked: std::sync::atomic::AtomicUsize,
    }

    #[async_trait]
    impl Agent for CompletesAndLooks {
        fn describe(&self) -> AgentDescriptor {
            WaitsForCancel::default().describe()
        }

        async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
            reporter.complete(None).await?;
            if ctx.cancel.is_cancelled() {
                self.saw_cancel.store(true, Ordering::SeqCst);
            }
            self.looked.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    #[tokio::test]
    async fn an_agent_that_ends_its_task_is_not_canceled_by_that_end() {
        let agent = Arc::new(CompletesAndLooks::default());
        let (host, _store, tasks) = host_of(agent.clone());
        // The task's end and the agent's answer wake the run together; taken in random
        // order, about half of these turns saw their own end as a cancellation.
        for _ in 0..30 {
            let (created, turn) = start(&host, new_task("hi")).await.unwrap();
            turn.await.unwrap().unwrap();
            let done = tasks.get(&scope(), &created.task.id).await.unwrap();
            assert_eq!(done.state(), TaskState::Completed);
        }
        // A turn's end may be signalled as soon as its task ends: wait for the runs.
        assert!(host.drain(Duration::from_secs(5)).await);
        assert_eq!(agent.looked.load(Ordering::SeqCst), 30, "every turn looked");
        assert!(!agent.saw_cancel.load(Ordering::SeqCst));
    }

    /// Reports working, then completes once told to.
    #[derive(Debug, Default)]
    struct CompletesWhenTold {
        told: tokio::sync::Notify,
    }

    #[async_trait]
    impl Agent for CompletesWhenTold {
        fn describe(&self) -> AgentDescriptor {
            WaitsForCancel::default().describe()
        }

        async fn execute(&self, _ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
            reporter.working(None).await?;
            self.told.notified().await;
            reporter.complete(None).await?;
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_turn_whose_end_cannot_be_stored_says_so_to_its_waiter() {
        use crate::runner::TurnRunner;
        let agent = Arc::new(CompletesWhenTold::default());
        let (host, store, tasks) = host_of(agent.clone());
        let (created, turn) = TurnRunner::start(&host, new_task("hi")).await.unwrap();
        // The store refuses the completion and then the task's failure: the task stays
        // working as stored, and the waiter must not be answered with that.
        store.failing.store(true, Ordering::SeqCst);
        agent.told.notify_one();
        let err = tokio::time::timeout(Duration::from_secs(5), turn)
            .await
            .expect("the turn ends")
            .expect_err("the turn's end was not stored");
        assert_eq!(err.kind, ErrorKind::Internal, "{err:?}");
        assert!(err.message.contains("could not be updated"), "{err:?}");
        store.failing.store(false, Ordering::SeqCst);
        let stored = tasks.get(&scope(), &created.task.id).await.unwrap();
        assert_eq!(stored.state(), TaskState::Working);
    }

    /// Reports a burst the task service refuses as a whole: completed, then working.
    #[derive(Debug, Default)]
    struct CompletesThenWorks {
        refused: parking_lot::Mutex<Option<A2AError>>,
    }

    #[async_trait]
    impl Agent for CompletesThenWorks {
        fn describe(&self) -> AgentDescriptor {
            WaitsForCancel::default().describe()
        }

        async fn execute(&self, _ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
            reporter.working(None).await?;
            // Both queue on their first poll, in this order, before the first commit round.
            let late = async { reporter.working(None).await };
            let (done, late) = tokio::join!(reporter.complete(None), late);
            let flushed = reporter.flush().await;
            *self.refused.lock() = done.err().or(late.err()).or(flushed.err());
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_refused_report_in_the_first_burst_still_creates_the_task() {
        let agent = Arc::new(CompletesThenWorks::default());
        let (host, _store, tasks) = host_of(agent.clone());
        let (created, turn) = start(&host, new_task("hi")).await.unwrap();
        turn.await.unwrap().unwrap();
        use TaskState::*;
        let expected = [Some(Submitted), Some(Working), Some(Completed)];
        assert_eq!(states(&tasks, &created.task.id).await, expected);
        let refused = agent
            .refused
            .lock()
            .take()
            .expect("the late working is refused");
        assert_eq!(refused.kind, ErrorKind::UnsupportedOperation, "{refused:?}");
    }

    #[tokio::test]
    async fn a_failed_creation_is_the_callers_error_and_cancels_the_agent() {
        let agent = Arc::new(WaitsForCancel::default());
        let (host, store, tasks) = host_of(agent.clone());
        store.failing.store(true, Ordering::SeqCst);
        let err = start(&host, new_task("hi")).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::Internal, "{err:?}");
        assert!(err.retryable);
        // The agent was told, and nothing tries to settle a task that does not exist.
        tokio::time::timeout(Duration::from_secs(2), async {
            while !agent.saw_cancel.load(Ordering::SeqCst) {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the agent sees the cancel");
        assert!(host.drain(Duration::from_secs(2)).await);
        let listed = tasks.list(&scope(), &Default::default()).await.unwrap();
        assert_eq!(listed.total, 0);
        store.failing.store(false, Ordering::SeqCst);
        assert!(
            start(&host, new_task("again")).await.is_ok(),
            "its open-task slot was freed"
        );
    }

    /// Reports working, then waits for `ctx.cancel` and notes that it fired.
    #[derive(Debug, Default)]
    struct WaitsForCancel {
        saw_cancel: AtomicBool,
    }

    #[async_trait]
    impl Agent for WaitsForCancel {
        fn describe(&self) -> AgentDescriptor {
            AgentDescriptor {
                description: String::new(),
                skills: Vec::new(),
                input_modes: Vec::new(),
                output_modes: Vec::new(),
            }
        }

        async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
            reporter.working(None).await?;
            ctx.cancel.cancelled().await;
            self.saw_cancel.store(true, Ordering::SeqCst);
            Ok(())
        }
    }

    /// Completes at once, and keeps the task its report returned.
    #[derive(Debug, Default)]
    struct KeepsItsEnd(parking_lot::Mutex<Option<StoredTask>>);

    #[async_trait]
    impl Agent for KeepsItsEnd {
        fn describe(&self) -> AgentDescriptor {
            WaitsForCancel::default().describe()
        }

        async fn execute(&self, _ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
            let done = reporter.complete(None).await?;
            *self.0.lock() = Some(done);
            Ok(())
        }
    }

    /// Creates a task, starts its turn and waits until the agent reports working.
    async fn working_turn(host: &AgentHost, tasks: &LocalTaskService) -> (TaskRecord, TurnSignal) {
        let record = tasks.create(new_task("go")).await.unwrap();
        let turn = host.spawn_turn(&record, first_message(&record).unwrap());
        let working = async {
            while tasks.get(&scope(), &record.task.id).await.unwrap().state() != TaskState::Working
            {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), working)
            .await
            .expect("the agent reports working");
        (record, turn)
    }

    #[tokio::test]
    async fn a_client_cancel_reaches_the_running_agent() {
        let agent = Arc::new(WaitsForCancel::default());
        let (host, _store, tasks) = host_of(agent.clone());
        let scope = scope();
        let (record, turn) = working_turn(&host, &tasks).await;
        tasks.cancel(&scope, &record.task.id).await.unwrap();
        // Well inside CANCEL_GRACE: the agent stopped on its own, it was not dropped.
        tokio::time::timeout(Duration::from_secs(2), turn)
            .await
            .expect("the turn ends once the agent sees the cancel")
            .unwrap()
            .unwrap();
        assert!(agent.saw_cancel.load(Ordering::SeqCst));
        let now = tasks.get(&scope, &record.task.id).await.unwrap();
        assert_eq!(
            now.state(),
            TaskState::Canceled,
            "and nothing settles it again"
        );
    }

    /// Reports working, then works on, deaf to cancellation.
    #[derive(Debug)]
    struct IgnoresCancel;

    #[async_trait]
    impl Agent for IgnoresCancel {
        fn describe(&self) -> AgentDescriptor {
            WaitsForCancel::default().describe()
        }

        async fn execute(&self, _ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
            reporter.working(None).await?;
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(())
        }
    }

    /// A blocking SendMessage waits for the turn's end: when the task is canceled, that
    /// end comes at once, not after the agent is given up on (CANCEL_GRACE later).
    #[tokio::test]
    async fn a_canceled_task_ends_the_turn_before_its_agent_stops() {
        let (host, _store, tasks) = host_of(Arc::new(IgnoresCancel));
        let scope = scope();
        let (record, turn) = working_turn(&host, &tasks).await;
        tasks.cancel(&scope, &record.task.id).await.unwrap();
        tokio::time::timeout(CANCEL_GRACE / 2, turn)
            .await
            .expect("the turn's end is announced with the task's end")
            .unwrap()
            .unwrap();
        let now = tasks.get(&scope, &record.task.id).await.unwrap();
        assert_eq!(now.state(), TaskState::Canceled);
    }
}
