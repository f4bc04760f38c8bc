//! Waiting for a task (spec §9): by its stream while the agent streams (sb-client's
//! `Follower`, which subscribes again after a break, from the last event id where the
//! server resumes, and falls back to polling), else by polling every `--poll-interval`
//! with a bounded backoff; `--timeout` bounds the whole wait and Ctrl-C stops it, both
//! naming the task, which goes on.

use std::future::Future;
use std::time::Duration;

use sb_client::EventStream;
use sb_client::follow::{FollowError, FollowSettings, Follower};
use sb_protocol::{StreamResponse, Task};

use super::agent::Agent;
use super::error::{CliError, exit};
use super::opts::WaitOpts;

/// "Forever" for the follower's idle timeout: `--timeout` is the only bound on a wait.
const NO_IDLE_LIMIT: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// How long one call of the wait may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Reads with no change before the polling interval starts to double.
const PATIENCE: u32 = 10;
/// The longest polling interval the backoff reaches (unless asked for a longer one).
const MAX_INTERVAL: Duration = Duration::from_secs(30);

/// Takes each event of a followed task, with its stream id when it has one.
pub(crate) type EventSink<'a> =
    dyn FnMut(&StreamResponse, Option<&str>) -> Result<(), CliError> + 'a;

/// Runs `wait` within `--timeout`, stopping on Ctrl-C; both failures name `task_id` and
/// the command that follows it again.
pub(crate) async fn bounded<T>(
    wait: impl Future<Output = Result<T, CliError>>,
    opts: &WaitOpts,
    agent: &Agent,
    task_id: &str,
) -> Result<T, CliError> {
    let resume = format!(
        "follow it with `switchboard task get -a {} --wait {task_id}`",
        super::send::shell_quote(&agent.reference)
    );
    let timed = async {
        match opts.timeout {
            Some(limit) => tokio::time::timeout(limit, wait).await.unwrap_or_else(|_| {
                Err(CliError::timeout(format!(
                    "task {task_id} did not end within {limit:?}; it goes on"
                ))
                .with_hint(resume.clone()))
            }),
            None => wait.await,
        }
    };
    tokio::select! {
        result = timed => result,
        _ = tokio::signal::ctrl_c() => Err(CliError {
            code: "SWITCHBOARD_INTERRUPTED".into(),
            message: format!("stopped waiting for task {task_id}; it goes on"),
            hint: Some(resume),
            a2a_code: None,
            exit: exit::INTERRUPTED,
        }),
    }
}

/// Follows `task_id` until it ends or waits for the caller, handing each news to
/// `sink`: the events of `stream` (a streaming send's) and later ones; `seen` is the
/// task as the caller already has it (not handed again while it has not changed).
pub(crate) async fn follow(
    agent: &Agent,
    task_id: &str,
    stream: Option<EventStream>,
    seen: Option<Task>,
    opts: &WaitOpts,
    sink: &mut EventSink<'_>,
) -> Result<(), CliError> {
    tracing::debug!(
        task_id,
        streaming = agent.streams(),
        resumable = agent.resumes(),
        "following"
    );
    if !agent.streams() {
        return poll(agent, task_id, seen, opts, &mut |task| {
            sink(&StreamResponse::Task(task.clone()), None)
        })
        .await;
    }
    let settings = FollowSettings {
        idle_timeout: NO_IDLE_LIMIT,
        streaming: true,
        resumable: agent.resumes(),
        call_timeout: CALL_TIMEOUT,
    };
    let mut follower = Follower::new(&*agent.transport, task_id, settings);
    if let Some(stream) = stream {
        follower = follower.with_stream(stream);
    }
    loop {
        let event = follower.next().await.map_err(|e| match e {
            FollowError::Lost(error) => agent.call_error(error),
            FollowError::Stalled(_) => CliError::timeout(format!("no news of task {task_id}")),
        })?;
        // The id of the stream's last event (what `--last-event-id` resumes after).
        sink(&event, follower.last_event_id())?;
        if event.ends_stream() {
            break;
        }
    }
    follower.finish();
    Ok(())
}

/// Reads the task every `--poll-interval` (doubling after [`PATIENCE`] reads without
/// change, up to [`MAX_INTERVAL`]) until it ends or waits; each change goes to `sink`.
pub(crate) async fn poll(
    agent: &Agent,
    task_id: &str,
    seen: Option<Task>,
    opts: &WaitOpts,
    sink: &mut dyn FnMut(&Task) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let base = opts.poll_interval.max(Duration::from_millis(50));
    let ceiling = MAX_INTERVAL.max(base);
    let mut interval = base;
    let mut unchanged = 0;
    let mut last = seen;
    loop {
        let task = agent
            .transport
            .get_task(task_id, Some(0))
            .await
            .map_err(|e| agent.call_error(e))?;
        let state = task.status.state;
        tracing::debug!(task_id, state = state.as_str(), ?interval, "polled");
        if last.as_ref() == Some(&task) {
            unchanged += 1;
            if unchanged >= PATIENCE {
                interval = (interval * 2).min(ceiling);
            }
        } else {
            unchanged = 0;
            interval = base;
            sink(&task)?;
            last = Some(task);
        }
        if state.is_terminal() || state.is_interrupted() {
            return Ok(());
        }
        tokio::time::sleep(interval).await;
    }
}
