use std::sync::Arc;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use sb_agent::turn::{TurnEnd, fail_unsettled};
use sb_registry::{AgentDefinition, RegistryError, RegistryService, Source};
use sb_store::{EventBus, WorkItem, WorkQueue};
use sb_tasks::TaskService;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

use super::session::{Session, with_retries};
use super::{HEARTBEAT, LEASE, MAX_REDELIVERIES, OnWorkerLost, Policies, QueuePolicy};
use crate::pb;
use crate::pb::worker_message::Kind as Report;

/// The `Workers.Attach` server of one task-state replica.
#[derive(Debug, Clone)]
pub struct WorkerHub {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(super) struct Inner {
    pub(super) queue: Arc<dyn WorkQueue>,
    pub(super) bus: Arc<dyn EventBus>,
    pub(super) tasks: Arc<dyn TaskService>,
    pub(super) policies: Arc<dyn Policies>,
    /// Registers the agents workers announce.
    pub(super) registry: Option<Arc<dyn RegistryService>>,
    /// Names this replica's queue consumers apart from other replicas'.
    pub(super) replica: String,
    pub(super) metrics: HubMetrics,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct AgentLabel {
    agent: String,
}

/// The scaling signals of the worker side: workers attached here, turns they hold
/// (leases), and each agent's queue (queued plus running, cluster-wide).
#[derive(Clone, Debug, Default)]
pub struct HubMetrics {
    pub(super) workers: Gauge,
    pub(super) leases: Gauge,
    queue_depth: Family<AgentLabel, Gauge>,
}

impl HubMetrics {
    pub fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.register(
            "switchboard_workers_attached",
            "Remote workers attached to this task-state replica",
            self.workers.clone(),
        );
        registry.register(
            "switchboard_worker_leases",
            "Turns leased to the workers attached here",
            self.leases.clone(),
        );
        registry.register(
            "switchboard_queue_depth",
            "Turns queued or running per agent",
            self.queue_depth.clone(),
        );
    }
}

/// How a turn ended, which decides whether its task must be failed.
#[derive(Debug)]
pub(super) enum TurnOutcome {
    /// The worker ran the turn and reported how it ended.
    Ended(TurnEnd),
    /// Nothing was run: the task ended while its turn was queued.
    NotRun,
    /// The worker was lost: fail a task still running with `reason`.
    Lost { reason: String },
}

impl WorkerHub {
    pub fn new(
        queue: Arc<dyn WorkQueue>,
        bus: Arc<dyn EventBus>,
        tasks: Arc<dyn TaskService>,
        policies: Arc<dyn Policies>,
        registry: Option<Arc<dyn RegistryService>>,
        metrics: HubMetrics,
    ) -> WorkerHub {
        let replica = format!("replica-{}", uuid::Uuid::new_v4().simple());
        WorkerHub {
            inner: Arc::new(Inner {
                queue,
                bus,
                tasks,
                policies,
                registry,
                replica,
                metrics,
            }),
        }
    }

    pub fn into_service(self) -> pb::workers_server::WorkersServer<WorkerHub> {
        pb::workers_server::WorkersServer::new(self)
    }

    /// Takes over, until `stop`, the turns whose lease expired because the replica that
    /// held them died, and re-queues or fails them by their agent's policy.
    pub fn spawn_reclaimer(&self, stop: CancellationToken) -> JoinHandle<()> {
        let inner = self.inner.clone();
        tokio::spawn(async move {
            let consumer = format!("{}/reclaimer", inner.replica);
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(HEARTBEAT * 2) => {}
                }
                for agent in &inner.policies.agents() {
                    if let Ok(depth) = inner.queue.depth(agent).await {
                        let label = AgentLabel {
                            agent: agent.clone(),
                        };
                        inner
                            .metrics
                            .queue_depth
                            .get_or_create(&label)
                            .set(depth as i64);
                    }
                    match inner.queue.reclaim(agent, &consumer, LEASE).await {
                        Ok(expired) => {
                            for leased in expired {
                                tracing::warn!(task_id = %leased.item.task_id, agent, "a turn's lease expired (its replica is gone)");
                                inner
                                    .turn_lost(
                                        &leased.entry_id,
                                        leased.item,
                                        "its worker's replica stopped",
                                    )
                                    .await;
                            }
                        }
                        Err(e) => {
                            tracing::error!(agent, error = %e, "cannot reclaim expired turns")
                        }
                    }
                }
            }
        })
    }
}

impl Inner {
    fn policy(&self, agent: &str) -> QueuePolicy {
        self.policies.policy(agent).unwrap_or_default()
    }

