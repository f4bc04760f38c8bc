use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use sb_agent::turn::{TurnEnd, run_turn};
use sb_agent::{Agent, Reporter, TaskContext};
use sb_protocol::Message;
use sb_store::TaskRecord;
use sb_store::backoff::Backoff;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use super::{HEARTBEAT, turn_done};
use crate::pb;
use crate::pb::worker_command::Kind as Command;
use crate::pb::worker_message::Kind as Report;
use crate::tasks::TaskStateClient;
use crate::wire::{connect, from_json};

#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The task-state service (comma-separated replica URLs).
    pub tasks_url: String,
    /// Unique per worker process; shows in the service's logs.
    pub worker_id: String,
    /// Turns run at once.
    pub capacity: u32,
    pub agents: BTreeMap<String, Arc<dyn Agent>>,
    /// Definitions of served agents to announce: each is registered unless an operator
    /// configured or registered the agent, so the agent describes itself.
    pub definitions: Vec<sb_registry::AgentDefinition>,
}

type Runs = Arc<Mutex<HashMap<String, CancellationToken>>>;

/// The pauses between attempts to reach the task-state service again.
const RECONNECT_FIRST: Duration = Duration::from_millis(200);
const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// Serves turns until `stop`, reconnecting (with backoff) whenever the connection to
/// the task-state service is lost. Turns running when a connection is lost are
/// canceled here: the service has already re-queued or failed them.
pub async fn run_worker(options: WorkerOptions, stop: CancellationToken) -> Result<(), String> {
    let channel = connect(&options.tasks_url)?;
    let tasks = TaskStateClient::new(channel.clone(), Default::default());
    let mut reconnect = Backoff::doubling(RECONNECT_FIRST, RECONNECT_MAX);
    loop {
        let runs = Runs::default();
        let session = attach(
            &options,
            channel.clone(),
            tasks.clone(),
            runs.clone(),
            stop.clone(),
        );
        match session.await {
            Ok(()) if stop.is_cancelled() => {
                cancel_all(&runs);
                return Ok(());
            }
            Ok(()) => {
                tracing::warn!("task-state service closed the worker stream; reconnecting");
                reconnect.reset();
            }
            Err(e) => tracing::warn!(error = %e, "worker connection failed; reconnecting"),
        }
        cancel_all(&runs);
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            () = tokio::time::sleep(reconnect.next_delay().unwrap_or(RECONNECT_MAX)) => {}
        }
    }
}

fn cancel_all(runs: &Runs) {
    for (_, cancel) in runs.lock().drain() {
        cancel.cancel();
    }
}

async fn attach(
    options: &WorkerOptions,
    channel: tonic::transport::Channel,
    tasks: TaskStateClient,
    runs: Runs,
    stop: CancellationToken,
) -> Result<(), String> {
    let (reports, outbound) = mpsc::channel(64);
    let hello = pb::WorkerMessage {
        kind: Some(Report::Hello(pb::Hello {
            worker_id: options.worker_id.clone(),
            agents: options.agents.keys().cloned().collect(),
            capacity: options.capacity,
            definitions: options
                .definitions
                .iter()
                .filter_map(|d| serde_json::to_string(d).ok())
                .collect(),
        })),
    };
    reports.send(hello).await.map_err(|e| e.to_string())?;
    let mut client =
        pb::workers_client::WorkersClient::new(channel).max_decoding_message_size(64 * 1024 * 1024);
    let mut commands = client
        .attach(ReceiverStream::new(outbound))
        .await
        .map_err(|s| format!("{}: {}", s.code(), s.message()))?
        .into_inner();
    tracing::info!(worker = %options.worker_id, agents = ?options.agents.keys().collect::<Vec<_>>(), "worker attached");
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    loop {
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            _ = heartbeat.tick() => {
                let beat = pb::WorkerMessage { kind: Some(Report::Heartbeat(pb::Heartbeat {})) };
                if reports.send(beat).await.is_err() {
                    return Err("the worker stream closed".into());
                }
            }
            command = commands.message() => match command {
                Ok(Some(pb::WorkerCommand { kind: Some(Command::Assignment(assignment)) })) => {
                    start_turn(options, assignment, tasks.clone(), runs.clone(), reports.clone());
                }
                Ok(Some(pb::WorkerCommand { kind: Some(Command::Cancel(cancel)) })) => {
                    if let Some(run) = runs.lock().get(&cancel.assignment_id) {
                        run.cancel();
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => return Ok(()),
                Err(status) => return Err(format!("{}: {}", status.code(), status.message())),
            },
        }
    }
}

/// Runs one turn like the in-process host does, then reports it over.
fn start_turn(
    options: &WorkerOptions,
    assignment: pb::Assignment,
    tasks: TaskStateClient,
    runs: Runs,
    reports: mpsc::Sender<pb::WorkerMessage>,
) {
    let assignment_id = assignment.assignment_id.clone();
    let decoded = assignment
        .record
        .as_ref()
        .ok_or_else(|| "assignment without a task".to_owned())
        .and_then(|r| from_json::<TaskRecord>(&r.json, "task record").map_err(|e| e.message))
        .and_then(|record| {
            let message: Message =
                from_json(&assignment.message_json, "message").map_err(|e| e.message)?;
            Ok((record, message))
        });
    let cancel = CancellationToken::new();
    let agent = decoded
        .as_ref()
        .ok()
        .and_then(|(record, _)| options.agents.get(&record.agent).cloned());
    runs.lock().insert(assignment_id.clone(), cancel.clone());
    let span = tracing::info_span!("agent_turn", assignment = %assignment_id);
    sb_telemetry::follow(&span, Some(&assignment.traceparent));
    let turn = async move {
        let end = match (decoded, agent) {
            (Err(e), _) => TurnEnd::Failed(e),
            (Ok((record, _)), None) => {
                TurnEnd::Failed(format!("this worker does not run agent {}", record.agent))
            }
            (Ok((record, message)), Some(agent)) => {
                let turn_client = tasks.for_turn(&assignment_id, &record.agent);
                let reporter = Reporter::new(Arc::new(turn_client), record.task.id.clone());
                let ctx = TaskContext {
                    task: Box::new(record.task),
                    message: Box::new(message),
                    cancel: cancel.clone(),
                };
                // The service forwards a cancel when the task ends by someone else's hand.
                run_turn(&*agent, ctx, reporter, cancel.cancelled()).await
            }
        };
        runs.lock().remove(&assignment_id);
        let done = pb::WorkerMessage {
            kind: Some(Report::TurnDone(turn_done::report(assignment_id, &end))),
        };
        let _ = reports.send(done).await;
    };
    tokio::spawn(tracing::Instrument::instrument(turn, span));
}
