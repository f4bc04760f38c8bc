//! The stored shapes.

use chrono::{DateTime, Utc};
use sb_protocol::{StreamResponse, Task, TaskPushNotificationConfig, TaskState, Version};
use serde::{Deserialize, Serialize};

/// A task as stored: the authoritative task plus what the services need around it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub task: Task,
    /// Sequence number of the task's latest event; 1 is the creation event. Every write
    /// is conditional on it, which is what makes transitions atomic.
    pub seq: u64,
    /// The hosted agent the task belongs to; other agents' endpoints cannot see it.
    pub agent: String,
    /// The principal that created the task ("" when auth is off).
    pub owner: String,
    pub created_at: DateTime<Utc>,
    /// The task's 1.0 JSON, when a store has written this very state: a blocking
    /// SendMessage answers with it instead of serialising the task again.
    #[serde(skip)]
    pub task_json: TaskJson,
}

impl TaskRecord {
    pub fn state(&self) -> TaskState {
        self.task.status.state
    }

    /// The task's 1.0 JSON as its store wrote it, if made for this state (`seq`).
    pub fn task_json(&self) -> Option<&std::sync::Arc<str>> {
        self.task_json.get(self.seq)
    }

    /// Reads the stored form, keeping the task's JSON as it came in
    /// [`TaskRecord::task_json`]: a record passed on by another process (the internal
    /// API) is answered with as it was written, not serialised again.
    pub fn from_stored_json(bytes: &[u8]) -> serde_json::Result<TaskRecord> {
        #[derive(Deserialize)]
        struct Stored<'a> {
            #[serde(borrow)]
            task: &'a serde_json::value::RawValue,
            seq: u64,
            agent: String,
            owner: String,
            created_at: DateTime<Utc>,
        }
        let stored: Stored<'_> = serde_json::from_slice(bytes)?;
        let record = TaskRecord {
            task: serde_json::from_str(stored.task.get())?,
            seq: stored.seq,
            agent: stored.agent,
            owner: stored.owner,
            created_at: stored.created_at,
            task_json: TaskJson::default(),
        };
        record
            .task_json
            .keep(record.seq, stored.task.get().as_bytes());
        Ok(record)
    }

    /// The stored form (what `serde_json::to_vec(self)` gives). A task in a state a turn
    /// ends in (finished or waiting), which a blocking SendMessage answers with, keeps
    /// its JSON in [`TaskRecord::task_json`] for whoever sends this record on; a running
    /// task's many updates (a streaming agent's) do not pay for a copy nobody reads.
    pub fn to_stored_json(&self) -> serde_json::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(1024);
        out.extend_from_slice(b"{\"task\":");
        match self.task_json() {
            Some(json) => out.extend_from_slice(json.as_bytes()),
            None => {
                let start = out.len();
                serde_json::to_writer(&mut out, &self.task)?;
                let state = self.state();
                if state.is_terminal() || state.is_interrupted() {
                    self.task_json.keep(self.seq, &out[start..]);
                }
            }
        }
        use std::io::Write as _;
        write!(out, ",\"seq\":{},\"agent\":", self.seq).map_err(serde_json::Error::io)?;
        serde_json::to_writer(&mut out, &self.agent)?;
        out.extend_from_slice(b",\"owner\":");
        serde_json::to_writer(&mut out, &self.owner)?;
        out.extend_from_slice(b",\"created_at\":");
        serde_json::to_writer(&mut out, &self.created_at)?;
        out.push(b'}');
        Ok(out)
    }

    /// The timestamp ListTasks sorts and filters by.
    pub fn status_time(&self) -> DateTime<Utc> {
        self.task.status.timestamp.unwrap_or(self.created_at)
    }

    /// When the task finished, in milliseconds since the epoch (0 for any time before
    /// it), if it has: the key of the stores' index of finished tasks, which the TTL
    /// eviction sweeps ([`crate::TaskStore::finished_before`]).
    pub fn finished_at_millis(&self) -> Option<u64> {
        finished_at_millis(self.state(), self.status_time())
    }
}

/// What the stores' compare-and-set and task indexes need of a stored task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskHead {
    pub seq: u64,
    /// [`TaskRecord::finished_at_millis`].
    pub finished_at: Option<u64>,
}

