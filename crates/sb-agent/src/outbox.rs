//! A reporter's outbox: an agent's updates to one task, committed in order by a
//! background committer that writes whatever has queued up as one atomic commit
//! ([`TaskService::update_all`]).
//!
//! An agent that reports faster than the store makes a write durable (a streaming
//! model emitting tokens, the echo agent's three updates in a row) then pays one
//! durable write per burst instead of one per update. Nothing is seen early: the task
//! service publishes events only once their commit is durable.
//!
//! An outbox may also be [`Outbox::creating`] its task: the first round then creates
//! the task together with what the agent reported meanwhile
//! ([`sb_tasks::TaskDrafts::create_with`]), one commit where there would be two.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::{BoxFuture, Either, Ready, ready};
use parking_lot::Mutex;
use sb_protocol::{A2AError, ErrorKind};
use sb_store::TaskRecord;
use sb_tasks::{TaskService, TaskUpdate};
use tokio::sync::{Notify, oneshot};
use tracing::Instrument;

use crate::api::StoredTask;

/// Updates queued at most; a caller past it waits for the committer (backpressure).
const MAX_QUEUED: usize = 256;

#[derive(Debug)]
pub(crate) struct Outbox {
    tasks: Arc<dyn TaskService>,
    task_id: String,
    state: Mutex<State>,
    /// Notified after every commit round, for callers waiting on one. A `Notify`, not a
    /// watch channel: it lives inline (a watch channel is an allocation of its own, kept
    /// as long as the run, and a server holds thousands of runs open) and wakes its
    /// waiters in one pass.
    rounds: Notify,
}

/// An update being queued: ready at once, unless the queue was full.
pub(crate) type Sending =
    Either<Ready<Result<u64, A2AError>>, BoxFuture<'static, Result<u64, A2AError>>>;

/// A task still to be created by the outbox's first round, and who waits to hear how
/// that went.
#[derive(Debug)]
struct Creation {
    draft: TaskRecord,
    created: oneshot::Sender<Result<Created, A2AError>>,
}

/// A task's creation went through: the task as its commit left it, with what the agent
/// had reported by then (and had not been refused).
pub(crate) type Created = Arc<TaskRecord>;

/// What became of an update offered to the queue.
enum Offer {
    Queued(u64),
    Refused(A2AError),
    Full(Box<TaskUpdate>),
}

#[derive(Debug, Default)]
struct State {
    queued: Vec<TaskUpdate>,
    /// Ordinal of the latest update queued (1 for the first).
    last_queued: u64,
    /// Ordinal of the latest update a finished commit round took.
    done_through: u64,
    /// A committer task is running (it runs until the queue is empty).
    committing: bool,
    /// The task still to be created, until the first round takes it (boxed: the state
    /// lives as long as the run, the creation only until its first round).
    creation: Option<Box<Creation>>,
    /// The task's creation failed: there is nothing to settle.
    never_created: bool,
    /// Why a queued update was refused, for the next caller. The updates queued after
    /// it were dropped: the agent would have stopped at the error had it waited.
    refused: Option<A2AError>,
    /// Metadata entries for the next status change queued ([`Outbox::annotate`]).
    annotations: Option<sb_protocol::Metadata>,
    /// Callers of `send_and_wait` still waiting for the task as stored.
    awaiting_task: usize,
    /// The task as the last successful round stored it, kept only while someone waits
    /// for it: a task held open for hours must not keep a copy of itself here.
    stored: Option<StoredTask>,
}

impl Outbox {
    pub(crate) fn new(tasks: Arc<dyn TaskService>, task_id: String) -> Outbox {
        Outbox {
            tasks,
            task_id,
            state: Mutex::default(),
            rounds: Notify::new(),
        }
    }

