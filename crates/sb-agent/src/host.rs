//! Runs agents in process: one tokio task per turn, owned by the host (never by the
//! HTTP request that caused it), tracked for graceful shutdown.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use sb_protocol::*;
use sb_store::{EventBus, TaskRecord};
use sb_tasks::TaskService;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::api::*;

/// How long a canceled agent may take to notice before its run is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct AgentHost {
    agents: Arc<BTreeMap<String, Arc<dyn Agent>>>,
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
            agents: Arc::new(agents),
            tasks,
            bus,
            runs: TaskTracker::new(),
        }
    }

    pub fn agent(&self, name: &str) -> Option<&Arc<dyn Agent>> {
        self.agents.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.agents.keys().map(String::as_str)
    }

    /// Starts a turn of the task's agent for `message` in the background. The returned
    /// receiver resolves when the turn is over (whatever state the task is in then).
    pub fn dispatch(&self, record: &TaskRecord, message: Message) -> oneshot::Receiver<()> {
        let (turn_over, turn) = oneshot::channel();
        let Some(agent) = self.agents.get(&record.agent).cloned() else {
            tracing::error!(task_id = %record.task.id, agent = %record.agent, "no such agent hosted here");
            return turn;
        };
        let cancel = CancellationToken::new();
        let bus = self.bus.clone();
        let ctx = TaskContext {
            task: record.task.clone(),
            message,
            cancel: cancel.clone(),
        };
        let reporter = Reporter::new(self.tasks.clone(), record.task.id.clone());
        let kept_open = reporter.clone();
        // Boxed: the run's future keeps what it captured for as long as it runs, and the
        // context (~0.6 KB) is needed only to start the agent.
        let ctx = Box::new(ctx);
        let tasks = self.tasks.clone();
        let task_id = record.task.id.clone();
        self.runs.spawn(async move {
            // Subscribe before the run starts so no terminal event can slip past the watch.
            let watch = match bus.subscribe(&task_id).await {
                Ok(watch) => watch,
                Err(e) => {
                    settle(
                        &*tasks,
                        &task_id,
                        Some(Err(AgentError(format!("cannot watch the task: {e}")))),
                    )
                    .await;
                    let _ = turn_over.send(());
                    return;
                }
            };
            // The watch runs inside the run, not as a task of its own: one task per turn,
            // and a held run costs one future less.
            let outcome = tokio::select! {
                result = agent.execute(*ctx, reporter) => Some(result),
                () = async {
                    tokio::select! {
                        () = cancel_when_finished(watch, &cancel) => {}
                        () = cancel.cancelled() => {}
                    }
                    tokio::time::sleep(CANCEL_GRACE).await;
                } => None,
            };
            // What the agent reported must be durable, or refused, before its turn is judged.
            let outcome = match outcome {
                Some(Ok(())) => Some(kept_open.flush().await.map_err(AgentError::from)),
                other => other,
            };
            if !(kept_open.settled_by_agent() && matches!(outcome, Some(Ok(())))) {
                settle(&*tasks, &task_id, outcome).await;
            }
            let _ = turn_over.send(());
        });
        turn
    }

    /// Waits for running turns, at most `grace`. Returns whether all finished.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.runs.close();
        tokio::time::timeout(grace, self.runs.wait()).await.is_ok()
    }
}

/// Cancels the run when the task reaches a terminal state it did not set itself
/// (a client's cancel, a deadline): the agent sees `ctx.cancel` fire. Never returns if
/// the bus closes first (the process is stopping and the run is drained).
async fn cancel_when_finished(
    mut watch: broadcast::Receiver<sb_store::StoredEvent>,
    cancel: &CancellationToken,
) {
    loop {
        match watch.recv().await {
            Ok(event) if event.event.state().is_some_and(TaskState::is_terminal) => break,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
    cancel.cancel();
}

/// After a run: a task the agent left submitted or working is failed with the reason,
/// so no task stays silently stuck.
async fn settle(tasks: &dyn TaskService, task_id: &str, outcome: Option<Result<(), AgentError>>) {
    let reason = match outcome {
        None => "the agent did not stop after cancellation".to_owned(),
        Some(Err(e)) => format!("the agent failed: {e}"),
        Some(Ok(())) => {
            "the agent ended its turn without completing, failing or asking for input".to_owned()
        }
    };
    let update = sb_tasks::TaskUpdate::Status {
        state: TaskState::Failed,
        message: Some(Message::agent_text(reason.clone())),
    };
    let running = [TaskState::Submitted, TaskState::Working];
    match tasks.update_if(task_id, &running, update).await {
        Ok(Some(_)) => tracing::warn!(task_id, reason, "agent run ended without a final state"),
        Ok(None) => {}
        Err(e) => tracing::error!(task_id, error = %e, "could not settle an agent run"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use async_trait::async_trait;
    use sb_store::{LocalBus, MemoryStore};
    use sb_tasks::{LocalTaskService, NewTask, Scope};

    use super::*;

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

    #[tokio::test]
    async fn a_client_cancel_reaches_the_running_agent() {
        let bus = Arc::new(LocalBus::new());
        let tasks = Arc::new(LocalTaskService::new(
            Arc::new(MemoryStore::new()),
            bus.clone(),
        ));
        let agent = Arc::new(WaitsForCancel::default());
        let agents = BTreeMap::from([("a".to_owned(), agent.clone() as Arc<dyn Agent>)]);
        let host = AgentHost::new(agents, tasks.clone(), bus);
        let scope = Scope {
            agent: "a".into(),
            owner: String::new(),
        };
        let message = Message {
            role: Role::User,
            ..Message::agent_text("go")
        };
        let record = tasks
            .create(NewTask {
                scope: scope.clone(),
                message: message.clone(),
                metadata: None,
            })
            .await
            .unwrap();
        let turn = host.dispatch(&record, message);
        let working = async {
            while tasks.get(&scope, &record.task.id).await.unwrap().state() != TaskState::Working {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), working)
            .await
            .expect("the agent reports working");
        tasks.cancel(&scope, &record.task.id).await.unwrap();
        // Well inside CANCEL_GRACE: the agent stopped on its own, it was not dropped.
        tokio::time::timeout(Duration::from_secs(2), turn)
            .await
            .expect("the turn ends once the agent sees the cancel")
            .unwrap();
        assert!(agent.saw_cancel.load(Ordering::SeqCst));
        let now = tasks.get(&scope, &record.task.id).await.unwrap();
        assert_eq!(
            now.state(),
            TaskState::Canceled,
            "and nothing settles it again"
        );
    }
}
