//! Prometheus metrics served at `/metrics` by every process.

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct TaskEventLabels {
    /// The state the event leaves the task in (`TASK_STATE_…`), or `ARTIFACT_UPDATE`.
    state: String,
}

/// Registers `switchboard_task_events` and counts, until `stop`, the committed task
/// events this process sees in the `metrics` group (with several replicas, each counts
/// its share: the sum is the total).
pub(crate) async fn count_task_events(
    bus: &dyn sb_store::EventBus,
    registry: &mut Registry,
    stop: &CancellationToken,
) -> Result<(), sb_store::StoreError> {
    let counter = Family::<TaskEventLabels, Counter>::default();
    registry.register(
        "switchboard_task_events",
        "Committed task events by resulting state",
        counter.clone(),
    );
    let events = bus.subscribe_all("metrics").await?;
    tokio::spawn(count_events(events, counter, stop.clone()));
    Ok(())
}

/// Counts committed task events by the state they leave the task in (task creations
/// are the `TASK_STATE_SUBMITTED` ones).
async fn count_events(
    mut events: tokio::sync::broadcast::Receiver<sb_store::StoredEvent>,
    counter: Family<TaskEventLabels, Counter>,
    stop: CancellationToken,
) {
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            event = events.recv() => event,
        };
        match event {
            Ok(event) => {
                let state = event
                    .event
                    .state()
                    .map(|s| s.as_str())
                    .unwrap_or("ARTIFACT_UPDATE");
                counter
                    .get_or_create(&TaskEventLabels {
                        state: state.to_owned(),
                    })
                    .inc();
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "task event metrics fell behind; counts are low by that much"
                );
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
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
