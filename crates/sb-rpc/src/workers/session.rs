//! One attached worker: hands it queued turns within its capacity, holds their leases
//! while it lives, forwards cancellations, and hands its turns back when it is lost.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::metrics::gauge::Gauge;
use sb_store::backoff::Backoff;
use sb_store::{Leased, WorkItem};
use sb_tasks::Scope;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;
use tonic::{Status, Streaming};

use super::HEARTBEAT;
use super::LEASE;
use super::assignment::assignment_id;
use super::hub::{Inner, TurnOutcome};
use super::turn_done;
use crate::pb;
use crate::pb::worker_command::Kind as Command;
use crate::pb::worker_message::Kind as Report;
use crate::wire::to_json;

/// A turn handed to a worker and not yet over (by assignment id).
#[derive(Debug)]
struct Running {
    /// Its queue entry.
    entry_id: String,
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

/// Turns taken from the queue in one read at most.
const TAKE_BATCH: usize = 64;

/// One connected worker.
pub(super) struct Session {
    hub: Arc<Inner>,
    consumer: String,
    worker_id: String,
    agents: Vec<String>,
    permits: Arc<Semaphore>,
    running: Sessions,
    commands: mpsc::Sender<Result<pb::WorkerCommand, Status>>,
}

impl Session {
    pub(super) fn new(
        hub: Arc<Inner>,
        hello: pb::Hello,
        commands: mpsc::Sender<Result<pb::WorkerCommand, Status>>,
    ) -> Session {
        let unique = uuid::Uuid::new_v4().simple();
        Session {
            consumer: format!("{}/{}/{unique}", hub.replica, hello.worker_id),
            hub,
            worker_id: hello.worker_id,
            agents: hello.agents,
            permits: Arc::new(Semaphore::new(hello.capacity.min(10_000) as usize)),
            running: Sessions::default(),
            commands,
        }
    }

    pub(super) async fn run(self, mut inbound: Streaming<pb::WorkerMessage>) {
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
        for (_, running) in lost {
            running.watcher.abort();
            self.hub
                .turn_lost(&running.entry_id, running.item, why)
                .await;
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
                // Room for one turn at least, then for as many as are free (up to a batch):
                // one read leases them all, and they are handed over concurrently, so a
                // queue backlog drains at the worker's pace, not one round trip per turn.
                let Ok(mut room) = permits.clone().acquire_owned().await else {
                    return;
                };
                let more = permits.available_permits().min(TAKE_BATCH - 1);
                if more > 0
                    && let Ok(extra) = permits.clone().try_acquire_many_owned(more as u32)
                {
                    room.merge(extra);
                }
                let max = room.num_permits();
                let leased = match hub
                    .queue
                    .take(&agents, &consumer, max, Duration::from_secs(2))
                    .await
                {
                    Ok(leased) => leased,
                    Err(e) => {
                        tracing::error!(error = %e, "cannot take turns from the queue");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        continue;
                    }
                };
                // One permit per turn; the ones left over are released with `room`.
                let mut handing = Vec::with_capacity(leased.len());
                for leased in leased {
                    match room.split(1) {
                        Some(permit) => {
                            handing.push(assign(&hub, leased, permit, &running, &commands))
                        }
                        None => tracing::error!(
                            task_id = %leased.item.task_id,
                            "the queue leased more turns than asked for; leaving one to be reclaimed"
                        ),
                    }
                }
                let handed = futures::future::join_all(handing).await;
                if handed.contains(&false) {
                    return;
                }
            }
        }
    }

    async fn renew(&self) {
        let mut by_agent: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for running in self.running.lock().values() {
            by_agent
                .entry(running.item.agent.clone())
                .or_default()
                .push(running.entry_id.clone());
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
        let outcome = TurnOutcome::Ended(turn_done::read(&done));
        self.hub
            .turn_over(&running.entry_id, &running.item, outcome)
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
    // Watched before the read, so an end between the two is not missed.
    let ended = match hub.bus.watch_end(&item.task_id).await {
        Ok(ended) => ended,
        Err(e) => {
            tracing::error!(error = %e, "cannot watch a task for cancellation; leaving its turn to be reclaimed");
            return true;
        }
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
        Ok(found) => {
            tracing::info!(
                task_id = %item.task_id,
                state = found.as_ref().map(|r| r.state().as_v03_str()),
                "a queued turn's task has ended or is gone; the turn is not run"
            );
            hub.turn_over(&entry_id, &item, TurnOutcome::NotRun).await;
            return true;
        }
        // The store is down: the entry stays leased here and is reclaimed once the
        // lease runs out, by when the store is likely back.
        Err(e) => {
            tracing::error!(task_id = %item.task_id, error = %e, "cannot read a queued task; leaving its turn to be reclaimed");
            return true;
        }
    };
    let assigned = assignment_id(&item.agent, &entry_id);
    let watcher = tokio::spawn(forward_cancel(
        hub.clone(),
        ended,
        assigned.clone(),
        scope.clone(),
        item.task_id.clone(),
        commands.clone(),
    ));
    let assignment = pb::Assignment {
        assignment_id: assigned.clone(),
        record: Some(pb::TaskRecord {
            json: to_json(&record),
        }),
        message_json: to_json(&item.message),
        traceparent: item.traceparent.clone(),
        redeliveries: item.redeliveries,
    };
    running.lock().insert(
        assigned,
        Running {
            entry_id,
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

/// Runs `op` up to five times over about two to three seconds: Redis may be restarting
/// (a broken connection fails one command, then the client reconnects).
pub(super) async fn with_retries<T, E, F, Fut>(op: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    Backoff::doubling_times(Duration::from_millis(100), Duration::from_secs(1), 4)
        .retry(op)
        .await
}

/// Tells the worker to stop when the task ends by someone else's hand (a client's
/// cancel, a deadline). An end by the worker's own report also fires it, just before its
/// turn is over, and the worker ignores a cancel for an assignment it has finished.
async fn forward_cancel(
    hub: Arc<Inner>,
    mut ended: tokio::sync::oneshot::Receiver<()>,
    assignment_id: String,
    scope: Scope,
    task_id: String,
    commands: mpsc::Sender<Result<pb::WorkerCommand, Status>>,
) {
    // A failed receiver: the bus lost its connection, and the signal with it. Watch
    // again, then look at the task for what happened in between.
    while ended.await.is_err() {
        let Ok(again) = with_retries(|| hub.bus.watch_end(&task_id)).await else {
            tracing::error!(task_id, "cannot watch a task for cancellation any more");
            return;
        };
        ended = again;
        let now = hub.tasks.get(&scope, &task_id).await;
        if now.is_ok_and(|record| record.state().is_terminal()) {
            break;
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