impl TaskHead {
    pub fn of(record: &TaskRecord) -> TaskHead {
        TaskHead {
            seq: record.seq,
            finished_at: record.finished_at_millis(),
        }
    }

    /// Reads it from a stored form ([`TaskRecord::to_stored_json`]), skipping the rest
    /// (history, artifacts): a fraction of decoding the whole record.
    pub fn of_stored(bytes: &[u8]) -> serde_json::Result<TaskHead> {
        #[derive(Deserialize)]
        struct Stored {
            task: StoredTask,
            seq: u64,
            created_at: DateTime<Utc>,
        }
        #[derive(Deserialize)]
        struct StoredTask {
            status: sb_protocol::TaskStatus,
        }
        let stored: Stored = serde_json::from_slice(bytes)?;
        let status = stored.task.status;
        Ok(TaskHead {
            seq: stored.seq,
            finished_at: finished_at_millis(
                status.state,
                status.timestamp.unwrap_or(stored.created_at),
            ),
        })
    }
}

fn finished_at_millis(state: TaskState, status_time: DateTime<Utc>) -> Option<u64> {
    state
        .is_terminal()
        .then(|| u64::try_from(status_time.timestamp_millis()).unwrap_or(0))
}

/// One event of a task's log, with its per-task sequence number. Cheap to clone: every
/// subscriber of a task receives a clone, and the event itself is shared, not copied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Shared, not copied: an event is cloned for every subscriber and reader of the bus.
    pub task_id: std::sync::Arc<str>,
    pub seq: u64,
    pub event: std::sync::Arc<StreamResponse>,
    /// W3C trace context of the request that caused the event, so whoever handles it
    /// later and elsewhere (the webhook dispatcher) continues that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The event's 1.0 JSON, shared by every clone of this event.
    #[serde(skip)]
    pub json: EventJson,
}

/// An event's 1.0 JSON, made at most once and shared by every clone: each subscriber of
/// a task receives a clone of the same event, so a thousand SSE streams serialise it
/// once, not a thousand times. Never part of equality or of the stored form.
#[derive(Clone, Debug, Default)]
pub struct EventJson(std::sync::Arc<std::sync::OnceLock<std::sync::Arc<str>>>);

impl EventJson {
    /// Already known JSON (e.g. as it arrived over the internal API).
    pub fn known(json: String) -> EventJson {
        EventJson(std::sync::Arc::new(std::sync::OnceLock::from(
            std::sync::Arc::<str>::from(json),
        )))
    }

    pub fn render(&self, event: &StreamResponse) -> std::sync::Arc<str> {
        self.0
            .get_or_init(|| {
                serde_json::to_string(event)
                    .unwrap_or_else(|_| "null".to_owned())
                    .into()
            })
            .clone()
    }

    /// The JSON, if it has been made.
    pub fn get(&self) -> Option<&std::sync::Arc<str>> {
        self.0.get()
    }

    /// Keeps `json` (the event's serialisation, made elsewhere) unless some is kept already.
    fn keep(&self, json: &[u8]) {
        if let Ok(text) = std::str::from_utf8(json) {
            let _ = self.0.set(text.into());
        }
    }
}

/// What the all-tasks feed ([`crate::EventBus::subscribe_all`]) carries of each
/// committed event: whose, which, and the state it leaves the task in (`None` for an
/// artifact update or a message, which leave the state as it was). Its readers (the
/// webhook dispatcher, the deadline keeper) need no more, and read the log for the rest;
/// in Redis this keeps the all-tasks stream ~10× smaller than the events themselves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventNotice {
    pub task_id: std::sync::Arc<str>,
    pub seq: u64,
    pub state: Option<TaskState>,
}

impl From<&StoredEvent> for EventNotice {
    fn from(event: &StoredEvent) -> EventNotice {
        EventNotice {
            task_id: event.task_id.clone(),
            seq: event.seq,
            state: event.event.state(),
        }
    }
}

