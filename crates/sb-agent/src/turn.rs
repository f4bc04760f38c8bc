//! One agent turn, wherever it runs: [`run_turn`] executes the agent for one user
//! message, stops it when told to (a cancel, a task ended by someone else) with a grace
//! period, makes what it reported durable, and judges how the turn ended
//! ([`TurnEnd`]); [`fail_unsettled`] is the one place a task left running by its turn is
//! failed. The in-process host ([`crate::AgentHost`]) and a remote worker
//! (`sb_rpc::workers`) both run turns through here; on a worker, the task-state service
//! fails what the turn left running, with the same reasons.

use std::future::Future;
use std::time::Duration;

use sb_protocol::{A2AError, Message, TaskState};
use sb_tasks::{TaskService, TaskUpdate};

use crate::api::{Agent, AgentError, Reporter, TaskContext};

/// How long a canceled agent may take to notice before its run is dropped.
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The reason a task is failed with when its agent returned from a turn without saying
/// where the task stands.
pub const ENDED_WITHOUT_A_STATE: &str =
    "the agent ended its turn without completing, failing or asking for input";

/// The reason a task is failed with when its agent outlived [`CANCEL_GRACE`].
pub const DID_NOT_STOP: &str = "the agent did not stop after cancellation";

/// How a turn ended, as far as its task is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// The agent chose where the task stands: a final or waiting state, or kept open.
    Chosen,
    /// The agent returned with the task still submitted or working.
    WithoutAState,
    /// The agent returned an error, or what it reported was refused.
    Failed(String),
    /// The agent did not stop within [`CANCEL_GRACE`] of being told to; it was dropped.
    DidNotStop,
}

impl TurnEnd {
    /// Why the task must be failed, if it must.
    pub fn failure_reason(&self) -> Option<String> {
        match self {
            TurnEnd::Chosen => None,
            TurnEnd::WithoutAState => Some(ENDED_WITHOUT_A_STATE.to_owned()),
            TurnEnd::Failed(error) => Some(format!("the agent failed: {error}")),
            TurnEnd::DidNotStop => Some(DID_NOT_STOP.to_owned()),
        }
    }
}

/// Runs `agent` for one turn: until it returns, or, once `stop` resolves, until it
/// notices `ctx.cancel` (fired then) or [`CANCEL_GRACE`] runs out. What it reported is
/// durable (or refused) before the turn is judged.
pub async fn run_turn(
    agent: &dyn Agent,
    ctx: TaskContext,
    reporter: Reporter,
    stop: impl Future<Output = ()>,
) -> TurnEnd {
    let cancel = ctx.cancel.clone();
    let judge = reporter.clone();
    // Biased, the agent first: its own final report also ends the task, which can make
    // `stop` ready in the same wake; the agent's return is the better news.
    let outcome = tokio::select! {
        biased;
        result = agent.execute(ctx, reporter) => Some(result),
        () = async {
            stop.await;
            cancel.cancel();
            tokio::time::sleep(CANCEL_GRACE).await;
        } => None,
    };
    let outcome = match outcome {
        Some(Ok(())) => Some(judge.flush().await.map_err(AgentError::from)),
        other => other,
    };
    match outcome {
        Some(Ok(())) if judge.chose_task_state() => TurnEnd::Chosen,
        Some(Ok(())) => TurnEnd::WithoutAState,
        Some(Err(AgentError(error))) => TurnEnd::Failed(error),
        None => TurnEnd::DidNotStop,
    }
}

