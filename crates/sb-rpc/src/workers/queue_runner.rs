use std::sync::Arc;

use async_trait::async_trait;
use futures::FutureExt;
use sb_agent::{FirstMessage, Opening, TurnOver, TurnRunner, read_until_settled};
use sb_protocol::{A2AError, Message, TaskState};
use sb_store::{EventBus, TaskRecord, WorkItem, WorkQueue};
use sb_tasks::{Scope, TaskService, TaskUpdate};

use super::Policies;
use super::session::with_retries;

#[derive(Debug, Clone)]
pub struct QueueRunner {
    pub queue: Arc<dyn WorkQueue>,
    pub bus: Arc<dyn EventBus>,
    pub tasks: Arc<dyn TaskService>,
    /// The agents served, with their queue policy.
    pub policies: Arc<dyn Policies>,
}

fn unavailable(e: impl std::fmt::Display) -> A2AError {
    tracing::error!(error = %e, "turn queue failure");
    A2AError::internal("the agent turn queue is unavailable; try again").retryable(true)
}

#[async_trait]
impl TurnRunner for QueueRunner {
    fn tasks(&self) -> &dyn TaskService {
        &*self.tasks
    }

    fn serves(&self, agent: &str) -> bool {
        self.policies.policy(agent).is_some()
    }

    /// Decided at the edge, where the agent's code is known; the queue has none.
    async fn open(&self, _agent: &str, _first: FirstMessage<'_>) -> Result<Opening, A2AError> {
        Ok(Opening::Task(None))
    }

