//! How the edge starts agent turns without knowing where agents run: in this process
//! ([`crate::AgentHost`]) or on remote workers behind the task-state service.

use async_trait::async_trait;
use sb_protocol::{A2AError, Message};
use sb_store::TaskRecord;
use sb_tasks::{NewTask, TaskService};
use tokio::sync::oneshot;

#[async_trait]
pub trait TurnRunner: Send + Sync + std::fmt::Debug + 'static {
    /// Whether `agent` is served here (other names are not found).
    fn serves(&self, agent: &str) -> bool;
    /// The agent's reply without a task, when it gives one for this message.
    fn direct_reply(&self, agent: &str, message: &Message) -> Option<Message>;
    /// Starts (or durably queues) a turn of the task's agent for `message`. The receiver
    /// resolves when the turn is over, whatever state the task is in then; it is dropped
    /// without a value if that can no longer be known.
    async fn dispatch(
        &self,
        record: &TaskRecord,
        message: Message,
    ) -> Result<oneshot::Receiver<()>, A2AError>;
    /// Creates a task through `tasks` and starts its first turn: the task as created
    /// and the turn's end, as [`TurnRunner::dispatch`]. A runner whose agents run in
    /// this process may commit the creation together with the agent's first reports.
    async fn start(
        &self,
        tasks: &dyn TaskService,
        new: NewTask,
    ) -> Result<(TaskRecord, oneshot::Receiver<()>), A2AError> {
        let record = tasks.create(new).await?;
        let turn = self
            .dispatch(&record, crate::host::first_message(&record)?)
            .await?;
        Ok((record, turn))
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

    async fn dispatch(
        &self,
        record: &TaskRecord,
        message: Message,
    ) -> Result<oneshot::Receiver<()>, A2AError> {
        Ok(crate::AgentHost::dispatch(self, record, message))
    }

    /// Through the host's own task service, which its agents report to (the same one
    /// as `_tasks` where both exist).
    async fn start(
        &self,
        _tasks: &dyn TaskService,
        new: NewTask,
    ) -> Result<(TaskRecord, oneshot::Receiver<()>), A2AError> {
        crate::AgentHost::start(self, new).await
    }
}
