//! [`FleetService`]: what a gateway asks of the fleet layer's state — the outcome
//! counters of a window and the tasks waiting for a person — in its process
//! ([`LocalFleet`], over the stores) or, in the split deployment, of the task-state
//! service over internal gRPC. [`FleetTransitions`] is what fills that state: the task
//! service's [`Transitions`].

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use sb_protocol::{A2AError, TaskState};
use sb_store::fleet::now_ms;
use sb_store::{FleetStore, StoreError, TaskRecord, TaskStore};
use sb_tasks::Transitions;

use crate::health::recorder::OutcomeRecorder;
use crate::health::window::{Bucket, Window};
use crate::outcome::Outcome;
use crate::waiting::WaitingIndex;

#[async_trait]
pub trait FleetService: Send + Sync + std::fmt::Debug + 'static {
    /// The outcome counters of every bucket of `window`, summed (fields as
    /// [`Tally::deltas`](crate::health::tally::Tally::deltas) writes them).
    async fn counters(&self, window: Window) -> Result<BTreeMap<String, i64>, A2AError>;

    /// The tasks waiting for a person, across agents and principals, longest waiting
    /// first.
    async fn waiting(&self) -> Result<Vec<TaskRecord>, A2AError>;
}

/// The fleet layer over the stores of this process.
#[derive(Clone, Debug)]
pub struct LocalFleet {
    store: Arc<dyn FleetStore>,
    tasks: Arc<dyn TaskStore>,
}

impl LocalFleet {
    pub fn new(store: Arc<dyn FleetStore>, tasks: Arc<dyn TaskStore>) -> LocalFleet {
        LocalFleet { store, tasks }
    }
}

fn unavailable(error: StoreError) -> A2AError {
    tracing::error!(%error, "fleet store failure");
    A2AError::internal("the fleet's state is unavailable; try again").retryable(true)
}

#[async_trait]
impl FleetService for LocalFleet {
    async fn counters(&self, window: Window) -> Result<BTreeMap<String, i64>, A2AError> {
        let keys: Vec<String> = window.buckets(now_ms()).iter().map(Bucket::key).collect();
        let maps = self.store.read_counters(&keys).await.map_err(unavailable)?;
        let mut summed = BTreeMap::new();
        for (field, value) in maps.into_iter().flatten() {
            *summed.entry(field).or_insert(0) += value;
        }
        Ok(summed)
    }

    async fn waiting(&self) -> Result<Vec<TaskRecord>, A2AError> {
        WaitingIndex::list(&*self.store, &*self.tasks)
            .await
            .map_err(unavailable)
    }
}

/// The task service's [`Transitions`]: each finished task counted as an outcome, each
/// task that starts or stops waiting for a person noted in the index.
#[derive(Debug)]
pub struct FleetTransitions {
    pub outcomes: Arc<OutcomeRecorder>,
    pub waiting: WaitingIndex,
}

impl Transitions for FleetTransitions {
    fn changed(&self, from: Option<TaskState>, record: &TaskRecord) {
        if let Some(outcome) = Outcome::of(record) {
            let ended = record
                .task
                .status
                .timestamp
                .map(|t| t.timestamp_millis().max(0) as u64);
            self.outcomes.record(outcome, ended.unwrap_or_else(now_ms));
        }
        self.waiting.changed(from, record);
    }
}
