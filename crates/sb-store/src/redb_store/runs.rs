//! How the events table holds a task's events: one value per commit, keyed by the task
//! and the commit's first sequence number (a "run"), rather than one value per event.
//! A commit usually carries several events (a new task's creation and its agent's first
//! reports, four in a row for an echo): one B-tree insert instead of four, and the task
//! id once, in the key, instead of in every event. Files written before runs existed
//! hold one event per key, in the stored form with its task id; both read the same.

use std::sync::Arc;

use redb::ReadableTable;
use sb_protocol::StreamResponse;
use serde::Deserialize;

use crate::record::StoredEvent;
use crate::traits::{StoreError, StoreResult};

/// One commit's events (at least one, consecutive) as the table's value: a JSON array
/// of their stored forms without the task id.
pub(super) fn encode(events: &[StoredEvent]) -> StoreResult<Vec<u8>> {
    let size: usize = events
        .iter()
        .map(|e| e.json.get().map_or(512, |j| j.len() + 96))
        .sum();
    let mut out = Vec::with_capacity(size + 2);
    out.push(b'[');
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        event
            .write_stored_json(&mut out, false)
            .map_err(StoreError::backend)?;
    }
    out.push(b']');
    Ok(out)
}

/// A member of a run: a stored event without its task id.
#[derive(Deserialize)]
struct Member {
    seq: u64,
    event: Arc<StreamResponse>,
    #[serde(default)]
    traceparent: Option<String>,
}

/// The events of one value: a run, or a single event as files before runs hold them.
pub(super) fn decode(task_id: &str, bytes: &[u8]) -> StoreResult<Vec<StoredEvent>> {
    if bytes.first() != Some(&b'[') {
        return super::decode(bytes).map(|event| vec![event]);
    }
    let members: Vec<Member> = serde_json::from_slice(bytes)
        .map_err(|e| StoreError::Backend(format!("corrupt event run of task {task_id}: {e}")))?;
    let task_id: Arc<str> = task_id.into();
    Ok(members
        .into_iter()
        .map(|m| StoredEvent {
            task_id: task_id.clone(),
            seq: m.seq,
            event: m.event,
            traceparent: m.traceparent,
            json: Default::default(),
        })
        .collect())
}

/// Up to `limit` events of `task_id` after sequence number `after`, in order.
pub(super) fn events_after(
    table: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    task_id: &str,
    after: u64,
    limit: usize,
) -> StoreResult<Vec<StoredEvent>> {
    let Some(first_wanted) = after.checked_add(1) else {
        return Ok(Vec::new());
    };
    // The run holding the first wanted event starts at or before it.
    let start = match table
        .range((task_id, 0)..=(task_id, first_wanted))
        .map_err(StoreError::backend)?
        .next_back()
    {
        Some(entry) => entry.map_err(StoreError::backend)?.0.value().1,
        None => first_wanted,
    };
    let mut out = Vec::new();
    let runs = table
        .range((task_id, start)..=(task_id, u64::MAX))
        .map_err(StoreError::backend)?;
    for entry in runs {
        if out.len() == limit {
            break;
        }
        let (_, bytes) = entry.map_err(StoreError::backend)?;
        let wanted = decode(task_id, bytes.value())?
            .into_iter()
            .filter(|event| event.seq > after);
        out.extend(wanted.take(limit - out.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use redb::{Database, ReadableDatabase};
    use sb_protocol::Message;

    use super::*;
    use crate::redb_store::EVENTS;

    fn event(seq: u64, traceparent: Option<&str>) -> StoredEvent {
        StoredEvent {
            task_id: "t-1".into(),
            seq,
            event: StreamResponse::Message(Message::agent_text(format!("event \"{seq}\""))).into(),
            traceparent: traceparent.map(str::to_owned),
            json: Default::default(),
        }
    }

    /// A table holding seqs 1–2 as single events (a file from before runs), then the
    /// runs 3–6 and 7, and another task's run after them.
    fn table_of_mixed_forms() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::create(dir.path().join("runs.redb")).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(EVENTS).unwrap();
            for seq in 1..=2 {
                let single = event(seq, None).to_stored_json().unwrap();
                table.insert(("t-1", seq), single.as_slice()).unwrap();
            }
            let run: Vec<_> = (3..=6).map(|seq| event(seq, Some("00-ab-cd-01"))).collect();
            table
                .insert(("t-1", 3), encode(&run).unwrap().as_slice())
                .unwrap();
            table
                .insert(("t-1", 7), encode(&[event(7, None)]).unwrap().as_slice())
                .unwrap();
            let other = StoredEvent {
                task_id: "t-2".into(),
                ..event(1, None)
            };
            table
                .insert(("t-2", 1), encode(&[other]).unwrap().as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
        (dir, db)
    }

    fn seqs_after(db: &Database, after: u64, limit: usize) -> Vec<u64> {
        let txn = db.begin_read().unwrap();
        let table = txn.open_table(EVENTS).unwrap();
        let events = events_after(&table, "t-1", after, limit).unwrap();
        assert!(events.iter().all(|e| &*e.task_id == "t-1"));
        events.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn reads_start_inside_a_run_and_stop_at_the_limit() {
        let (_dir, db) = table_of_mixed_forms();
        assert_eq!(seqs_after(&db, 0, 100), [1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(seqs_after(&db, 1, 100), [2, 3, 4, 5, 6, 7]);
        assert_eq!(seqs_after(&db, 4, 100), [5, 6, 7]);
        assert_eq!(seqs_after(&db, 4, 1), [5]);
        assert_eq!(seqs_after(&db, 2, 3), [3, 4, 5]);
        assert_eq!(seqs_after(&db, 1, 2), [2, 3]);
        assert_eq!(seqs_after(&db, 6, 100), [7]);
        assert!(seqs_after(&db, 7, 100).is_empty());
        assert!(seqs_after(&db, u64::MAX, 100).is_empty());
        assert!(seqs_after(&db, 0, 0).is_empty());
    }

    #[test]
    fn a_run_reads_back_as_the_events_written() {
        let run: Vec<_> = (3..=5)
            .map(|seq| event(seq, (seq == 4).then_some("00-ab-cd-01")))
            .collect();
        let bytes = encode(&run).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("task_id"));
        assert_eq!(decode("t-1", &bytes).unwrap(), run);
        let single = event(9, None);
        let old_form = single.to_stored_json().unwrap();
        assert_eq!(decode("t-1", &old_form).unwrap(), vec![single]);
        let err = decode("t-1", b"[{\"seq\":").unwrap_err();
        assert!(
            err.to_string().contains("corrupt event run of task t-1"),
            "{err}"
        );
    }
}
