//! [`OutcomeRecorder`]: counts each finished task into the buckets of fleet health. The
//! commit path only adds to tallies in memory; a flusher adds them to the store's
//! counters about once a second, so a task costs no store write of its own, and
//! replicas sum into the same buckets. A failed flush keeps its tallies for the next
//! one; what a process had not flushed when it died is lost (at most about a second).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use sb_store::{FleetStore, StoreResult};
use tokio_util::sync::CancellationToken;

use super::metrics::FleetMetrics;
use super::skill_names::SkillNames;
use super::tally::Tally;
use super::window::{Bucket, Span};
use crate::outcome::Outcome;

/// How often tallies go to the store.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

type Tallies = BTreeMap<(String, String), Tally>;

#[derive(Debug, Default)]
pub struct OutcomeRecorder {
    pending: Mutex<BTreeMap<Bucket, Tallies>>,
    metrics: FleetMetrics,
    skills: SkillNames,
}

impl OutcomeRecorder {
    pub fn new(metrics: FleetMetrics) -> OutcomeRecorder {
        OutcomeRecorder {
            pending: Mutex::default(),
            metrics,
            skills: SkillNames::default(),
        }
    }

    /// Counts `outcome`, which ended at `at_ms`, under the skill name
    /// [`SkillNames`] gives it.
    pub fn record(&self, mut outcome: Outcome, at_ms: u64) {
        if let Some(counted_as) = self.skills.rename(&outcome.agent, &outcome.skill) {
            outcome.skill = counted_as;
        }
        self.metrics.observe(&outcome);
        let pair = (outcome.agent.clone(), outcome.skill.clone());
        let mut pending = self.pending.lock();
        for span in Span::ALL {
            let tallies = pending.entry(span.bucket(at_ms)).or_default();
            // Looked up before inserting: the pair is nearly always there already, and
            // this runs on the commit path of every task.
            match tallies.get_mut(&pair) {
                Some(tally) => tally.add(&outcome),
                None => tallies.entry(pair.clone()).or_default().add(&outcome),
            }
        }
    }

    /// Adds what is pending to the store. Buckets not written are kept for the next
    /// flush, merged with what came meanwhile.
    pub async fn flush(&self, store: &dyn FleetStore) -> StoreResult<()> {
        let taken = std::mem::take(&mut *self.pending.lock());
        let mut unwritten = BTreeMap::new();
        let mut failure = None;
        for (bucket, tallies) in taken {
            if failure.is_some() {
                unwritten.insert(bucket, tallies);
                continue;
            }
            let deltas: Vec<(String, i64)> = tallies
                .iter()
                .flat_map(|((agent, skill), tally)| tally.deltas(agent, skill))
                .collect();
            if let Err(e) = store
                .add_counters(&bucket.key(), &deltas, bucket.expires_at_ms())
                .await
            {
                failure = Some(e);
                unwritten.insert(bucket, tallies);
            }
        }
        if !unwritten.is_empty() {
            let mut pending = self.pending.lock();
            for (bucket, tallies) in unwritten {
                let into = pending.entry(bucket).or_default();
                for (pair, tally) in tallies {
                    into.entry(pair).or_default().merge(&tally);
                }
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// Flushes about once a second until `stop`, then once more.
    pub fn spawn_flushing(
        self: Arc<Self>,
        store: Arc<dyn FleetStore>,
        stop: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(FLUSH_EVERY);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    () = stop.cancelled() => break,
                }
                if let Err(e) = self.flush(&*store).await {
                    tracing::warn!(error = %e, "could not store fleet health outcomes; kept for the next try");
                }
            }
            if let Err(e) = self.flush(&*store).await {
                tracing::warn!(error = %e, "fleet health outcomes not stored at shutdown were lost");
            }
        })
    }
}

/// Every tally in the counters of some buckets (read from the store), by agent and skill.
pub fn tallies_of(counters: &BTreeMap<String, i64>) -> Tallies {
    let mut tallies = Tallies::new();
    for (field, value) in counters {
        Tally::absorb(&mut tallies, field, *value);
    }
    tallies
}