    async fn dispatch(&self, record: &TaskRecord, message: Message) -> Result<TurnOver, A2AError> {
        let task_id = record.task.id.clone();
        let policy = self.policies.policy(&record.agent).unwrap_or_default();
        let item = WorkItem {
            task_id: task_id.clone(),
            agent: record.agent.clone(),
            owner: record.owner.clone(),
            message,
            turn_id: uuid::Uuid::new_v4().simple().to_string(),
            redeliveries: 0,
            // The worker's turn continues the trace of the request that queued it.
            traceparent: sb_telemetry::traceparent().unwrap_or_default(),
        };
        // Watch before queuing, so a turn over at once is not missed.
        let key = item.turn_key();
        let turn = with_retries(|| self.bus.watch_turn(&key))
            .await
            .map_err(unavailable)?;
        // Pushing is idempotent per turn, so it may be retried.
        let queued = with_retries(|| self.queue.push(&item, policy.max_queued)).await;
        if queued.map_err(unavailable)? {
            let (tasks, bus, scope) = (self.tasks.clone(), self.bus.clone(), Scope::of(record));
            return Ok(async move {
                if turn.await.is_ok() {
                    tracing::debug!(task_id, "turn over announced");
                    return Ok(None);
                }
                // The bus lost its connection, and maybe the announcement with it: a turn
                // still running must not look over (a stream would end mid-turn). Its end
                // is then the task ending or waiting, or an announcement heard once the
                // bus is back (a turn that leaves its task working).
                let heard_again = async {
                    let again = with_retries(|| bus.watch_turn(&key)).await;
                    let heard = match again {
                        Ok(turn) => turn.await.is_ok(),
                        Err(_) => false,
                    };
                    if !heard {
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    settled = read_until_settled(&*tasks, &scope, &task_id) => Ok(settled),
                    () = heard_again => Ok(None),
                }
            }
            .boxed());
        }
        // Rejected, not failed: the agent was never tried; the client may retry later.
        let reason = format!(
            "agent {} has no capacity: {} turns are already queued or running; try again later",
            record.agent, policy.max_queued
        );
        tracing::warn!(task_id, agent = %record.agent, "turn queue full; task rejected");
        let update = TaskUpdate::Status {
            state: TaskState::Rejected,
            message: Some(Message::agent_text(reason)),
            metadata: None,
        };
        let running = [TaskState::Submitted, TaskState::Working];
        let rejected = self.tasks.update_if(&task_id, &running, update).await?;
        Ok(futures::future::ready(Ok(rejected.map(std::sync::Arc::new))).boxed())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::workers::QueuePolicy;
    use sb_protocol::Role;
    use sb_store::redis::testing::TestRedis;
    use sb_store::{RedisBus, RedisStore, RedisWorkQueue};
    use sb_tasks::{LocalTaskService, NewTask, Scope};
    use std::collections::BTreeMap;

    /// A runner for agent "a" under `policy`, on Redis, with its task service and queue.
    async fn runner_on(
        redis: &TestRedis,
        name: &str,
        policy: QueuePolicy,
    ) -> (QueueRunner, Arc<LocalTaskService>, Arc<RedisWorkQueue>) {
        let prefix = TestRedis::prefix(name);
        let store = Arc::new(RedisStore::connect(redis.url(), &prefix).await.unwrap());
        let bus = Arc::new(RedisBus::connect(redis.url(), &prefix).await.unwrap());
        let queue = Arc::new(RedisWorkQueue::connect(redis.url(), &prefix).await.unwrap());
        let tasks = Arc::new(LocalTaskService::new(store, bus.clone()));
        let runner = QueueRunner {
            queue: queue.clone(),
            bus,
            tasks: tasks.clone(),
            policies: Arc::new(BTreeMap::from([("a".to_owned(), policy)])),
        };
        (runner, tasks, queue)
    }

    /// A new task of agent "a" whose first turn `runner` dispatched.
    async fn dispatched(
        runner: &QueueRunner,
        tasks: &LocalTaskService,
        text: &str,
    ) -> (TaskRecord, TurnOver) {
        let message = Message {
            role: Role::User,
            ..Message::agent_text(text)
        };
        let new = NewTask {
            scope: Scope {
                agent: "a".into(),
                owner: String::new(),
            },
            message: message.clone(),
            metadata: None,
        };
        let record = tasks.create(new).await.unwrap();
        let turn = runner.dispatch(&record, message).await.unwrap();
        (record, turn)
    }

    /// A full queue rejects the task (the agent was never tried), with the reason; a
    /// queue with room takes the turn.
    #[tokio::test]
    async fn a_full_queue_rejects_the_task() {
        let policy = QueuePolicy {
            max_queued: 1,
            ..QueuePolicy::default()
        };
        let (runner, tasks, queue) = runner_on(TestRedis::shared(), "queue-runner", policy).await;
        let mut records = Vec::new();
        for _ in 0..2 {
            let (record, _turn) = dispatched(&runner, &tasks, "work").await;
            records.push(record.task.id);
        }
        let scope = Scope {
            agent: "a".into(),
            owner: String::new(),
        };
        let first = tasks.get(&scope, &records[0]).await.unwrap();
        assert_eq!(
            first.state(),
            TaskState::Submitted,
            "queued, waiting for a worker"
        );
        let second = tasks.get(&scope, &records[1]).await.unwrap();
        assert_eq!(second.state(), TaskState::Rejected);
        let reason = second.task.status.message.unwrap().text();
        assert!(reason.contains("no capacity"), "{reason}");
        assert_eq!(queue.depth("a").await.unwrap(), 1);
    }

    /// A turn whose end was announced while the bus's connection was down is still
    /// seen to end: by its task, once that ends or waits. Not before: a lost signal
    /// used to end a stream mid-turn.
    #[tokio::test]
    async fn a_lost_turn_signal_waits_for_the_task_to_settle() {
        // Private: CLIENT KILL would hit every test's pub/sub connection on a shared server.
        let redis = TestRedis::spawn();
        let (runner, tasks, _) = runner_on(&redis, "lost-turn", QueuePolicy::default()).await;
        let (record, mut turn) = dispatched(&runner, &tasks, "work").await;
        let working = TaskUpdate::Status {
            state: TaskState::Working,
            message: None,
            metadata: None,
        };
        tasks.update(&record.task.id, working).await.unwrap();
        redis.command(&["CLIENT", "KILL", "TYPE", "pubsub"]).await;
        let early = tokio::time::timeout(std::time::Duration::from_millis(500), &mut turn).await;
        assert!(early.is_err(), "over while the task works: {early:?}");
        let done = TaskUpdate::Status {
            state: TaskState::Completed,
            message: None,
            metadata: None,
        };
        tasks.update(&record.task.id, done).await.unwrap();
        let over = tokio::time::timeout(std::time::Duration::from_secs(10), turn)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(over.state(), TaskState::Completed);
    }

    /// A turn that leaves its task working is still seen to end when its end is
    /// announced after the bus lost, and got back, its connection.
    #[tokio::test]
    async fn a_turn_announced_after_its_signal_was_lost_is_still_heard() {
        // Private: CLIENT KILL would hit every test's pub/sub connection on a shared server.
        let redis = TestRedis::spawn();
        let (runner, tasks, queue) = runner_on(&redis, "heard-again", QueuePolicy::default()).await;
        let (record, mut turn) = dispatched(&runner, &tasks, "keep it open").await;
        let leased = queue
            .take(
                &["a".to_owned()],
                "worker",
                1,
                std::time::Duration::from_secs(1),
            )
            .await
            .unwrap();
        redis.command(&["CLIENT", "KILL", "TYPE", "pubsub"]).await;
        let early = tokio::time::timeout(std::time::Duration::from_millis(500), &mut turn).await;
        assert!(early.is_err(), "over while the task works: {early:?}");
        // Announced until heard: the runner watches again once the bus is back.
        let key = leased[0].item.turn_key();
        let over = async {
            loop {
                runner.bus.announce_turn_over(&key).await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        };
        let heard = tokio::time::timeout(std::time::Duration::from_secs(10), async {
            tokio::select! {
                heard = &mut turn => heard,
                () = over => unreachable!(),
            }
        })
        .await
        .unwrap()
        .unwrap();
        assert!(heard.is_none(), "over, with the task left working");
        let now = tasks
            .get(&Scope::of(&record), &record.task.id)
            .await
            .unwrap();
        assert!(!now.state().is_terminal());
    }
}
