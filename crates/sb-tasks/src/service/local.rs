//! [`LocalTaskService`]: the task-state service over a [`TaskStore`], in this process.
//! Every mutation is read → transition → conditional write, retried on a lost race, and
//! each committed event is published on the bus. Who counts the open tasks for the
//! in-flight limit is in `local/open_limit.rs`.

mod open_limit;

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use sb_protocol::requests::ListTasksRequest;
use sb_protocol::{
    A2AError, ErrorKind, Message, StreamResponse, Task, TaskState, TaskStatus, new_id,
};
use sb_store::{EventBus, StoreError, StoredEvent, TaskCommit, TaskQuery, TaskRecord, TaskStore};

use super::{NewTask, Scope, TaskDrafts, TaskListing, TaskResult, TaskService};
use crate::inflight::InFlight;
use crate::lifecycle::{self, TaskUpdate};
use crate::page_token;
use crate::transitions::Transitions;

pub use open_limit::DEFAULT_MAX_TASKS_IN_FLIGHT;
use open_limit::OpenTaskLimit;

/// How often a conditional write is retried after losing a race before giving up. Each
/// loss means another writer made progress, so this bounds only pathological contention.
const MAX_CAS_ATTEMPTS: usize = 64;

#[derive(Debug, Clone)]
pub struct LocalTaskService {
    store: Arc<dyn TaskStore>,
    bus: Arc<dyn EventBus>,
    limit: OpenTaskLimit,
    transitions: Option<Arc<dyn Transitions>>,
}

fn store_error(err: StoreError) -> A2AError {
    tracing::error!(error = %err, "task store failure");
    A2AError::internal("the task store is unavailable; try again").retryable(true)
}

impl LocalTaskService {
    pub fn new(store: Arc<dyn TaskStore>, bus: Arc<dyn EventBus>) -> LocalTaskService {
        let in_flight = Arc::new(InFlight::new(DEFAULT_MAX_TASKS_IN_FLIGHT));
        LocalTaskService {
            store,
            bus,
            limit: OpenTaskLimit::Local(in_flight),
            transitions: None,
        }
    }

    /// Tells `transitions` of every change of state this service commits.
    pub fn with_transitions(mut self, transitions: Arc<dyn Transitions>) -> LocalTaskService {
        self.transitions = Some(transitions);
        self
    }

