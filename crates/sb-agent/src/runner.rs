//! How the edge starts agent turns without knowing where agents run: in this process
//! ([`crate::AgentHost`]) or on remote workers behind the task-state service.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use sb_protocol::{A2AError, Message, Metadata};
use sb_store::TaskRecord;
use sb_store::backoff::Backoff;
use sb_tasks::{NewTask, TaskService};

use crate::api::{FirstMessage, Opening};

/// Resolves when an agent's turn is over or its task has ended, whichever comes first
/// (or once that can no longer be known), with the task as it then stood when the runner
/// has it at hand (`None`: read it from the task service). An error: the turn ended but
/// its task could not be updated (the agent's last report, then the task's failure, were
/// refused by the store), so the task as stored is not how the turn left it.
pub type TurnOver = BoxFuture<'static, Result<Option<Arc<TaskRecord>>, A2AError>>;

/// Where an agent's turns run: in this process ([`crate::AgentHost`]), on remote workers
/// behind a durable queue, or behind the task-state service's internal API. The gateway's
/// send operation calls these and nothing else, so a new place to run agents plugs in
/// here without touching the gateway.
#[async_trait]
pub trait TurnRunner: Send + Sync + std::fmt::Debug + 'static {
    /// The task service this runner creates tasks in and its turns report to.
    fn tasks(&self) -> &dyn TaskService;
    /// Whether `agent` is served here (other names are not found).
    fn serves(&self, agent: &str) -> bool;
    /// What `agent` makes of a conversation's first message before any task exists
    /// ([`crate::Agent::open`]): a task (the default where the agent's code is not
    /// here), or a direct reply.
    async fn open(&self, agent: &str, first: FirstMessage<'_>) -> Result<Opening, A2AError>;
    /// The task `agent`'s open added `metadata` for was not made ([`crate::Agent::abandon`]).
    async fn abandon(&self, _agent: &str, _metadata: &Metadata) {}
    /// Starts (or durably queues) a turn of the task's agent for `message`, and how to
    /// know it is over. Dropping the [`TurnOver`] does not stop the turn.
    async fn dispatch(&self, record: &TaskRecord, message: Message) -> Result<TurnOver, A2AError>;
    /// Creates a task and starts its first turn: the task as created and the turn's
    /// end, as [`TurnRunner::dispatch`]. A runner whose agents run in this process may
    /// commit the creation together with the agent's first reports.
    async fn start(&self, new: NewTask) -> Result<(TaskRecord, TurnOver), A2AError> {
        let record = self.tasks().create(new).await?;
        let turn = self
            .dispatch(&record, crate::host::first_message(&record)?)
            .await?;
        Ok((record, turn))
    }

    /// [`TurnRunner::start`], then waits for the turn's end, at most `wait`: the task as
    /// the turn left it, or as it stands when the wait runs out. A runner behind an
    /// internal call answers this in one message instead of two.
    async fn start_and_wait(
        &self,
        new: NewTask,
        wait: Duration,
    ) -> Result<Arc<TaskRecord>, A2AError> {
        let scope = new.scope.clone();
        let (record, turn) = self.start(new).await?;
        task_after_turn(self.tasks(), &scope, &record.task.id, turn, wait).await
    }
}

/// Task `task_id` once `turn` is over (or `wait` has run out): as the runner handed it
/// over, else read from `tasks`.
pub async fn task_after_turn(
    tasks: &dyn TaskService,
    scope: &sb_tasks::Scope,
    task_id: &str,
    turn: TurnOver,
    wait: Duration,
) -> Result<Arc<TaskRecord>, A2AError> {
    match tokio::time::timeout(wait, turn).await {
        Ok(Ok(Some(settled))) => Ok(settled),
        Ok(Err(unsaved)) => Err(unsaved),
        Ok(Ok(None)) | Err(_) => tasks.get(scope, task_id).await.map(Arc::new),
    }
}

#[async_trait]
impl TurnRunner for crate::AgentHost {
    fn tasks(&self) -> &dyn TaskService {
        crate::AgentHost::tasks(self)
    }

    fn serves(&self, agent: &str) -> bool {
        self.roster().serves(agent)
    }

    async fn open(&self, agent: &str, first: FirstMessage<'_>) -> Result<Opening, A2AError> {
        match self.agent(agent) {
            Some(code) => code.open(first).await,
            None => Ok(Opening::Task(None)),
        }
    }

    async fn abandon(&self, agent: &str, metadata: &Metadata) {
        if let Some(code) = self.agent(agent) {
            code.abandon(metadata).await;
        }
    }

    async fn dispatch(&self, record: &TaskRecord, message: Message) -> Result<TurnOver, A2AError> {
        Ok(turn_over_signal(self.spawn_turn(record, message)))
    }

    /// The creation committed with the agent's first reports, where the task service
    /// can draft tasks.
    async fn start(&self, new: NewTask) -> Result<(TaskRecord, TurnOver), A2AError> {
        let launched = self
            .create_with_first_reports(new, TaskRecord::clone)
            .await?;
        Ok((
            launched.submitted,
            first_round_or_turn(launched.first_round, launched.turn),
        ))
    }

