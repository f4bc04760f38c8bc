use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use sb_protocol::{Message, TaskState};
use sb_store::{EventBus, Leased, WorkItem, WorkQueue};
use sb_tasks::{Scope, TaskService, TaskUpdate};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

use super::{HEARTBEAT, LEASE, MAX_REDELIVERIES, OnWorkerLost, QueuePolicy};
use crate::pb;
use crate::pb::worker_command::Kind as Command;
use crate::pb::worker_message::Kind as Report;
use crate::wire::to_json;

/// The `Workers.Attach` server of one task-state replica.
#[derive(Debug, Clone)]
pub struct WorkerHub {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    queue: Arc<dyn WorkQueue>,
    bus: Arc<dyn EventBus>,
    tasks: Arc<dyn TaskService>,
    policies: Arc<BTreeMap<String, QueuePolicy>>,
    /// Names this replica's queue consumers apart from other replicas'.
    replica: String,
    metrics: HubMetrics,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct AgentLabel {
    agent: String,
}

/// The scaling signals of the worker side: workers attached here, turns they hold
/// (leases), and each agent's queue (queued plus running, cluster-wide).
#[derive(Clone, Debug, Default)]
pub struct HubMetrics {
    workers: Gauge,
    leases: Gauge,
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
enum TurnOutcome {
    /// The agent left the task in a state of its choosing (or nothing was run).
    Settled,
    /// The agent's turn ended with the task still running (`error`: why, if it failed).
    Unsettled { error: String },
    /// The worker was lost: fail a task still running with `reason`.
    Lost { reason: String },
}

/// A turn handed to a worker and not yet over.
#[derive(Debug)]
struct Running {
    item: WorkItem,
    watcher: JoinHandle<()>,
    _permit: OwnedSemaphorePermit,
    _lease: Lease,
}

/// Counts a leased turn for as long as it is held.
#[derive(Debug)]
struct Lease(Gauge);

impl Lease {
    fn new(gauge: &Gauge) -> Lease {
        gauge.inc();
        Lease(gauge.clone())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.0.dec();
    }
}

type Sessions = Arc<Mutex<HashMap<String, Running>>>;

impl WorkerHub {
    pub fn new(
        queue: Arc<dyn WorkQueue>,
        bus: Arc<dyn EventBus>,
        tasks: Arc<dyn TaskService>,
        policies: Arc<BTreeMap<String, QueuePolicy>>,
        metrics: HubMetrics,
    ) -> WorkerHub {
        let replica = format!("replica-{}", uuid::Uuid::new_v4().simple());
        WorkerHub {
            inner: Arc::new(Inner {
                queue,
                bus,
                tasks,
                policies,
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
                for agent in inner.policies.keys() {
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
        self.policies.get(agent).cloned().unwrap_or_default()
    }

    /// Ends a turn: fails a task the agent left running (unless the agent settled the
    /// turn itself), removes the queue entry and tells whoever waits for the turn.
    async fn turn_over(&self, entry_id: &str, item: &WorkItem, outcome: TurnOutcome) {
        let reason = match outcome {
            TurnOutcome::Settled => None,
            TurnOutcome::Unsettled { error } if error.is_empty() => Some(
                "the agent ended its turn without completing, failing or asking for input"
                    .to_owned(),
            ),
            TurnOutcome::Unsettled { error } => Some(format!("the agent failed: {error}")),
            TurnOutcome::Lost { reason } => Some(reason),
        };
        if let Some(reason) = reason {
            self.fail_if_running(&item.task_id, reason).await;
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

    async fn fail_if_running(&self, task_id: &str, reason: String) {
        let update = TaskUpdate::Status {
            state: TaskState::Failed,
            message: Some(Message::agent_text(reason.clone())),
        };
        let running = [TaskState::Submitted, TaskState::Working];
        match self.tasks.update_if(task_id, &running, update).await {
            Ok(Some(_)) => tracing::warn!(task_id, reason, "turn ended without a final state"),
            Ok(None) => {}
            Err(e) => tracing::error!(task_id, error = %e, "cannot settle a turn"),
        }
    }

    /// A turn whose worker is gone: handed out again, or its task failed, by policy.
    async fn turn_lost(&self, entry_id: &str, item: WorkItem, why: &str) {
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
        if let Some(unknown) = hello
            .agents
            .iter()
            .find(|a| !self.inner.policies.contains_key(*a))
        {
            return Err(Status::invalid_argument(format!(
                "agent {unknown:?} is not configured on this Switchboard; configured: {}",
                self.inner
                    .policies
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let (commands, outbound) = mpsc::channel(64);
        let session = Session {
            hub: self.inner.clone(),
            consumer: format!(
                "{}/{}/{}",
                self.inner.replica,
                hello.worker_id,
                uuid::Uuid::new_v4().simple()
            ),
            worker_id: hello.worker_id,
            agents: hello.agents,
            permits: Arc::new(Semaphore::new(hello.capacity.min(10_000) as usize)),
            running: Sessions::default(),
            commands,
        };
        tokio::spawn(session.run(inbound));
        Ok(Response::new(ReceiverStream::new(outbound)))
    }
}

/// One connected worker.
struct Session {
    hub: Arc<Inner>,
    consumer: String,
    worker_id: String,
    agents: Vec<String>,
    permits: Arc<Semaphore>,
    running: Sessions,
    commands: mpsc::Sender<Result<pb::WorkerCommand, Status>>,
}

impl Session {
    async fn run(self, mut inbound: Streaming<pb::WorkerMessage>) {
        tracing::info!(worker = %self.worker_id, agents = ?self.agents, "worker attached");
        self.hub.metrics.workers.inc();
        let taker = tokio::spawn(self.take_turns());
        let mut renew = tokio::time::interval(HEARTBEAT);
        let why = loop {
            tokio::select! {
                report = tokio::time::timeout(LEASE, inbound.message()) => match report {
                    Err(_) => break "it stopped heartbeating",
                    Ok(Err(_)) | Ok(Ok(None)) => break "it disconnected",
                    Ok(Ok(Some(pb::WorkerMessage { kind: Some(Report::TurnDone(done)) }))) => {
                        self.turn_done(done).await;
                    }
                    Ok(Ok(Some(_))) => {}
                },
                _ = renew.tick() => self.renew().await,
            }
        };
        taker.abort();
        let lost: Vec<(String, Running)> = self.running.lock().drain().collect();
        if !lost.is_empty() {
            tracing::warn!(worker = %self.worker_id, turns = lost.len(), why, "worker lost with turns running");
        }
        for (entry_id, running) in lost {
            running.watcher.abort();
            self.hub.turn_lost(&entry_id, running.item, why).await;
        }
        self.hub.metrics.workers.dec();
        tracing::info!(worker = %self.worker_id, "worker detached");
    }

    fn take_turns(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let hub = self.hub.clone();
        let agents = self.agents.clone();
        let consumer = self.consumer.clone();
        let permits = self.permits.clone();
        let running = self.running.clone();
        let commands = self.commands.clone();
        async move {
            loop {
                let Ok(permit) = permits.clone().acquire_owned().await else {
                    return;
                };
                let leased = match hub
                    .queue
                    .take(&agents, &consumer, Duration::from_secs(2))
                    .await
                {
                    Ok(Some(leased)) => leased,
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot take turns from the queue");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                if !assign(&hub, leased, permit, &running, &commands).await {
                    return;
                }
            }
        }
    }

    async fn renew(&self) {
        let mut by_agent: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (entry_id, running) in self.running.lock().iter() {
            by_agent
                .entry(running.item.agent.clone())
                .or_default()
                .push(entry_id.clone());
        }
        for (agent, entries) in by_agent {
            if let Err(e) = self.hub.queue.renew(&agent, &self.consumer, &entries).await {
                tracing::error!(agent, error = %e, "cannot renew turn leases");
            }
        }
    }

    async fn turn_done(&self, done: pb::TurnDone) {
        let Some(running) = self.running.lock().remove(&done.assignment_id) else {
            return;
        };
        running.watcher.abort();
        let outcome = match done.settled_by_agent {
            true => TurnOutcome::Settled,
            false => TurnOutcome::Unsettled { error: done.error },
        };
        self.hub
            .turn_over(&done.assignment_id, &running.item, outcome)
            .await;
    }
}

/// Hands a taken turn to the worker. Returns false when the worker is gone.
async fn assign(
    hub: &Arc<Inner>,
    leased: Leased,
    permit: OwnedSemaphorePermit,
    running: &Sessions,
    commands: &mpsc::Sender<Result<pb::WorkerCommand, Status>>,
) -> bool {
    let Leased { entry_id, item } = leased;
    let scope = Scope {
        agent: item.agent.clone(),
        owner: item.owner.clone(),
    };
    let found = with_retries(|| async {
        match hub.tasks.get(&scope, &item.task_id).await {
            Ok(record) => Ok(Some(record)),
            Err(e) if e.kind == sb_protocol::ErrorKind::TaskNotFound => Ok(None),
            Err(e) => Err(e),
        }
    })
    .await;
    let record = match found {
        Ok(Some(record)) if !record.state().is_terminal() => record,
        // Canceled (or evicted) while queued: nothing to run.
        Ok(_) => {
            hub.turn_over(&entry_id, &item, TurnOutcome::Settled).await;
            return true;
        }
        // The store is down: the entry stays leased here and is reclaimed once the
        // lease runs out, by when the store is likely back.
        Err(e) => {
            tracing::error!(task_id = %item.task_id, error = %e, "cannot read a queued task; leaving its turn to be reclaimed");
            return true;
        }
    };
    let watcher = match hub.bus.subscribe(&item.task_id).await {
        Ok(events) => tokio::spawn(forward_cancel(
            hub.clone(),
            events,
            entry_id.clone(),
            scope.clone(),
            item.task_id.clone(),
            commands.clone(),
        )),
        Err(e) => {
            tracing::error!(error = %e, "cannot watch a task for cancellation; leaving its turn queued");
            return true;
        }
    };
    let assignment = pb::Assignment {
        assignment_id: entry_id.clone(),
        record: Some(pb::TaskRecord {
            json: to_json(&record),
        }),
        message_json: to_json(&item.message),
        traceparent: item.traceparent.clone(),
        redeliveries: item.redeliveries,
    };
    running.lock().insert(
        entry_id,
        Running {
            item,
            watcher,
            _permit: permit,
            _lease: Lease::new(&hub.metrics.leases),
        },
    );
    let command = pb::WorkerCommand {
        kind: Some(Command::Assignment(assignment)),
    };
    commands.send(Ok(command)).await.is_ok()
}

/// Runs `op` up to five times over about three seconds: Redis may be restarting (a
/// broken connection fails one command, then the client reconnects).
async fn with_retries<T, E, F, Fut>(mut op: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut delay = Duration::from_millis(100);
    for _ in 0..4 {
        match op().await {
            Ok(value) => return Ok(value),
            Err(_) => tokio::time::sleep(delay).await,
        }
        delay *= 2;
    }
    op().await
}

/// Tells the worker to stop when the task ends by someone else's hand (a client's
/// cancel, a deadline).
async fn forward_cancel(
    hub: Arc<Inner>,
    mut events: tokio::sync::broadcast::Receiver<sb_store::StoredEvent>,
    assignment_id: String,
    scope: Scope,
    task_id: String,
    commands: mpsc::Sender<Result<pb::WorkerCommand, Status>>,
) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        match events.recv().await {
            Ok(event) if event.event.state().is_some_and(TaskState::is_terminal) => break,
            Ok(_) | Err(RecvError::Lagged(_)) => continue,
            // The bus dropped the subscription (its Redis connection was replaced):
            // subscribe again, then look at the task for what happened in between.
            Err(RecvError::Closed) => {
                let Ok(again) = with_retries(|| hub.bus.subscribe(&task_id)).await else {
                    tracing::error!(task_id, "cannot watch a task for cancellation any more");
                    return;
                };
                events = again;
                let now = hub.tasks.get(&scope, &task_id).await;
                if now.is_ok_and(|record| record.state().is_terminal()) {
                    break;
                }
            }
        }
    }
    let cancel = pb::WorkerCommand {
        kind: Some(Command::Cancel(pb::Cancel {
            task_id,
            assignment_id,
        })),
    };
    let _ = commands.send(Ok(cancel)).await;
}