    /// An outbox for a task not stored yet: its first round, which starts at once,
    /// creates the task from `draft` with whatever the agent reported by then, and
    /// tells `created` how that went.
    pub(crate) fn creating(
        tasks: Arc<dyn TaskService>,
        draft: TaskRecord,
        created: oneshot::Sender<Result<Created, A2AError>>,
    ) -> Arc<Outbox> {
        let outbox = Arc::new(Outbox::new(tasks, draft.task.id.clone()));
        {
            let mut state = outbox.state.lock();
            state.creation = Some(Box::new(Creation { draft, created }));
            state.committing = true;
        }
        outbox.spawn_committer();
        outbox
    }

    /// Whether the task's creation failed (so it does not exist).
    pub(crate) fn never_created(&self) -> bool {
        self.state.lock().never_created
    }

    pub(crate) fn task_id(&self) -> &str {
        &self.task_id
    }

    /// Queues `update` and returns without waiting for it to be durable. A refusal of
    /// an earlier update is returned instead (and this update is not queued).
    ///
    /// The update is queued when this is called; the future waits only when the queue
    /// is full. It is small on purpose (the waiting part is boxed, and only made when
    /// needed): an agent's own future holds it, and a run held open for hours keeps
    /// that future's largest state the whole time.
    pub(crate) fn send(self: &Arc<Self>, update: TaskUpdate) -> Sending {
        match self.offer(update) {
            Offer::Queued(ordinal) => Either::Left(ready(Ok(ordinal))),
            Offer::Refused(err) => Either::Left(ready(Err(err))),
            Offer::Full(update) => Either::Right(self.clone().send_when_room(*update).boxed()),
        }
    }

    /// Keeps metadata entries for the next status change queued, which carries them.
    pub(crate) fn annotate(&self, entries: sb_protocol::Metadata) {
        self.state
            .lock()
            .annotations
            .get_or_insert_with(Default::default)
            .extend(entries);
    }

    /// Queues `update` if there is room; a status change takes the kept annotations
    /// (the update's own entries win).
    fn offer(self: &Arc<Self>, mut update: TaskUpdate) -> Offer {
        let mut state = self.state.lock();
        if let Some(err) = state.refused.take() {
            return Offer::Refused(err);
        }
        if state.queued.len() >= MAX_QUEUED {
            return Offer::Full(Box::new(update));
        }
        if let TaskUpdate::Status { metadata, .. } = &mut update
            && let Some(mut merged) = state.annotations.take()
        {
            merged.extend(metadata.take().unwrap_or_default());
            *metadata = Some(merged);
        }
        state.queued.push(update);
        state.last_queued += 1;
        if !state.committing {
            state.committing = true;
            self.spawn_committer();
        }
        Offer::Queued(state.last_queued)
    }

    /// Starts the committer (the caller has marked the state `committing`).
    fn spawn_committer(self: &Arc<Self>) {
        // The commits belong to the agent's turn: its trace, its span.
        let committer = self.clone().commit_queued();
        tokio::spawn(committer.instrument(tracing::Span::current()));
    }

    /// Backpressure: waits for commit rounds until the queue has room for `update`.
    async fn send_when_room(self: Arc<Self>, mut update: TaskUpdate) -> Result<u64, A2AError> {
        loop {
            // Registered before the offer, so a round that ends in between still counts.
            let round = self.rounds.notified();
            let mut round = std::pin::pin!(round);
            round.as_mut().enable();
            match self.offer(update) {
                Offer::Queued(ordinal) => return Ok(ordinal),
                Offer::Refused(err) => return Err(err),
                Offer::Full(back) => update = *back,
            }
            round.await;
        }
    }

    /// Queues `update` and waits until it is durable: the task as stored then.
    pub(crate) async fn send_and_wait(
        self: &Arc<Self>,
        update: TaskUpdate,
    ) -> Result<StoredTask, A2AError> {
        let _awaiting = AwaitingTask::register(self);
        let ordinal = self.send(update).await?;
        self.wait_for(ordinal).await?;
        let mut state = self.state.lock();
        // The last one waiting takes the task: it would be dropped when we leave anyway.
        let task = if state.awaiting_task == 1 {
            state.stored.take()
        } else {
            state.stored.clone()
        };
        task.ok_or_else(committer_gone)
    }