/// Fails the task with `reason` if it is still submitted or working, so no task stays
/// silently stuck after a turn. An error when that failure could not be stored: the
/// task is left as it was stored before, which is not how the turn ended.
pub async fn fail_unsettled(
    tasks: &dyn TaskService,
    task_id: &str,
    reason: String,
) -> Result<(), A2AError> {
    let update = TaskUpdate::Status {
        state: TaskState::Failed,
        message: Some(Message::agent_text(reason.clone())),
        metadata: None,
    };
    let running = [TaskState::Submitted, TaskState::Working];
    match tasks.update_if(task_id, &running, update).await {
        Ok(Some(_)) => {
            tracing::warn!(task_id, reason, "a turn ended without a final state");
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => {
            tracing::error!(task_id, error = %e, "could not fail a turn's unsettled task");
            Err(A2AError::internal(format!(
                "task {task_id}'s turn ended ({reason}) but the task could not be updated: \
                 {}; it stays as last stored",
                e.message
            ))
            .with_task(task_id))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use sb_protocol::Role;
    use sb_store::{LocalBus, MemoryStore};
    use sb_tasks::{LocalTaskService, NewTask, Scope};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::api::AgentDescriptor;

    /// Reports working, then does what it was built to do.
    #[derive(Debug)]
    enum Script {
        Complete,
        ReturnWorking,
        Fail,
        IgnoreCancel,
    }

    #[async_trait]
    impl Agent for Script {
        fn describe(&self) -> AgentDescriptor {
            AgentDescriptor {
                description: "reports working, then follows its script".into(),
                skills: Vec::new(),
                input_modes: Vec::new(),
                output_modes: Vec::new(),
            }
        }

        async fn execute(&self, ctx: TaskContext, reporter: Reporter) -> Result<(), AgentError> {
            reporter.working(None).await?;
            match self {
                Script::Complete => {
                    reporter.complete(None).await?;
                }
                Script::ReturnWorking => {}
                Script::Fail => return Err(AgentError("the model is down".into())),
                Script::IgnoreCancel => {
                    ctx.cancel.cancelled().await;
                    std::future::pending::<()>().await;
                }
            }
            Ok(())
        }
    }

    async fn turn_of(agent: Script, stop: impl Future<Output = ()>) -> (TurnEnd, TaskState) {
        let tasks = Arc::new(LocalTaskService::new(
            Arc::new(MemoryStore::new()),
            Arc::new(LocalBus::new()),
        ));
        let record = tasks
            .create(NewTask {
                scope: Scope {
                    agent: "a".into(),
                    owner: String::new(),
                },
                message: Message {
                    role: Role::User,
                    ..Message::agent_text("go")
                },
                metadata: None,
            })
            .await
            .unwrap();
        let id = record.task.id.clone();
        let ctx = TaskContext {
            message: Box::new(record.task.history[0].clone()),
            task: Box::new(record.task),
            cancel: CancellationToken::new(),
        };
        let reporter = Reporter::new(tasks.clone(), id.clone());
        let end = run_turn(&agent, ctx, reporter, stop).await;
        if let Some(reason) = end.failure_reason() {
            fail_unsettled(&*tasks, &id, reason).await.unwrap();
        }
        let scope = Scope {
            agent: "a".into(),
            owner: String::new(),
        };
        (end, tasks.get(&scope, &id).await.unwrap().state())
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_is_judged_by_how_the_agent_left_its_task() {
        let never = std::future::pending::<()>;
        assert_eq!(
            turn_of(Script::Complete, never()).await,
            (TurnEnd::Chosen, TaskState::Completed)
        );
        assert_eq!(
            turn_of(Script::ReturnWorking, never()).await,
            (TurnEnd::WithoutAState, TaskState::Failed)
        );
        assert_eq!(
            turn_of(Script::Fail, never()).await,
            (
                TurnEnd::Failed("the model is down".into()),
                TaskState::Failed
            )
        );
        let stop_at_once = async {};
        let started = tokio::time::Instant::now();
        assert_eq!(
            turn_of(Script::IgnoreCancel, stop_at_once).await,
            (TurnEnd::DidNotStop, TaskState::Failed)
        );
        assert!(started.elapsed() >= CANCEL_GRACE, "the agent had its grace");
    }

    #[test]
    fn only_a_turn_whose_agent_chose_a_state_leaves_its_task_alone() {
        assert_eq!(TurnEnd::Chosen.failure_reason(), None);
        assert_eq!(
            TurnEnd::WithoutAState.failure_reason().as_deref(),
            Some(ENDED_WITHOUT_A_STATE)
        );
        assert_eq!(
            TurnEnd::Failed("x".into()).failure_reason().as_deref(),
            Some("the agent failed: x")
        );
        assert_eq!(
            TurnEnd::DidNotStop.failure_reason().as_deref(),
            Some(DID_NOT_STOP)
        );
    }
}
