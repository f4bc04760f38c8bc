//! How the edge starts agent turns without knowing where agents run: in this process
//! ([`crate::AgentHost`]) or on remote workers behind the task-state service.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::BoxFuture;
use sb_protocol::{A2AError, Message};
use sb_store::TaskRecord;
use sb_tasks::{NewTask, TaskService};

/// Resolves when an agent's turn is over or its task has ended, whichever comes first
/// (or once that can no longer be known), with the task as it then stood when the runner
/// has it at hand (`None`: read it from the task service).
pub type TurnOver = BoxFuture<'static, Option<Arc<TaskRecord>>>;

#[async_trait]
pub trait TurnRunner: Send + Sync + std::fmt::Debug + 'static {
    /// Whether `agent` is served here (other names are not found).
    fn serves(&self, agent: &str) -> bool;
    /// The agent's reply without a task, when it gives one for this message.
    fn direct_reply(&self, agent: &str, message: &Message) -> Option<Message>;
    /// Starts (or durably queues) a turn of the task's agent for `message`, and how to
    /// know it is over. Dropping the [`TurnOver`] does not stop the turn.
    async fn dispatch(&self, record: &TaskRecord, message: Message) -> Result<TurnOver, A2AError>;
    /// Creates a task through `tasks` and starts its first turn: the task as created
    /// and the turn's end, as [`TurnRunner::dispatch`]. A runner whose agents run in
    /// this process may commit the creation together with the agent's first reports.
    async fn start(
        &self,
        tasks: &dyn TaskService,
        new: NewTask,
    ) -> Result<(TaskRecord, TurnOver), A2AError> {
        let record = tasks.create(new).await?;
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
        tasks: &dyn TaskService,
        new: NewTask,
        wait: Duration,
    ) -> Result<Arc<TaskRecord>, A2AError> {
        let scope = new.scope.clone();
        let (record, turn) = self.start(tasks, new).await?;
        settle(tasks, &scope, &record.task.id, turn, wait).await
    }
}

/// Task `task_id` once `turn` is over (or `wait` has run out): as the runner handed it
/// over, else read from `tasks`.
pub async fn settle(
    tasks: &dyn TaskService,
    scope: &sb_tasks::Scope,
    task_id: &str,
    turn: TurnOver,
    wait: Duration,
) -> Result<Arc<TaskRecord>, A2AError> {
    match tokio::time::timeout(wait, turn).await {
        Ok(Some(settled)) => Ok(settled),
        _ => tasks.get(scope, task_id).await.map(Arc::new),
    }
}

#[async_trait]
impl TurnRunner for crate::AgentHost {
    fn serves(&self, agent: &str) -> bool {
        self.agent(agent).is_some()
    }

    fn direct_reply(&self, agent: &str, message: &Message) -> Option<Message> {
        self.agent(agent)?.direct_reply(message)
    }

    async fn dispatch(&self, record: &TaskRecord, message: Message) -> Result<TurnOver, A2AError> {
        Ok(turn_over_signal(crate::AgentHost::dispatch(
            self, record, message,
        )))
    }

    /// Through the host's own task service, which its agents report to (the same one
    /// as `_tasks` where both exist).
    async fn start(
        &self,
        _tasks: &dyn TaskService,
        new: NewTask,
    ) -> Result<(TaskRecord, TurnOver), A2AError> {
        let launched = crate::AgentHost::launch(self, new).await?;
        // A task the creation's commit already ended (the echo agent reports all it does
        // before that commit) changes no more: its turn is over as far as any waiter is
        // concerned, and the task is at hand, so nobody waits for the run or reads it.
        let turn = match launched.first_round.filter(|r| r.state().is_terminal()) {
            Some(ended) => futures::future::ready(Some(ended)).boxed(),
            None => turn_over_signal(launched.turn),
        };
        Ok((launched.submitted, turn))
    }
}

/// A [`TurnOver`] from a bare signal, with no record: the task service has the task,
/// a read away (in this process, reading it costs less than carrying it).
pub fn turn_over_signal(turn: tokio::sync::oneshot::Receiver<()>) -> TurnOver {
    turn.map(|_| None).boxed()
}
