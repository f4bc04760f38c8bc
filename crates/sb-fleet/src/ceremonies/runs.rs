//! The runs of a ceremony, kept in the [`FleetStore`]: each firing (on time, late
//! within the grace, or by hand) with the task it made on each target and how each
//! ended, and each firing missed. The last [`RUNS_KEPT`] of each ceremony are kept.

use chrono::{DateTime, Utc};
use sb_protocol::TaskState;
use sb_store::{FleetStore, StoreResult};

use super::stored;
use serde::{Deserialize, Serialize};

/// Runs kept per ceremony; older ones are dropped as new ones are recorded.
pub const RUNS_KEPT: usize = 100;

/// How a run came about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Trigger {
    /// Its schedule, on time or late within the grace.
    Schedule,
    /// `POST /api/ceremonies/{id}/run`.
    Manual,
    /// Its schedule, but too late to fire: nothing was sent.
    Missed,
}

/// What one target was sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunTask {
    pub target: String,
    /// The task made on it; `None` when the send was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Its state when last seen (its outcome, once it ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<TaskState>,
    /// Why the send was refused, or why the task did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub ceremony: String,
    /// The firing time it is for (for a manual run, when it was asked for).
    pub scheduled_for: DateTime<Utc>,
    pub trigger: Trigger,
    /// When it was sent; `None` for a missed firing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fired_at: Option<DateTime<Utc>>,
    pub tasks: Vec<RunTask>,
    /// Its notice was posted to the ceremony's `notifyChannel` (or claimed for posting).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notified: bool,
}

impl Run {
    /// Its id among the ceremony's runs: sorts as time does (the store lists documents
    /// by id), one per firing.
    pub fn id(&self) -> String {
        let millis = self.scheduled_for.timestamp_millis().max(0);
        let trigger = match self.trigger {
            Trigger::Schedule | Trigger::Missed => "s",
            Trigger::Manual => "m",
        };
        format!("{millis:015}-{trigger}")
    }

    /// Every task it made has ended (or was never made, or can no longer be read):
    /// nothing more to learn.
    pub fn is_over(&self) -> bool {
        self.tasks.iter().all(|task| {
            task.task_id.is_none()
                || task.error.is_some()
                || task.state.is_some_and(sb_protocol::TaskState::is_terminal)
        })
    }
}

fn collection(ceremony: &str) -> String {
    format!("ceremony-runs:{ceremony}")
}

/// Keeps `run` (replacing a run of the same firing), then drops the oldest beyond
/// [`RUNS_KEPT`].
pub async fn record(store: &dyn FleetStore, run: &Run) -> StoreResult<()> {
    let collection = collection(&run.ceremony);
    store
        .doc_put(&collection, &run.id(), stored::encode(run)?)
        .await?;
    let ids: Vec<String> = store
        .doc_list(&collection)
        .await?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    for old in ids.iter().take(ids.len().saturating_sub(RUNS_KEPT)) {
        store.doc_remove(&collection, old).await?;
    }
    Ok(())
}

/// Notes the state a run's task reached (its outcome, once it ended).
pub async fn settle(
    store: &dyn FleetStore,
    run: &Run,
    task_id: &str,
    state: TaskState,
    error: Option<String>,
) -> StoreResult<()> {
    let collection = collection(&run.ceremony);
    stored::update(store, &collection, &run.id(), |current: Option<Run>| {
        let mut current = current?;
        let task = current
            .tasks
            .iter_mut()
            .find(|t| t.task_id.as_deref() == Some(task_id))?;
        task.state = Some(state);
        task.error = error.clone();
        Some(current)
    })
    .await
}

/// Marks `run` as notified; whether this call did (another replica may have first).
pub async fn mark_notified(store: &dyn FleetStore, run: &Run) -> StoreResult<bool> {
    let collection = collection(&run.ceremony);
    let mut marked = false;
    stored::update(store, &collection, &run.id(), |current: Option<Run>| {
        // Tried again after a lost race: only the last try's answer counts.
        marked = false;
        let mut current = current.filter(|r| !r.notified)?;
        current.notified = true;
        marked = true;
        Some(current)
    })
    .await?;
    Ok(marked)
}