impl StoredEvent {
    /// The stored form (what `serde_json::to_vec(self)` gives), with the event's own JSON
    /// written once for everyone: taken from [`StoredEvent::json`] when made already,
    /// else made here and kept there, so the streams and webhooks that send the event on
    /// do not serialise it again.
    pub fn to_stored_json(&self) -> serde_json::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.json.get().map_or(512, |j| j.len() + 128));
        self.write_stored_json(&mut out, true)?;
        Ok(out)
    }

    /// Appends the stored form to `out`, without the task id when `with_task_id` is
    /// false: for a store that keeps the id beside the event already (the embedded
    /// store's key), and fills it in when reading.
    pub(crate) fn write_stored_json(
        &self,
        out: &mut Vec<u8>,
        with_task_id: bool,
    ) -> serde_json::Result<()> {
        use std::io::Write as _;
        if with_task_id {
            out.extend_from_slice(b"{\"task_id\":");
            serde_json::to_writer(&mut *out, &*self.task_id)?;
            out.push(b',');
        } else {
            out.push(b'{');
        }
        write!(out, "\"seq\":{},\"event\":", self.seq).map_err(serde_json::Error::io)?;
        match self.json.get() {
            Some(json) => out.extend_from_slice(json.as_bytes()),
            None => {
                let start = out.len();
                serde_json::to_writer(&mut *out, &*self.event)?;
                self.json.keep(&out[start..]);
            }
        }
        if let Some(traceparent) = &self.traceparent {
            out.extend_from_slice(b",\"traceparent\":");
            serde_json::to_writer(&mut *out, traceparent)?;
        }
        out.push(b'}');
        Ok(())
    }
}

/// A task's 1.0 JSON and the record `seq` it was made for, shared by the clones of a
/// record: the caller that hands a record to the store keeps a clone, and sees what the
/// store wrote. Answered only for that `seq` (every change of a task makes a new one),
/// and reset by whoever changes the task. Never part of equality or of the stored form.
#[derive(Clone, Debug, Default)]
pub struct TaskJson(std::sync::Arc<std::sync::OnceLock<(u64, std::sync::Arc<str>)>>);

impl TaskJson {
    fn get(&self, seq: u64) -> Option<&std::sync::Arc<str>> {
        self.0
            .get()
            .filter(|(made_for, _)| *made_for == seq)
            .map(|(_, json)| json)
    }

    fn keep(&self, seq: u64, json: &[u8]) {
        if let Ok(text) = std::str::from_utf8(json) {
            let _ = self.0.set((seq, text.into()));
        }
    }
}

impl PartialEq for TaskJson {
    fn eq(&self, _: &TaskJson) -> bool {
        true
    }
}

impl PartialEq for EventJson {
    fn eq(&self, _: &EventJson) -> bool {
        true
    }
}

/// A conditional write: applies only if the stored task is still at `expected_seq`
/// (0 = the task must not exist yet).
#[derive(Clone, Debug)]
pub struct TaskCommit {
    pub expected_seq: u64,
    /// Shared, not copied: the committer keeps it (its reply, made from it), and the
    /// store's cache too.
    pub record: std::sync::Arc<TaskRecord>,
    pub events: Vec<StoredEvent>,
    /// Creates only: refuse with [`crate::StoreError::LimitReached`] when the principal
    /// already has this many unfinished tasks for the agent. Enforced by the backends
    /// shared between processes (Redis), atomically with the write; the in-process ones
    /// leave the count to the service, which sees every commit.
    pub open_limit: Option<usize>,
}

/// A push-notification config as stored, with the protocol version it was registered
/// with, so deliveries can use the body that registrant understands (digest §7.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PushConfigRecord {
    pub config: TaskPushNotificationConfig,
    pub version: StoredVersion,
    pub owner: String,
    pub created_at: DateTime<Utc>,
    /// The delivery cursor: every event up to this sequence number has been delivered
    /// (or given up on). Starts at the task's number when the config is registered, so a
    /// new config gets the events after it; survives restarts, so nothing queued is lost.
    #[serde(default)]
    pub from_seq: u64,
}

/// Serializable mirror of [`Version`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoredVersion {
    V0_3,
    V1_0,
}

impl From<Version> for StoredVersion {
    fn from(v: Version) -> Self {
        match v {
            Version::V0_3 => Self::V0_3,
            Version::V1_0 => Self::V1_0,
        }
    }
}