    /// Ends a turn: fails a task the agent left running (unless the agent settled the
    /// turn itself), removes the queue entry and tells whoever waits for the turn.
    pub(super) async fn turn_over(&self, entry_id: &str, item: &WorkItem, outcome: TurnOutcome) {
        let reason = match outcome {
            TurnOutcome::Ended(end) => end.failure_reason(),
            TurnOutcome::NotRun => None,
            TurnOutcome::Lost { reason } => Some(reason),
        };
        if let Some(reason) = reason {
            // A failure that cannot be stored is logged there; the turn is over anyway.
            let _ = fail_unsettled(&*self.tasks, &item.task_id, reason).await;
        }
        let finished = with_retries(|| self.queue.finish(&item.agent, entry_id)).await;
        if let Err(e) = finished {
            // Left pending, it is reclaimed after its lease and settled again: no loss.
            tracing::error!(task_id = %item.task_id, error = %e, "cannot remove a finished turn from the queue");
        }
        let key = item.turn_key();
        if let Err(e) = with_retries(|| self.bus.announce_turn_over(&key)).await {
            tracing::warn!(task_id = %item.task_id, error = %e, "cannot announce the end of a turn");
        }
    }

    /// A turn whose worker is gone: handed out again, or its task failed, by policy.
    pub(super) async fn turn_lost(&self, entry_id: &str, item: WorkItem, why: &str) {
        let policy = self.policy(&item.agent);
        if policy.on_worker_lost == OnWorkerLost::Reassign && item.redeliveries < MAX_REDELIVERIES {
            let again = WorkItem {
                redeliveries: item.redeliveries + 1,
                ..item.clone()
            };
            // Re-queue before removing the old entry: a crash in between duplicates the
            // turn (agents see `redeliveries`), it never loses it.
            match self.queue.push(&again, usize::MAX).await {
                Ok(_) => {
                    tracing::warn!(task_id = %item.task_id, why, attempt = again.redeliveries, "re-queued a lost turn");
                    if let Err(e) = self.queue.finish(&item.agent, entry_id).await {
                        tracing::error!(task_id = %item.task_id, error = %e, "cannot remove a re-queued turn");
                    }
                    return;
                }
                Err(e) => {
                    tracing::error!(task_id = %item.task_id, error = %e, "cannot re-queue a lost turn; failing it")
                }
            }
        }
        let reason = format!(
            "the worker running this task was lost ({why}); send the message again to retry"
        );
        self.turn_over(entry_id, &item, TurnOutcome::Lost { reason })
            .await;
    }
}

impl WorkerHub {
    /// Registers the definitions a worker announced (an operator's definition of the
    /// same agent wins); waits until they are served here.
    async fn announce(&self, hello: &pb::Hello) -> Result<(), Status> {
        if hello.definitions.is_empty() {
            return Ok(());
        }
        let Some(registry) = &self.inner.registry else {
            return Err(Status::failed_precondition(
                "this task-state service takes no agent definitions from workers",
            ));
        };
        for (i, json) in hello.definitions.iter().enumerate() {
            let definition: AgentDefinition = serde_json::from_str(json).map_err(|e| {
                Status::invalid_argument(format!(
                    "Hello.definitions[{i}] is not an agent definition: {e}"
                ))
            })?;
            if !hello.agents.contains(&definition.name) {
                return Err(Status::invalid_argument(format!(
                    "Hello.definitions[{i}] defines agent {:?}, which Hello.agents does not name",
                    definition.name
                )));
            }
            let name = definition.name.clone();
            let put = registry
                .put(definition, Source::Worker)
                .await
                .map_err(|e| match e {
                    RegistryError::Invalid(field) => Status::invalid_argument(format!(
                        "Hello.definitions[{i}] (agent {name:?}): {field}"
                    )),
                    other => Status::unavailable(other.to_string()),
                })?;
            if put.changed {
                tracing::info!(agent = %name, worker = %hello.worker_id, version = put.agent.registration.version(), "agent registered as its worker announced it");
            }
        }
        Ok(())
    }
}

#[tonic::async_trait]
impl pb::workers_server::Workers for WorkerHub {
    type AttachStream = ReceiverStream<Result<pb::WorkerCommand, Status>>;

    async fn attach(
        &self,
        request: Request<Streaming<pb::WorkerMessage>>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        let mut inbound = request.into_inner();
        let first = tokio::time::timeout(LEASE, inbound.message())
            .await
            .map_err(|_| Status::deadline_exceeded("a worker must send Hello first"))??;
        let Some(pb::WorkerMessage {
            kind: Some(Report::Hello(hello)),
        }) = first
        else {
            return Err(Status::invalid_argument("a worker must send Hello first"));
        };
        if hello.agents.is_empty() || hello.capacity == 0 {
            return Err(Status::invalid_argument(
                "Hello must name at least one agent and a capacity of at least 1",
            ));
        }
        self.announce(&hello).await?;
        if let Some(unknown) = hello
            .agents
            .iter()
            .find(|a| self.inner.policies.policy(a).is_none())
        {
            return Err(Status::invalid_argument(format!(
                "agent {unknown:?} is not registered on this Switchboard (configure it, register it, or announce its definition in Hello); registered: {}",
                self.inner.policies.agents().join(", ")
            )));
        }
        let (commands, outbound) = mpsc::channel(64);
        let session = Session::new(self.inner.clone(), hello, commands);
        tokio::spawn(session.run(inbound));
        Ok(Response::new(ReceiverStream::new(outbound)))
    }
}
