//! One event of a task's log as stored, its 1.0 JSON made at most once and shared by
//! every clone, and the notice of it that the all-tasks feed carries.

use sb_protocol::{StreamResponse, TaskState};
use serde::{Deserialize, Serialize};

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
        if with_task_id {
            out.extend_from_slice(b"{\"task_id\":");
            serde_json::to_writer(&mut *out, &*self.task_id)?;
            out.push(b',');
        } else {
            out.push(b'{');
        }
        out.extend_from_slice(b"\"seq\":");
        serde_json::to_writer(&mut *out, &self.seq)?;
        out.extend_from_slice(b",\"event\":");
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

impl PartialEq for EventJson {
    fn eq(&self, _: &EventJson) -> bool {
        true
    }
}

#[cfg(test)]
mod event_json_tests {
    use sb_protocol::model::Message;

    use super::{EventJson, StoredEvent, StreamResponse};

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

    #[test]
    fn the_stored_json_uses_a_serialisation_made_already() {
        let event = event(None);
        let rendered = event.json.render(&event.event);
        let stored = event.to_stored_json().unwrap();
        assert_eq!(stored, serde_json::to_vec(&event).unwrap());
        assert!(std::sync::Arc::ptr_eq(&rendered, event.json.get().unwrap()));
    }
}