    /// Read → decide → conditional write, retried on a lost race. `decide` returns the
    /// updates to apply in order, one commit for all of them; none leaves the task as
    /// it is.
    async fn mutate<F>(&self, task_id: &str, mut decide: F) -> TaskResult<TaskRecord>
    where
        F: FnMut(&TaskRecord) -> TaskResult<Vec<TaskUpdate>> + Send,
    {
        for _ in 0..MAX_CAS_ATTEMPTS {
            let record = self
                .store
                .get(task_id)
                .await
                .map_err(store_error)?
                .ok_or_else(|| A2AError::task_not_found(task_id))?;
            let updates = decide(&record)?;
            if updates.is_empty() {
                return Ok(record);
            }
            let now = Utc::now();
            let expected_seq = record.seq;
            let before = record.state();
            // Our own copy (the store's stays as it was): changed in place.
            let mut next = record;
            let mut events = Vec::with_capacity(updates.len());
            let origin = lifecycle::EventOrigin::current(&next.task.id);
            for update in updates {
                events.push(lifecycle::apply_in_place(&mut next, update, now, &origin)?);
            }
            let next = Arc::new(next);
            let commit = TaskCommit {
                expected_seq,
                record: next.clone(),
                events: events.clone(),
                open_limit: None,
            };
            match self.store.commit(commit).await {
                Ok(()) => {
                    self.observe(&next);
                    if let Some(transitions) = &self.transitions
                        && next.state() != before
                    {
                        transitions.changed(Some(before), &next);
                    }
                    for event in &events {
                        self.bus.publish(event);
                    }
                    return Ok(Arc::unwrap_or_clone(next));
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(other) => return Err(store_error(other)),
            }
        }
        Err(A2AError::internal(format!(
            "task {task_id} is changing too fast to update; try again"
        ))
        .with_task(task_id)
        .retryable(true))
    }

    /// Commits a new task (its slot already claimed, when counted here) with as many of
    /// `updates` applied after its creation as apply ([`TaskDrafts::create_with`]), and
    /// publishes its events.
    async fn commit_new(
        &self,
        mut record: TaskRecord,
        updates: Vec<TaskUpdate>,
    ) -> TaskResult<(Arc<TaskRecord>, Option<A2AError>)> {
        let mut events = Vec::with_capacity(1 + updates.len());
        let origin = lifecycle::EventOrigin::current(&record.task.id);
        events.push(origin.event(record.seq, StreamResponse::Task(record.task.clone())));
        let now = Utc::now();
        let mut refused = None;
        for update in updates {
            // A refused update leaves the record as it was.
            match lifecycle::apply_in_place(&mut record, update, now, &origin) {
                Ok(event) => events.push(event),
                Err(err) => {
                    refused = Some(err);
                    break;
                }
            }
        }
        let record = Arc::new(record);
        let commit = TaskCommit {
            expected_seq: 0,
            record: record.clone(),
            events,
            open_limit: match &self.limit {
                OpenTaskLimit::Shared(limit) => Some(*limit),
                OpenTaskLimit::Local(_) => None,
            },
        };
        let events = commit.events.clone();
        if let Err(e) = self.store.commit(commit).await {
            self.release_slot(&record);
            return Err(match e {
                StoreError::LimitReached { limit } => crate::inflight::limit_reached(limit),
                other => store_error(other),
            });
        }
        if events.len() > 1 {
            self.observe(&record);
        }
        if let Some(transitions) = &self.transitions {
            transitions.changed(None, &record);
        }
        for event in &events {
            self.bus.publish(event);
        }
        // Debug, not info: a line per task is an access log, which is what metrics and
        // traces are for; at a few thousand tasks a second it costs ~5% of the CPU.
        tracing::debug!(task_id = %record.task.id, agent = %record.agent, "task created");
        Ok((record, refused))
    }

    /// Fails every task that was submitted or working when the process stopped: its
    /// agent run is gone, and a task must never stay silently stuck. Interrupted tasks
    /// keep waiting for their client. A running task `resumes` accepts is left as it is
    /// and returned, for its runner to pick up again (a bridged task, whose upstream
    /// task went on). Returns how many tasks were failed, and those left running.
    pub async fn recover_unfinished(
        &self,
        resumes: impl Fn(&TaskRecord) -> bool,
    ) -> TaskResult<(usize, Vec<TaskRecord>)> {
        let all = self.store.list_unfinished().await.map_err(store_error)?;
        for record in all.iter().filter(|r| r.state().is_interrupted()) {
            self.observe(record);
        }
        let mut failed = 0;
        let mut resumed = Vec::new();
        let running = all
            .into_iter()
            .filter(|r| matches!(r.state(), TaskState::Submitted | TaskState::Working));
        for record in running {
            if resumes(&record) {
                self.observe(&record);
                resumed.push(record);
                continue;
            }
            let reason = Message::agent_text(
                "the server stopped while this task was running; send the message again to retry",
            );
            let update = TaskUpdate::Status {
                state: TaskState::Failed,
                message: Some(reason),
                metadata: None,
            };
            match self.update(&record.task.id, update).await {
                Ok(_) => failed += 1,
                Err(e) => {
                    tracing::warn!(task_id = %record.task.id, error = %e, "could not fail an interrupted task")
                }
            }
        }
        Ok((failed, resumed))
    }
}

/// A new task as its creation stores it: ids assigned, submitted, its first message
/// stamped with them.
fn submitted(new: NewTask) -> TaskRecord {
    let task_id = new_id();
    let context_id = new.message.context_id.clone().unwrap_or_else(new_id);
    let now = Utc::now();
    let message = lifecycle::stamp(new.message, &task_id, &context_id);
    TaskRecord {
        task: Task {
            id: task_id,
            context_id,
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(now),
            },
            artifacts: Vec::new(),
            history: vec![message],
            metadata: new.metadata,
        },
        seq: 1,
        agent: new.scope.agent,
        owner: new.scope.owner,
        created_at: now,
        task_json: Default::default(),
    }
}

#[async_trait]
impl TaskDrafts for LocalTaskService {
    fn draft(&self, new: NewTask) -> TaskResult<TaskRecord> {
        let record = submitted(new);
        self.claim_slot(&record)?;
        Ok(record)
    }