    /// Waits until every update queued so far is durable; returns a refusal not yet
    /// reported.
    pub(crate) async fn flush(&self) -> Result<(), A2AError> {
        let last = self.state.lock().last_queued;
        self.wait_for(last).await
    }

    async fn wait_for(&self, ordinal: u64) -> Result<(), A2AError> {
        loop {
            // Registered before the state is read, so a round that ends in between counts.
            let round = self.rounds.notified();
            let mut round = std::pin::pin!(round);
            round.as_mut().enable();
            {
                let mut state = self.state.lock();
                if let Some(err) = state.refused.take() {
                    return Err(err);
                }
                if state.done_through >= ordinal {
                    return Ok(());
                }
            }
            round.await;
        }
    }

    /// The committer: takes everything queued, commits it as one, until nothing is left.
    async fn commit_queued(self: Arc<Self>) {
        // The agent usually reports several updates in a row: let it queue them first.
        tokio::task::yield_now().await;
        loop {
            let (batch, through, creation) = {
                let mut state = self.state.lock();
                if state.queued.is_empty() && state.creation.is_none() {
                    state.committing = false;
                    break;
                }
                let batch = std::mem::take(&mut state.queued);
                (batch, state.last_queued, state.creation.take())
            };
            let outcome = match creation {
                Some(creation) => self.create(creation, batch).await,
                None => self.commit(batch).await.map(Some),
            };
            {
                let mut state = self.state.lock();
                state.done_through = match outcome {
                    Ok(task) => {
                        state.stored = task.filter(|_| state.awaiting_task > 0);
                        through
                    }
                    // What queued meanwhile is dropped with the refused update: done too.
                    Err(err) => {
                        state.refused.get_or_insert(err);
                        state.queued.clear();
                        state.last_queued
                    }
                };
            }
            self.rounds.notify_waiters();
        }
        self.rounds.notify_waiters();
    }

    /// The first round of a task not stored yet: the task and the batch as one commit
    /// (with the updates before a refused one, as [`Outbox::commit`] would apply them).
    /// The task as stored, when someone waits for it here.
    async fn create(
        &self,
        creation: Box<Creation>,
        batch: Vec<TaskUpdate>,
    ) -> Result<Option<StoredTask>, A2AError> {
        let Creation { draft, created } = *creation;
        let creating = match self.tasks.drafts() {
            Some(drafts) => drafts.create_with(draft, batch).await,
            // Not reached: an outbox is only made creating from a service's drafts.
            None => Err(A2AError::internal("this task service cannot draft tasks")),
        };
        match creating {
            Err(err) => {
                self.state.lock().never_created = true;
                let _ = created.send(Err(err.clone()));
                Err(err)
            }
            Ok((record, refused)) => {
                // A waiter's update is queued after its registration, so one waiting for
                // this round is counted by now.
                let task =
                    (self.state.lock().awaiting_task > 0).then(|| StoredTask::new(record.clone()));
                let _ = created.send(Ok(record));
                match refused {
                    Some(err) => Err(err),
                    None => Ok(task),
                }
            }
        }
    }

    /// One atomic commit; when the service refuses it, the updates one by one, so the
    /// ones before the refused update still apply, as if the agent had waited for each.
    async fn commit(&self, batch: Vec<TaskUpdate>) -> Result<StoredTask, A2AError> {
        let single = batch.len() == 1;
        let err = match self.tasks.update_all(&self.task_id, &batch).await {
            Ok(record) => return Ok(StoredTask::new(Arc::new(record))),
            Err(err) => err,
        };
        // An internal error may or may not have been applied (a lost reply): repeating
        // the updates could apply them twice.
        if single || err.kind == ErrorKind::Internal {
            return Err(err);
        }
        let mut stored = None;
        for update in batch {
            stored = Some(self.tasks.update(&self.task_id, update).await?);
        }
        stored
            .map(|record| StoredTask::new(Arc::new(record)))
            .ok_or(err)
    }
}

/// A `send_and_wait` caller in progress; the stored task is dropped with the last one
/// (also when the caller is dropped mid-wait, e.g. a canceled agent run).
struct AwaitingTask<'a>(&'a Outbox);