    /// [`TurnRunner::start`] without a copy of the task as created, which nobody reads.
    async fn start_and_wait(
        &self,
        new: NewTask,
        wait: Duration,
    ) -> Result<Arc<TaskRecord>, A2AError> {
        let scope = new.scope.clone();
        let launched = self
            .create_with_first_reports(new, |draft| draft.task.id.clone())
            .await?;
        let turn = first_round_or_turn(launched.first_round, launched.turn);
        let tasks = crate::AgentHost::tasks(self);
        task_after_turn(tasks, &scope, &launched.submitted, turn, wait).await
    }
}

/// A task the creation's commit already ended (the echo agent reports all it does before
/// that commit) changes no more: its turn is over as far as any waiter is concerned, and
/// the task is at hand, so nobody waits for the run or reads it.
fn first_round_or_turn(
    first_round: Option<Arc<TaskRecord>>,
    turn: tokio::sync::oneshot::Receiver<Result<(), A2AError>>,
) -> TurnOver {
    match first_round.filter(|r| r.state().is_terminal()) {
        Some(ended) => futures::future::ready(Ok(Some(ended))).boxed(),
        None => turn_over_signal(turn),
    }
}

/// How often a task is read while its turn's end is followed without a signal: from
/// the first delay, doubling up to the last.
const FOLLOW_FIRST: Duration = Duration::from_millis(100);
const FOLLOW_MAX: Duration = Duration::from_secs(2);

/// The task once it has ended or waits for input, read every so often: how a turn's end
/// is found when its signal was lost (the connection that carried it broke). A turn
/// that left its task working is not seen to end this way: the waiter's own deadline
/// (a blocking send's wait, a stream's client) bounds it. `None` if the task is gone.
pub async fn read_until_settled(
    tasks: &dyn TaskService,
    scope: &sb_tasks::Scope,
    task_id: &str,
) -> Option<Arc<TaskRecord>> {
    let mut delays = Backoff::doubling(FOLLOW_FIRST, FOLLOW_MAX);
    loop {
        match tasks.get(scope, task_id).await {
            Ok(record) if record.state().is_terminal() || record.state().is_interrupted() => {
                return Some(Arc::new(record));
            }
            Err(e) if e.kind == sb_protocol::ErrorKind::TaskNotFound => return None,
            // Working, or the task service unreachable for now: read again later.
            Ok(_) | Err(_) => {}
        }
        tokio::time::sleep(delays.next_delay().unwrap_or(FOLLOW_MAX)).await;
    }
}

/// A [`TurnOver`] from a bare signal, with no record: the task service has the task,
/// a read away (in this process, reading it costs less than carrying it). A signal
/// dropped unsent says only that the turn is over.
pub fn turn_over_signal(turn: tokio::sync::oneshot::Receiver<Result<(), A2AError>>) -> TurnOver {
    turn.map(|signal| match signal {
        Ok(Err(unsaved)) => Err(unsaved),
        Ok(Ok(())) | Err(_) => Ok(None),
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use sb_protocol::{Role, TaskState};
    use sb_store::{LocalBus, MemoryStore};
    use sb_tasks::{LocalTaskService, Scope, TaskUpdate};

    use super::*;

    fn status(state: TaskState) -> TaskUpdate {
        TaskUpdate::Status {
            state,
            message: None,
            metadata: None,
        }
    }

    /// Followed without a signal, a turn is over once its task ends or waits, not while
    /// it works; a task that is gone ends the wait too.
    #[tokio::test(start_paused = true)]
    async fn a_task_read_until_settled_is_seen_once_it_ends_or_waits() {
        let tasks = Arc::new(LocalTaskService::new(
            Arc::new(MemoryStore::new()),
            Arc::new(LocalBus::new()),
        ));
        let scope = Scope {
            agent: "a".into(),
            owner: String::new(),
        };
        let new = |text: &str| NewTask {
            scope: scope.clone(),
            message: Message {
                role: Role::User,
                ..Message::agent_text(text)
            },
            metadata: None,
        };
        let working = tasks.create(new("work")).await.unwrap().task.id;
        tasks
            .update(&working, status(TaskState::Working))
            .await
            .unwrap();
        let finisher = {
            let (tasks, id) = (tasks.clone(), working.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                tasks
                    .update(&id, status(TaskState::Completed))
                    .await
                    .unwrap();
            })
        };
        let started = tokio::time::Instant::now();
        let settled = read_until_settled(&*tasks, &scope, &working).await.unwrap();
        assert_eq!(settled.state(), TaskState::Completed);
        assert!(
            started.elapsed() >= Duration::from_secs(5),
            "not before it ended"
        );
        finisher.await.unwrap();

        let asking = tasks.create(new("ask")).await.unwrap().task.id;
        tasks
            .update(&asking, status(TaskState::InputRequired))
            .await
            .unwrap();
        let settled = read_until_settled(&*tasks, &scope, &asking).await.unwrap();
        assert_eq!(settled.state(), TaskState::InputRequired);

        assert!(read_until_settled(&*tasks, &scope, "gone").await.is_none());
    }
}