impl From<StoredVersion> for Version {
    fn from(v: StoredVersion) -> Self {
        match v {
            StoredVersion::V0_3 => Self::V0_3,
            StoredVersion::V1_0 => Self::V1_0,
        }
    }
}

/// Where a listing resumes: after the task with this status time and id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListPosition {
    pub ts_millis: i64,
    pub id: String,
}

/// A ListTasks query, already scoped to one agent and one principal.
#[derive(Clone, Debug, Default)]
pub struct TaskQuery {
    pub agent: String,
    pub owner: String,
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    pub status_after: Option<DateTime<Utc>>,
    pub after: Option<ListPosition>,
    pub limit: usize,
}

/// One page of tasks, newest status first.
#[derive(Clone, Debug, Default)]
pub struct TaskPage {
    pub records: Vec<TaskRecord>,
    /// Matches before paging.
    pub total: usize,
    pub next: Option<ListPosition>,
}

impl TaskQuery {
    pub fn matches(&self, rec: &TaskRecord) -> bool {
        rec.agent == self.agent
            && rec.owner == self.owner
            && self
                .context_id
                .as_ref()
                .is_none_or(|c| *c == rec.task.context_id)
            && self.state.is_none_or(|s| s == rec.state())
            && self.status_after.is_none_or(|t| rec.status_time() >= t)
    }

    /// Sorts matching records newest first and cuts the page (shared by the backends
    /// that filter in memory).
    pub fn paginate(&self, mut matching: Vec<TaskRecord>) -> TaskPage {
        let key = |r: &TaskRecord| {
            (
                std::cmp::Reverse(r.status_time().timestamp_millis()),
                r.task.id.clone(),
            )
        };
        matching.sort_by_key(key);
        let total = matching.len();
        let start = match &self.after {
            None => 0,
            Some(cursor) => {
                let after = (std::cmp::Reverse(cursor.ts_millis), cursor.id.clone());
                matching.partition_point(|r| key(r) <= after)
            }
        };
        let end = (start + self.limit.max(1)).min(total);
        let records: Vec<TaskRecord> = matching.drain(start..end).collect();
        let next = (end < total)
            .then(|| records.last())
            .flatten()
            .map(|last| ListPosition {
                ts_millis: last.status_time().timestamp_millis(),
                id: last.task.id.clone(),
            });
        TaskPage {
            records,
            total,
            next,
        }
    }
}

/// A webhook delivery that failed for good (retries exhausted, or refused with a 4xx),
/// kept for an operator to inspect and re-drive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    pub id: String,
    pub task_id: String,
    pub config_id: String,
    /// The event that was not delivered.
    pub seq: u64,
    /// The webhook's host (never the full URL: it may carry secrets in its path).
    pub host: String,
    pub reason: String,
    pub attempts: u32,
    pub failed_at: DateTime<Utc>,
}

#[cfg(test)]
mod event_json_tests {
    use super::*;
    use sb_protocol::model::Message;