impl<'a> AwaitingTask<'a> {
    fn register(outbox: &'a Outbox) -> AwaitingTask<'a> {
        outbox.state.lock().awaiting_task += 1;
        AwaitingTask(outbox)
    }
}

impl Drop for AwaitingTask<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock();
        state.awaiting_task -= 1;
        if state.awaiting_task == 0 {
            state.stored = None;
        }
    }
}

fn committer_gone() -> A2AError {
    A2AError::internal("the task's update committer stopped")
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use sb_protocol::{Message, Role, TaskState};
    use sb_store::*;
    use sb_tasks::{LocalTaskService, NewTask, Scope};

    use super::*;
    use crate::testing::CountingStore;

    /// A task service over a counting store, and a submitted task (one commit so far).
    async fn task() -> (Arc<CountingStore>, Arc<LocalTaskService>, String) {
        let store = Arc::new(CountingStore::default());
        let tasks = Arc::new(LocalTaskService::new(
            store.clone(),
            Arc::new(LocalBus::new()),
        ));
        let new = NewTask {
            scope: Scope {
                agent: "a".into(),
                owner: String::new(),
            },
            message: Message {
                role: Role::User,
                ..Message::agent_text("go")
            },
            metadata: None,
        };
        let id = tasks.create(new).await.unwrap().task.id;
        (store, tasks, id)
    }

    fn status(state: TaskState) -> TaskUpdate {
        TaskUpdate::Status {
            state,
            message: None,
            metadata: None,
        }
    }

    async fn states(tasks: &LocalTaskService, id: &str) -> Vec<Option<TaskState>> {
        let events = tasks.events_after(id, 1, 1000).await.unwrap();
        events.iter().map(|e| e.event.state()).collect()
    }

    #[tokio::test]
    async fn a_burst_of_updates_is_one_commit_in_order() {
        let (store, tasks, id) = task().await;
        let outbox = Arc::new(Outbox::new(tasks.clone(), id.clone()));
        outbox.send(status(TaskState::Working)).await.unwrap();
        outbox.send(status(TaskState::Working)).await.unwrap();
        let done = outbox
            .send_and_wait(status(TaskState::Completed))
            .await
            .unwrap();
        assert_eq!(done.status.state, TaskState::Completed);
        assert_eq!(
            store.commits.load(Ordering::SeqCst),
            2,
            "create, then one for all three"
        );
        let expected = [TaskState::Working, TaskState::Working, TaskState::Completed];
        assert_eq!(states(&tasks, &id).await, expected.map(Some));
    }

    /// Annotations make no event of their own (a client would see its task's status
    /// twice): they ride on the next status change, artifacts going by untouched.
    #[tokio::test]
    async fn annotations_ride_on_the_next_status_change() {
        let (_store, tasks, id) = task().await;
        let outbox = Arc::new(Outbox::new(tasks.clone(), id.clone()));
        let entry = |key: &str, value: i64| {
            let mut metadata = sb_protocol::Metadata::new();
            metadata.insert(key.into(), serde_json::json!(value));
            metadata
        };
        outbox.annotate(entry("a", 1));
        outbox.annotate(entry("a", 2));
        let chunk = sb_protocol::Artifact {
            artifact_id: "x".into(),
            name: None,
            description: None,
            parts: vec![sb_protocol::Part::text("chunk")],
            metadata: None,
            extensions: vec![],
        };
        let artifact = TaskUpdate::Artifact {
            artifact: chunk,
            append: false,
            last_chunk: true,
        };
        outbox.send(artifact).await.unwrap();
        outbox.send(status(TaskState::Working)).await.unwrap();
        let done = outbox
            .send_and_wait(status(TaskState::Completed))
            .await
            .unwrap();
        assert_eq!(done.metadata.as_ref().unwrap()["a"], 2);
        let events = tasks.events_after(&id, 1, 10).await.unwrap();
        let carried: Vec<Option<serde_json::Value>> = events
            .iter()
            .map(|e| match &*e.event {
                sb_protocol::StreamResponse::StatusUpdate(u) => Some(serde_json::json!(u.metadata)),
                _ => None,
            })
            .collect();
        let expected = [
            None,
            Some(serde_json::json!({"a": 2})),
            Some(serde_json::json!(null)),
        ];
        assert_eq!(carried, expected);
    }

    #[tokio::test]
    async fn a_report_is_queued_when_called_and_its_future_is_small() {
        let (_store, tasks, id) = task().await;
        let reporter = crate::api::Reporter::new(tasks.clone(), id.clone());
        let report = reporter.working(None);
        // An agent's future holds this across the await: held runs pay its size.
        let size = std::mem::size_of_val(&report);
        assert!(size <= 128, "a report's future takes {size} bytes");
        drop(report);
        reporter.flush().await.unwrap();
        assert_eq!(states(&tasks, &id).await, [Some(TaskState::Working)]);
    }

    #[tokio::test]
    async fn no_copy_of_the_task_is_kept_once_nobody_waits_for_it() {
        let (_store, tasks, id) = task().await;
        let outbox = Arc::new(Outbox::new(tasks.clone(), id.clone()));
        outbox.send(status(TaskState::Working)).await.unwrap();
        outbox.flush().await.unwrap();
        assert!(outbox.state.lock().stored.is_none(), "nobody waited");
        let stored = outbox
            .send_and_wait(status(TaskState::InputRequired))
            .await
            .unwrap();
        assert_eq!(stored.status.state, TaskState::InputRequired);
        assert!(outbox.state.lock().stored.is_none(), "the waiter took it");
        assert_eq!(outbox.state.lock().awaiting_task, 0);
    }

    #[tokio::test]
    async fn updates_before_a_refused_one_apply_and_later_ones_are_dropped() {
        let (_store, tasks, id) = task().await;
        let outbox = Arc::new(Outbox::new(tasks.clone(), id.clone()));
        for state in [
            TaskState::Working,
            TaskState::Completed,
            TaskState::Working,
            TaskState::Failed,
        ] {
            outbox.send(status(state)).await.unwrap();
        }
        let refused = outbox.flush().await.unwrap_err();
        assert_eq!(refused.kind, ErrorKind::UnsupportedOperation, "{refused:?}");
        assert!(
            refused.message.contains("completed to working"),
            "{}",
            refused.message
        );
        assert_eq!(
            states(&tasks, &id).await,
            [Some(TaskState::Working), Some(TaskState::Completed)]
        );
        // Reported once: the reporter goes on (and the task service keeps refusing).
        outbox.flush().await.unwrap();
        outbox.send(status(TaskState::Working)).await.unwrap();
        assert!(outbox.flush().await.is_err());
    }

    #[tokio::test]
    async fn an_update_refused_after_a_cancel_is_reported_by_the_next_call() {
        let (_store, tasks, id) = task().await;
        let scope = Scope {
            agent: "a".into(),
            owner: String::new(),
        };
        let outbox = Arc::new(Outbox::new(tasks.clone(), id.clone()));
        tasks.cancel(&scope, &id).await.unwrap();
        outbox.send(status(TaskState::Working)).await.unwrap();
        let err = outbox
            .send_and_wait(status(TaskState::Completed))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::UnsupportedOperation, "{err:?}");
        assert_eq!(states(&tasks, &id).await, [Some(TaskState::Canceled)]);
    }

    #[tokio::test]
    async fn a_full_queue_waits_and_loses_nothing() {
        let (store, tasks, id) = task().await;
        let outbox = Arc::new(Outbox::new(tasks.clone(), id.clone()));
        let count = MAX_QUEUED * 2 + 10;
        for _ in 0..count {
            outbox.send(status(TaskState::Working)).await.unwrap();
        }
        outbox.flush().await.unwrap();
        assert_eq!(states(&tasks, &id).await.len(), count);
        let commits = store.commits.load(Ordering::SeqCst) - 1;
        assert!(
            (3..=4).contains(&commits),
            "{count} updates took {commits} commits, at most {MAX_QUEUED} each"
        );
    }
}