#[cfg(test)]
mod tests {
    use sb_protocol::TaskState;
    use sb_store::MemoryStore;

    use super::*;
    use crate::health::window::Window;

    fn outcome(agent: &str, state: TaskState) -> Outcome {
        Outcome {
            agent: agent.into(),
            skill: "summarize".into(),
            state,
            reason: (state != TaskState::Completed).then(|| "it broke".to_owned()),
            duration_ms: 120,
            cost_usd: Some(0.5),
        }
    }

    async fn read(store: &MemoryStore, window: Window, now: u64) -> Tallies {
        let keys: Vec<String> = window.buckets(now).iter().map(Bucket::key).collect();
        let mut summed = BTreeMap::new();
        for map in store.read_counters(&keys).await.unwrap() {
            for (field, value) in map {
                *summed.entry(field).or_insert(0) += value;
            }
        }
        tallies_of(&summed)
    }

    #[tokio::test]
    async fn skills_past_an_agents_limit_are_counted_together_in_metrics_and_buckets() {
        use prometheus_client::encoding::text::encode;
        use prometheus_client::registry::Registry;

        use crate::health::skill_names::{MAX_SKILLS_PER_AGENT, OTHER_SKILLS};

        let store = MemoryStore::new();
        let metrics = FleetMetrics::default();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let recorder = OutcomeRecorder::new(metrics);
        let now = chrono::Utc::now().timestamp_millis() as u64;
        let extra = 10;
        for n in 0..MAX_SKILLS_PER_AGENT + extra {
            let mut made_up = outcome("a", TaskState::Completed);
            made_up.skill = format!("made-up-{n}");
            recorder.record(made_up, now);
        }
        recorder.flush(&store).await.unwrap();
        let tallies = read(&store, Window::LastHour, now).await;
        assert_eq!(tallies.len(), MAX_SKILLS_PER_AGENT + 1);
        let other = &tallies[&("a".to_owned(), OTHER_SKILLS.to_owned())];
        assert_eq!(other.of_state(TaskState::Completed), extra as u64);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        let series = text.matches("switchboard_fleet_outcomes_total{").count();
        assert_eq!(series, MAX_SKILLS_PER_AGENT + 1);
        let lumped = format!(
            "switchboard_fleet_outcomes_total{{agent=\"a\",skill=\"{OTHER_SKILLS}\",outcome=\"completed\"}} {extra}\n"
        );
        assert!(text.contains(&lumped), "{lumped} in\n{text}");
    }

    #[tokio::test]
    async fn two_recorders_sum_into_the_same_buckets() {
        let store = MemoryStore::new();
        let now = chrono::Utc::now().timestamp_millis() as u64;
        let (one, two) = (OutcomeRecorder::default(), OutcomeRecorder::default());
        one.record(outcome("a", TaskState::Completed), now);
        one.record(outcome("a", TaskState::Failed), now);
        two.record(outcome("a", TaskState::Completed), now);
        two.record(outcome("b", TaskState::Rejected), now - 30 * 60_000);
        one.flush(&store).await.unwrap();
        two.flush(&store).await.unwrap();
        one.flush(&store).await.unwrap();
        for window in Window::ALL {
            let tallies = read(&store, window, now).await;
            let a = &tallies[&("a".to_owned(), "summarize".to_owned())];
            assert_eq!(a.of_state(TaskState::Completed), 2, "{window:?}");
            assert_eq!(a.of_state(TaskState::Failed), 1);
            assert_eq!(a.cost_micro_usd, 1_500_000);
            let b = &tallies[&("b".to_owned(), "summarize".to_owned())];
            assert_eq!(b.of_state(TaskState::Rejected), 1);
        }
        let long_ago = now - 2 * 3_600_000;
        let old = OutcomeRecorder::default();
        old.record(outcome("c", TaskState::Completed), long_ago);
        old.flush(&store).await.unwrap();
        assert!(
            !read(&store, Window::LastHour, now)
                .await
                .contains_key(&("c".into(), "summarize".into()))
        );
        assert!(
            read(&store, Window::LastDay, now)
                .await
                .contains_key(&("c".into(), "summarize".into()))
        );
    }
}