    #[test]
    fn clones_share_one_serialisation() {
        let event = StoredEvent {
            task_id: "t".into(),
            seq: 1,
            event: StreamResponse::Message(Message::agent_text("hi")).into(),
            traceparent: None,
            json: EventJson::default(),
        };
        let copy = event.clone();
        let first = event.json.render(&event.event);
        let second = copy.json.render(&copy.event);
        assert!(std::sync::Arc::ptr_eq(&first, &second), "rendered once");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&first).unwrap(),
            serde_json::to_value(&event.event).unwrap()
        );
        // Not part of the stored form.
        assert!(!serde_json::to_string(&event).unwrap().contains("json"));
    }

    fn event(traceparent: Option<&str>) -> StoredEvent {
        StoredEvent {
            task_id: "t-\"1\"".into(),
            seq: 7,
            event: StreamResponse::Message(Message::agent_text("hi \"you\" \u{1}")).into(),
            traceparent: traceparent.map(str::to_owned),
            json: EventJson::default(),
        }
    }

    #[test]
    fn the_stored_json_is_the_serde_form_and_keeps_the_events_json() {
        for traceparent in [None, Some("00-abc-def-01")] {
            let event = event(traceparent);
            let stored = event.to_stored_json().unwrap();
            assert_eq!(stored, serde_json::to_vec(&event).unwrap());
            let kept = event.json.get().expect("kept for the streams").clone();
            assert_eq!(&*kept, serde_json::to_string(&*event.event).unwrap());
            // Made once: the next encoding and every render use what was kept.
            assert_eq!(event.to_stored_json().unwrap(), stored);
            assert!(std::sync::Arc::ptr_eq(
                &kept,
                &event.json.render(&event.event)
            ));
        }
    }

    fn record() -> TaskRecord {
        let task: Task = serde_json::from_value(serde_json::json!({
            "id": "t-\"1\"",
            "contextId": "c-1",
            "status": {"state": "TASK_STATE_COMPLETED"},
            "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi \u{1}"}]}],
        }))
        .unwrap();
        TaskRecord {
            task,
            seq: 3,
            agent: "a\"b".into(),
            owner: "o".into(),
            created_at: chrono::Utc::now(),
            task_json: TaskJson::default(),
        }
    }

    #[test]
    fn a_records_stored_json_is_the_serde_form_and_keeps_the_tasks_json() {
        let record = record();
        let copy = record.clone();
        let stored = record.to_stored_json().unwrap();
        assert_eq!(stored, serde_json::to_vec(&record).unwrap());
        let json = copy.task_json().expect("shared with the clones").clone();
        assert_eq!(&*json, serde_json::to_string(&record.task).unwrap());
        // Made once: the next encoding uses it.
        assert_eq!(record.to_stored_json().unwrap(), stored);
        // Only for the state it was made for.
        let moved_on = TaskRecord { seq: 4, ..record };
        assert!(moved_on.task_json().is_none());
        // A running task's is not kept: its updates are never sent on whole.
        let mut running = copy;
        running.task_json = TaskJson::default();
        running.task.status.state = TaskState::Working;
        assert_eq!(running.to_stored_json().unwrap().len(), stored.len() - 2);
        assert!(running.task_json().is_none());
        assert!(
            !String::from_utf8(stored.clone())
                .unwrap()
                .contains("task_json")
        );

        let read = TaskRecord::from_stored_json(&stored).unwrap();
        assert_eq!(read, serde_json::from_slice::<TaskRecord>(&stored).unwrap());
        assert_eq!(read.task_json(), Some(&json), "kept as it came");
        assert!(TaskRecord::from_stored_json(b"{\"task\":{}}").is_err());
    }

    #[test]
    fn the_stored_json_uses_a_serialisation_made_already() {
        let event = event(None);
        let rendered = event.json.render(&event.event);
        let stored = event.to_stored_json().unwrap();
        assert_eq!(stored, serde_json::to_vec(&event).unwrap());
        assert!(std::sync::Arc::ptr_eq(&rendered, event.json.get().unwrap()));
    }
}

#[cfg(test)]
mod finished_at_tests {
    use super::*;
    use sb_protocol::model::Message;

    fn record(state: TaskState, timestamp: Option<DateTime<Utc>>) -> TaskRecord {
        let mut record =
            std::sync::Arc::unwrap_or_clone(crate::suite::new_commit("t", 0, 1).record);
        record.task.status.state = state;
        record.task.status.timestamp = timestamp;
        record.task.status.message = Some(Message::agent_text("done"));
        record.task.history = vec![Message::agent_text("a long history"); 3];
        record
    }

    #[test]
    fn the_stored_form_gives_the_same_head_as_the_record() {
        let at = DateTime::parse_from_rfc3339("2026-11-26T01:02:03.456Z")
            .unwrap()
            .with_timezone(&Utc);
        for record in [
            record(TaskState::Completed, Some(at)),
            record(TaskState::Canceled, None),
            record(TaskState::Working, Some(at)),
            record(TaskState::InputRequired, None),
        ] {
            let stored = record.to_stored_json().unwrap();
            assert_eq!(
                TaskHead::of_stored(&stored).unwrap(),
                TaskHead::of(&record),
                "{:?}",
                record.state()
            );
        }
        let end = record(TaskState::Failed, Some(at)).finished_at_millis();
        assert_eq!(end, Some(at.timestamp_millis() as u64));
    }
}
