//! Prometheus metrics served at `/metrics` by every process.

use std::sync::{Arc, OnceLock};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use sb_protocol::TaskState;
use sb_store::{EventBus, EventNotice, StoreResult, StoredEvent};
use tokio::sync::{broadcast, oneshot};

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct TaskEventLabels {
    /// The state the event leaves the task in (`TASK_STATE_…`), or `ARTIFACT_UPDATE`.
    state: &'static str,
}

/// Registers `switchboard_task_events` and returns `bus` counting, by the state they
/// leave the task in, the task events this process commits (with several replicas,
/// each counts its own commits: the sum is the total). Counted as they are published,
/// not read back from the all-tasks stream: in Redis that was one more consumer group
/// reading and acknowledging every event of the deployment.
pub(crate) fn count_task_events(
    bus: Arc<dyn EventBus>,
    registry: &mut Registry,
) -> Arc<dyn EventBus> {
    let counter = Family::<TaskEventLabels, Counter>::default();
    registry.register(
        "switchboard_task_events",
        "Committed task events by resulting state",
        counter.clone(),
    );
    Arc::new(CountingBus {
        bus,
        counter,
        series: Default::default(),
    })
}

/// An artifact update's slot in [`CountingBus::series`], after every state's.
const ARTIFACT_SLOT: usize = TaskState::ALL.len();

#[derive(Debug)]
struct CountingBus {
    bus: Arc<dyn EventBus>,
    counter: Family<TaskEventLabels, Counter>,
    /// The family's series by slot (a state's place in [`TaskState::ALL`], or
    /// [`ARTIFACT_SLOT`]), each made on first use: the family's own lookup hashes its
    /// labels with SipHash under a lock, for every event.
    series: [OnceLock<Counter>; ARTIFACT_SLOT + 1],
}

impl CountingBus {
    fn series(&self, state: Option<TaskState>) -> &Counter {
        let slot = state
            .and_then(|s| TaskState::ALL.iter().position(|known| *known == s))
            .unwrap_or(ARTIFACT_SLOT);
        self.series[slot].get_or_init(|| {
            let state = state.map_or("ARTIFACT_UPDATE", TaskState::as_str);
            self.counter
                .get_or_create(&TaskEventLabels { state })
                .clone()
        })
    }
}

#[async_trait::async_trait]
impl EventBus for CountingBus {
    fn publish(&self, event: &StoredEvent) {
        self.series(event.event.state()).inc();
        self.bus.publish(event);
    }

    async fn subscribe(&self, task_id: &str) -> StoreResult<broadcast::Receiver<StoredEvent>> {
        self.bus.subscribe(task_id).await
    }

    async fn subscribe_all(&self, group: &str) -> StoreResult<broadcast::Receiver<EventNotice>> {
        self.bus.subscribe_all(group).await
    }

    async fn announce_turn_over(&self, turn_key: &str) -> StoreResult<()> {
        self.bus.announce_turn_over(turn_key).await
    }

    async fn watch_turn(&self, turn_key: &str) -> StoreResult<oneshot::Receiver<()>> {
        self.bus.watch_turn(turn_key).await
    }

    async fn watch_end(&self, task_id: &str) -> StoreResult<oneshot::Receiver<()>> {
        self.bus.watch_end(task_id).await
    }
}

/// `GET /metrics` in the Prometheus text format.
pub(crate) fn metrics_router(registry: Arc<Registry>) -> axum::Router {
    axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let registry = registry.clone();
            async move {
                let mut text = String::new();
                match prometheus_client::encoding::text::encode(&mut text, &registry) {
                    Ok(()) => (
                        axum::http::StatusCode::OK,
                        [(
                            axum::http::header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    ),
                    Err(e) => (
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                        [(axum::http::header::CONTENT_TYPE, "text/plain")],
                        format!("cannot encode metrics: {e}"),
                    ),
                }
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use sb_protocol::{Message, StreamResponse};
    use sb_store::{EventJson, LocalBus};

    use super::*;

    fn event(state: Option<TaskState>) -> StoredEvent {
        let response = match state {
            Some(state) => serde_json::from_value(serde_json::json!({"statusUpdate": {
                "taskId": "t", "contextId": "c", "status": {"state": state.as_str()},
            }}))
            .unwrap(),
            None => StreamResponse::Message(Message::agent_text("an artifact's stand-in")),
        };
        StoredEvent {
            task_id: "t".into(),
            seq: 1,
            event: response.into(),
            traceparent: None,
            json: EventJson::default(),
        }
    }

    #[test]
    fn events_count_by_the_state_they_leave() {
        let mut registry = Registry::default();
        let bus = count_task_events(Arc::new(LocalBus::new()), &mut registry);
        let states = [
            Some(TaskState::Completed),
            Some(TaskState::Working),
            Some(TaskState::Completed),
            None,
        ];
        for state in states {
            bus.publish(&event(state));
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            r#"switchboard_task_events_total{state="TASK_STATE_COMPLETED"} 2"#,
            r#"switchboard_task_events_total{state="TASK_STATE_WORKING"} 1"#,
            r#"switchboard_task_events_total{state="ARTIFACT_UPDATE"} 1"#,
        ] {
            assert!(text.contains(line), "{line} in\n{text}");
        }
        assert_eq!(text.matches("switchboard_task_events_total{").count(), 3);
    }
}