    async fn create_with(
        &self,
        draft: TaskRecord,
        updates: Vec<TaskUpdate>,
    ) -> TaskResult<(Arc<TaskRecord>, Option<A2AError>)> {
        self.commit_new(draft, updates).await
    }
}

#[async_trait]
impl TaskService for LocalTaskService {
    async fn create(&self, new: NewTask) -> TaskResult<TaskRecord> {
        let record = submitted(new);
        self.claim_slot(&record)?;
        self.commit_new(record, Vec::new())
            .await
            .map(|(record, _)| Arc::unwrap_or_clone(record))
    }

    /// None where a shared store counts the open tasks: the limit is checked by the
    /// creation's commit itself.
    fn drafts(&self) -> Option<&dyn TaskDrafts> {
        match self.limit {
            OpenTaskLimit::Local(_) => Some(self),
            _ => None,
        }
    }

    async fn get(&self, scope: &Scope, task_id: &str) -> TaskResult<TaskRecord> {
        match self.store.get(task_id).await.map_err(store_error)? {
            Some(rec) if rec.agent == scope.agent && rec.owner == scope.owner => Ok(rec),
            _ => Err(A2AError::task_not_found(task_id)),
        }
    }

    async fn list(&self, scope: &Scope, request: &ListTasksRequest) -> TaskResult<TaskListing> {
        let page_size = request.validated_page_size()?;
        let after = match request.page_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => Some(page_token::decode(token)?),
            None => None,
        };
        let query = TaskQuery {
            agent: scope.agent.clone(),
            owner: scope.owner.clone(),
            context_id: request.context_id.clone().filter(|c| !c.is_empty()),
            state: request.status,
            status_after: request.status_timestamp_after,
            after,
            limit: page_size,
        };
        let page = self.store.list(&query).await.map_err(store_error)?;
        Ok(TaskListing {
            records: page.records,
            total: page.total,
            next_page_token: page
                .next
                .as_ref()
                .map(page_token::encode)
                .unwrap_or_default(),
            page_size,
        })
    }

    async fn update(&self, task_id: &str, update: TaskUpdate) -> TaskResult<TaskRecord> {
        self.mutate(task_id, |_| Ok(vec![update.clone()])).await
    }

    async fn update_all(&self, task_id: &str, updates: &[TaskUpdate]) -> TaskResult<TaskRecord> {
        self.mutate(task_id, |_| Ok(updates.to_vec())).await
    }

    async fn update_if(
        &self,
        task_id: &str,
        expected: &[TaskState],
        update: TaskUpdate,
    ) -> TaskResult<Option<TaskRecord>> {
        let mut applied = false;
        let record = self
            .mutate(task_id, |record| {
                applied = expected.contains(&record.state());
                Ok(applied.then(|| update.clone()).into_iter().collect())
            })
            .await?;
        Ok(applied.then_some(record))
    }

    async fn cancel(&self, scope: &Scope, task_id: &str) -> TaskResult<TaskRecord> {
        self.get(scope, task_id).await?;
        self.mutate(task_id, |record| match record.state() {
            TaskState::Canceled => Ok(Vec::new()),
            state if state.is_terminal() => Err(A2AError::new(
                ErrorKind::TaskNotCancelable,
                format!(
                    "task {task_id} is already {} and cannot be canceled",
                    state.as_v03_str()
                ),
            )
            .with_task(task_id)),
            _ => Ok(vec![TaskUpdate::Status {
                state: TaskState::Canceled,
                message: Some(Message::agent_text("canceled at the client's request")),
                metadata: None,
            }]),
        })
        .await
    }

    async fn events_after(
        &self,
        task_id: &str,
        after: u64,
        limit: usize,
    ) -> TaskResult<Vec<StoredEvent>> {
        self.store
            .events_after(task_id, after, limit)
            .await
            .map_err(store_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sb_protocol::Role;
    use sb_store::{LocalBus, MemoryStore};

    fn service() -> LocalTaskService {
        LocalTaskService::new(Arc::new(MemoryStore::new()), Arc::new(LocalBus::new()))
    }

    fn scope() -> Scope {
        Scope {
            agent: "a".into(),
            owner: String::new(),
        }
    }

    fn user(text: &str) -> Message {
        Message {
            role: Role::User,
            ..Message::agent_text(text)
        }
    }

    async fn create(svc: &LocalTaskService, text: &str) -> TaskRecord {
        let new = NewTask {
            scope: scope(),
            message: user(text),
            metadata: None,
        };
        svc.create(new).await.unwrap()
    }

    #[tokio::test]
    async fn create_get_and_scope() {
        let svc = service();
        let rec = create(&svc, "hi").await;
        assert_eq!(rec.state(), TaskState::Submitted);
        assert_eq!(
            rec.task.history[0].task_id.as_deref(),
            Some(rec.task.id.as_str())
        );
        assert!(svc.get(&scope(), &rec.task.id).await.is_ok());
        let other = Scope {
            agent: "b".into(),
            owner: String::new(),
        };
        assert_eq!(
            svc.get(&other, &rec.task.id).await.unwrap_err().kind,
            ErrorKind::TaskNotFound
        );
        let stranger = Scope {
            agent: "a".into(),
            owner: "mallory".into(),
        };
        assert_eq!(
            svc.cancel(&stranger, &rec.task.id).await.unwrap_err().kind,
            ErrorKind::TaskNotFound
        );
    }

    #[tokio::test]
    async fn update_all_is_one_commit_all_or_nothing() {
        let svc = service();
        let id = create(&svc, "hi").await.task.id;
        let statuses = |states: [TaskState; 2]| {
            states
                .map(|state| TaskUpdate::Status {
                    state,
                    message: None,
                    metadata: None,
                })
                .to_vec()
        };
        // The second update is illegal after the first: neither applies.
        let illegal = statuses([TaskState::Completed, TaskState::Working]);
        let refused = svc.update_all(&id, &illegal).await.unwrap_err();
        assert_eq!(refused.kind, ErrorKind::UnsupportedOperation);
        let unchanged = svc.get(&scope(), &id).await.unwrap();
        assert_eq!(
            (unchanged.seq, unchanged.state()),
            (1, TaskState::Submitted)
        );

        let legal = statuses([TaskState::Working, TaskState::Completed]);
        let done = svc.update_all(&id, &legal).await.unwrap();
        assert_eq!((done.seq, done.state()), (3, TaskState::Completed));
        let events = svc.events_after(&id, 1, 10).await.unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3]);
    }

    #[tokio::test]
    async fn cancel_rules() {
        let svc = service();
        let rec = create(&svc, "hi").await;
        let id = rec.task.id.clone();
        assert_eq!(
            svc.cancel(&scope(), &id).await.unwrap().state(),
            TaskState::Canceled
        );
        let again = svc.cancel(&scope(), &id).await.unwrap();
        assert_eq!(again.seq, 2, "canceling twice writes nothing");
        let done = create(&svc, "x").await;
        svc.update(
            &done.task.id,
            TaskUpdate::Status {
                state: TaskState::Completed,
                message: None,
                metadata: None,
            },
        )
        .await
        .unwrap();
        assert_eq!(
            svc.cancel(&scope(), &done.task.id).await.unwrap_err().kind,
            ErrorKind::TaskNotCancelable
        );
    }

    /// Lets the two sides of a race go at the same instant: each waits (parked) until
    /// both are there, then spins the few microseconds until the other is awake too, so
    /// that neither has a head start of a thread's wake-up.
    #[derive(Debug)]
    struct StartLine {
        parked: std::sync::Barrier,
        awake: std::sync::atomic::AtomicUsize,
    }

    impl StartLine {
        fn new() -> Arc<StartLine> {
            Arc::new(StartLine {
                parked: std::sync::Barrier::new(2),
                awake: std::sync::atomic::AtomicUsize::new(0),
            })
        }

        fn wait(&self) {
            use std::sync::atomic::Ordering::SeqCst;
            self.parked.wait();
            self.awake.fetch_add(1, SeqCst);
            while self.awake.load(SeqCst) < 2 {
                std::hint::spin_loop();
            }
        }
    }

    /// Runs `op` on a thread of its own, from `start`: tasks spawned one after the other
    /// on the runtime let the first start, and mostly finish, before the second, and an
    /// in-memory commit takes a microsecond.
    fn racer<T: Send + 'static>(
        start: Arc<StartLine>,
        op: impl Future<Output = T> + Send + 'static,
    ) -> tokio::task::JoinHandle<T> {
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            start.wait();
            runtime.block_on(op)
        })
    }

    /// A cancel racing a completion, `rounds` times, both started together: exactly one
    /// wins each race, the loser is refused with the reason, and the task stored (and
    /// its one terminal event) is the winner's. Returns how often (completion, cancel)
    /// won.
    async fn race_cancel_against_completion(
        svc: Arc<LocalTaskService>,
        rounds: usize,
    ) -> (usize, usize) {
        let mut wins = (0, 0);
        for _ in 0..rounds {
            let id = create(&svc, "race").await.task.id;
            let start = StartLine::new();
            let complete = racer(start.clone(), {
                let (svc, id) = (svc.clone(), id.clone());
                async move { svc.update(&id, status(TaskState::Completed)).await }
            });
            let cancel = racer(start, {
                let (svc, id) = (svc.clone(), id.clone());
                async move { svc.cancel(&scope(), &id).await }
            });
            let (completed, canceled) = (complete.await.unwrap(), cancel.await.unwrap());
            let winner = match (completed, canceled) {
                (Ok(winner), Err(refused)) => {
                    wins.0 += 1;
                    assert_eq!(winner.state(), TaskState::Completed);
                    assert_eq!(refused.kind, ErrorKind::TaskNotCancelable, "{refused:?}");
                    assert!(refused.message.contains("already completed"), "{refused:?}");
                    winner
                }
                (Err(refused), Ok(winner)) => {
                    wins.1 += 1;
                    assert_eq!(winner.state(), TaskState::Canceled);
                    assert_eq!(refused.kind, ErrorKind::UnsupportedOperation, "{refused:?}");
                    assert!(
                        refused.message.contains("from canceled to completed"),
                        "{refused:?}"
                    );
                    winner
                }
                (completed, canceled) => {
                    panic!("not exactly one winner: completion {completed:?}, cancel {canceled:?}")
                }
            };
            assert_eq!(winner.seq, 2, "one write after the creation");
            let stored = svc.get(&scope(), &id).await.unwrap();
            assert_eq!(stored, winner, "the stored task is the winner's");
            let events = svc.events_after(&id, 0, 10).await.unwrap();
            let states: Vec<_> = events.iter().map(|e| (e.seq, e.event.state())).collect();
            assert_eq!(
                states,
                [(1, Some(TaskState::Submitted)), (2, Some(winner.state()))],
                "exactly one terminal event, the winner's"
            );
        }
        wins
    }

    /// Both outcomes of the race must have happened, or the race was not run.
    fn assert_both_won(store: &str, (completions, cancels): (usize, usize), rounds: usize) {
        eprintln!("{store} store: completion won {completions} races, cancel won {cancels}");
        assert!(
            completions > 0 && cancels > 0,
            "{store} store: one side won all {rounds} races (completion {completions}, \
             cancel {cancels}): the two never ran concurrently"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancel_never_overwrites_a_terminal_state_in_memory() {
        let wins = race_cancel_against_completion(Arc::new(service()), 1000).await;
        assert_both_won("memory", wins, 1000);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancel_never_overwrites_a_terminal_state_in_redb() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(sb_store::RedbStore::open(&dir.path().join("race.redb")).unwrap());
        let svc = Arc::new(LocalTaskService::new(store, Arc::new(LocalBus::new())));
        let wins = race_cancel_against_completion(svc, 1000).await;
        assert_both_won("redb", wins, 1000);
    }

    #[tokio::test]
    async fn recovery_fails_running_tasks_only() {
        let svc = service();
        let running = create(&svc, "a").await;
        let waiting = create(&svc, "b").await;
        svc.update(
            &waiting.task.id,
            TaskUpdate::Status {
                state: TaskState::InputRequired,
                message: None,
                metadata: None,
            },
        )
        .await
        .unwrap();
        assert_eq!(svc.recover_unfinished(|_| false).await.unwrap().0, 1);
        let failed = svc.get(&scope(), &running.task.id).await.unwrap();
        assert_eq!(failed.state(), TaskState::Failed);
        assert!(
            failed
                .task
                .status
                .message
                .unwrap()
                .text()
                .contains("server stopped")
        );
        assert_eq!(
            svc.get(&scope(), &waiting.task.id).await.unwrap().state(),
            TaskState::InputRequired
        );
    }

    #[tokio::test]
    async fn open_tasks_per_principal_are_limited() {
        let svc = LocalTaskService::new(Arc::new(MemoryStore::new()), Arc::new(LocalBus::new()))
            .with_max_in_flight(2);
        let first = create(&svc, "1").await;
        create(&svc, "2").await;
        let new = NewTask {
            scope: scope(),
            message: user("3"),
            metadata: None,
        };
        let refused = svc.create(new.clone()).await.unwrap_err();
        assert_eq!(refused.kind, ErrorKind::ResourceExhausted);
        assert!(refused.retryable);
        let other = NewTask {
            scope: Scope {
                agent: "a".into(),
                owner: "someone-else".into(),
            },
            ..new.clone()
        };
        assert!(
            svc.create(other).await.is_ok(),
            "the limit is per principal"
        );
        svc.cancel(&scope(), &first.task.id).await.unwrap();
        assert!(
            svc.create(new).await.is_ok(),
            "a finished task frees its slot"
        );
    }

    fn status(state: TaskState) -> TaskUpdate {
        TaskUpdate::Status {
            state,
            message: None,
            metadata: None,
        }
    }

    #[tokio::test]
    async fn a_draft_is_created_with_its_first_updates_as_one_commit() {
        let svc = LocalTaskService::new(Arc::new(MemoryStore::new()), Arc::new(LocalBus::new()))
            .with_max_in_flight(1);
        assert!(svc.drafts().is_some());
        let new = NewTask {
            scope: scope(),
            message: user("hi"),
            metadata: None,
        };
        let draft = svc.draft(new.clone()).unwrap();
        assert_eq!((draft.seq, draft.state()), (1, TaskState::Submitted));
        let id = draft.task.id.clone();
        assert_eq!(
            svc.get(&scope(), &id).await.unwrap_err().kind,
            ErrorKind::TaskNotFound,
            "a draft is not stored"
        );
        assert_eq!(
            svc.draft(new.clone()).unwrap_err().kind,
            ErrorKind::ResourceExhausted,
            "but it holds its slot"
        );

        let updates = vec![
            status(TaskState::Working),
            status(TaskState::Completed),
            status(TaskState::Working),
            status(TaskState::Failed),
        ];
        let (done, refused) = svc.create_with(draft, updates).await.unwrap();
        // Created with the updates before the refused one (completed to working), the
        // rest dropped: as if applied one by one.
        let refused = refused.expect("working after completed is refused");
        assert_eq!(refused.kind, ErrorKind::UnsupportedOperation);
        assert!(
            refused.message.contains("completed to working"),
            "{refused:?}"
        );
        assert_eq!((done.seq, done.state()), (3, TaskState::Completed));
        assert_eq!(svc.get(&scope(), &id).await.unwrap(), *done);
        let events = svc.events_after(&id, 0, 10).await.unwrap();
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
        assert!(
            matches!(&*events[0].event, StreamResponse::Task(t) if t.status.state == TaskState::Submitted)
        );
        assert!(
            svc.draft(new).is_ok(),
            "a task created finished frees its slot"
        );
    }

    #[tokio::test]
    async fn a_shared_limit_cannot_draft() {
        let svc = service().with_shared_max_in_flight(5);
        assert!(svc.drafts().is_none());
        assert!(service().drafts().is_some());
    }

    #[tokio::test]
    async fn list_pages_with_tokens() {
        let svc = service();
        for i in 0..3 {
            svc.create(NewTask {
                scope: scope(),
                message: user(&format!("{i}")),
                metadata: None,
            })
            .await
            .unwrap();
        }
        let req = ListTasksRequest {
            page_size: Some(2),
            ..Default::default()
        };
        let first = svc.list(&scope(), &req).await.unwrap();
        assert_eq!(first.records.len(), 2);
        assert_eq!(first.total, 3);
        assert!(!first.next_page_token.is_empty());
        let req = ListTasksRequest {
            page_size: Some(2),
            page_token: Some(first.next_page_token),
            ..Default::default()
        };
        let second = svc.list(&scope(), &req).await.unwrap();
        assert_eq!(second.records.len(), 1);
        assert!(second.next_page_token.is_empty());
    }
}
