//! A task as stored: the record with its JSON kept for whoever sends it on, what the
//! stores' compare-and-set and indexes need of it, and a conditional write of it.

use chrono::{DateTime, Utc};
use sb_protocol::rfc3339::{self, Fraction};
use sb_protocol::{Task, TaskState};
use serde::{Deserialize, Serialize};

use super::StoredEvent;

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
        out.extend_from_slice(b",\"seq\":");
        serde_json::to_writer(&mut out, &self.seq)?;
        out.extend_from_slice(b",\"agent\":");
        serde_json::to_writer(&mut out, &self.agent)?;
        out.extend_from_slice(b",\"owner\":");
        serde_json::to_writer(&mut out, &self.owner)?;
        out.extend_from_slice(b",\"created_at\":");
        // chrono's serde form, which is its AutoSi text.
        rfc3339::with_text(&self.created_at, Fraction::AutoSi, |text| {
            out.push(b'"');
            out.extend_from_slice(text.as_bytes());
            out.push(b'"');
        });
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

#[cfg(test)]
mod stored_json_tests {
    use super::{Task, TaskJson, TaskRecord, TaskState};

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
    fn the_creation_time_is_stored_as_chrono_writes_it() {
        use chrono::TimeZone;
        let whole = chrono::Utc.with_ymd_and_hms(2026, 11, 29, 6, 7, 8).unwrap();
        let far = chrono::Utc.with_ymd_and_hms(12026, 1, 1, 0, 0, 0).unwrap();
        for created_at in [
            whole,
            whole + chrono::Duration::milliseconds(120),
            whole + chrono::Duration::microseconds(120_400),
            whole + chrono::Duration::nanoseconds(7),
            far,
        ] {
            let record = TaskRecord {
                created_at,
                ..record()
            };
            let stored = record.to_stored_json().unwrap();
            assert_eq!(stored, serde_json::to_vec(&record).unwrap());
            assert_eq!(TaskRecord::from_stored_json(&stored).unwrap(), record);
        }
    }
}

#[cfg(test)]
mod finished_at_tests {
    use sb_protocol::model::Message;

    use super::{DateTime, TaskHead, TaskRecord, TaskState, Utc};

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