/// The ceremony's runs, newest first.
pub async fn list(store: &dyn FleetStore, ceremony: &str) -> StoreResult<Vec<Run>> {
    let stored = store.doc_list(&collection(ceremony)).await?;
    Ok(stored
        .into_iter()
        .rev()
        .filter_map(|(_, bytes)| serde_json::from_slice(&bytes).ok())
        .collect())
}

#[cfg(test)]
mod tests {
    use chrono::Duration;
    use sb_store::MemoryStore;

    use super::*;

    fn run(minute: i64, trigger: Trigger) -> Run {
        let at =
            DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap() + Duration::minutes(minute);
        Run {
            ceremony: "tick".into(),
            scheduled_for: at,
            trigger,
            fired_at: (trigger != Trigger::Missed).then_some(at),
            tasks: vec![RunTask {
                target: "writer".into(),
                task_id: Some(format!("t{minute}")),
                state: Some(TaskState::Submitted),
                error: None,
            }],
            notified: false,
        }
    }

    #[tokio::test]
    async fn runs_are_kept_newest_first_and_their_outcomes_noted() {
        let store = MemoryStore::new();
        record(&store, &run(1, Trigger::Missed)).await.unwrap();
        let second = run(2, Trigger::Schedule);
        record(&store, &second).await.unwrap();
        record(&store, &run(3, Trigger::Manual)).await.unwrap();
        settle(
            &store,
            &second,
            "t2",
            TaskState::Failed,
            Some("it broke".into()),
        )
        .await
        .unwrap();
        let runs = list(&store, "tick").await.unwrap();
        let triggers: Vec<Trigger> = runs.iter().map(|r| r.trigger).collect();
        assert_eq!(
            triggers,
            [Trigger::Manual, Trigger::Schedule, Trigger::Missed]
        );
        assert_eq!(runs[1].tasks[0].state, Some(TaskState::Failed));
        assert_eq!(runs[1].tasks[0].error.as_deref(), Some("it broke"));
        assert_eq!(
            runs[0].tasks[0].state,
            Some(TaskState::Submitted),
            "the other run is untouched"
        );
    }

    #[tokio::test]
    async fn a_run_is_marked_notified_once_and_is_over_when_its_tasks_end() {
        let store = MemoryStore::new();
        let run = run(1, Trigger::Schedule);
        record(&store, &run).await.unwrap();
        assert!(!run.is_over(), "its task was only submitted");
        assert!(mark_notified(&store, &run).await.unwrap());
        assert!(
            !mark_notified(&store, &run).await.unwrap(),
            "a second replica finds it notified"
        );
        settle(&store, &run, "t1", TaskState::Completed, None)
            .await
            .unwrap();
        let kept = list(&store, "tick").await.unwrap().remove(0);
        assert!(kept.notified && kept.is_over(), "{kept:?}");
        let refused = RunTask {
            target: "gone".into(),
            task_id: None,
            state: None,
            error: Some("no such agent".into()),
        };
        let mut unsent = kept;
        unsent.tasks = vec![refused];
        assert!(unsent.is_over(), "a send refused has nothing to wait for");
    }

    #[tokio::test]
    async fn only_the_last_runs_are_kept() {
        let store = MemoryStore::new();
        for minute in 0..(RUNS_KEPT as i64 + 5) {
            record(&store, &run(minute, Trigger::Schedule))
                .await
                .unwrap();
        }
        let runs = list(&store, "tick").await.unwrap();
        assert_eq!(runs.len(), RUNS_KEPT);
        assert_eq!(runs[0].tasks[0].task_id.as_deref(), Some("t104"));
        assert_eq!(runs[RUNS_KEPT - 1].tasks[0].task_id.as_deref(), Some("t5"));
    }
}
