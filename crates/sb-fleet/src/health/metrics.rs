//! Fleet health as Prometheus metrics, by agent and skill, from the outcomes this
//! process commits: with several replicas each counts its own, and the sum over the
//! replicas (what a `sum by (agent, skill)` query gives) is the fleet's.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use parking_lot::RwLock;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use sb_protocol::TaskState;
use sb_store::IdMap;

use super::tally::DURATION_BOUNDS_MS;
use crate::outcome::Outcome;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    agent: String,
    skill: String,
    /// The terminal state (`completed`, `failed`, `canceled`, `rejected`).
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SkillLabels {
    agent: String,
    skill: String,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BOUNDS_MS.iter().map(|ms| *ms as f64 / 1000.0))
}

/// The fleet's outcome metrics.
#[derive(Clone, Debug)]
pub struct FleetMetrics {
    outcomes: Family<OutcomeLabels, Counter>,
    durations: Family<OutcomeLabels, Histogram, fn() -> Histogram>,
    cost: Family<SkillLabels, Counter<f64, AtomicU64>>,
    /// The families' series by agent and skill, found with two borrowed lookups: every
    /// finished task is counted on the commit path, and a family's own lookup builds
    /// owned labels and hashes them with SipHash, twice a task.
    series: Arc<RwLock<IdMap<String, IdMap<String, SkillSeries>>>>,
}

/// One agent and skill's series, by how its tasks ended: handles sharing the
/// families' own counters.
#[derive(Clone, Debug, Default)]
struct SkillSeries {
    ended: [Option<EndedSeries>; 4],
}

#[derive(Clone, Debug)]
struct EndedSeries {
    count: Counter,
    duration: Histogram,
}

/// The slot of a terminal state in [`SkillSeries::ended`] (an outcome's state is always
/// one; any other is counted without a kept handle).
fn slot(state: TaskState) -> Option<usize> {
    match state {
        TaskState::Completed => Some(0),
        TaskState::Failed => Some(1),
        TaskState::Canceled => Some(2),
        TaskState::Rejected => Some(3),
        _ => None,
    }
}

impl Default for FleetMetrics {
    fn default() -> FleetMetrics {
        FleetMetrics {
            outcomes: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
            cost: Family::default(),
            series: Arc::default(),
        }
    }
}

impl FleetMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "switchboard_fleet_outcomes",
            "Finished tasks by agent, skill and how they ended",
            self.outcomes.clone(),
        );
        registry.register(
            "switchboard_fleet_task_duration_seconds",
            "Time from a task's creation to its end, by agent, skill and how it ended",
            self.durations.clone(),
        );
        registry.register(
            "switchboard_fleet_cost_usd",
            "Cost the agents reported in cost-v1 parts, in US dollars",
            self.cost.clone(),
        );
    }

    pub fn observe(&self, outcome: &Outcome) {
        let ended = self.ended_series(outcome);
        ended.duration.observe(outcome.duration_ms as f64 / 1000.0);
        ended.count.inc();
        if let Some(usd) = outcome.cost_usd {
            let labels = SkillLabels {
                agent: outcome.agent.clone(),
                skill: outcome.skill.clone(),
            };
            self.cost.get_or_create(&labels).inc_by(usd);
        }
    }

    /// The series `outcome` is counted in, made in the families the first time.
    fn ended_series(&self, outcome: &Outcome) -> EndedSeries {
        let slot = slot(outcome.state);
        let known = slot.and_then(|slot| {
            self.series
                .read()
                .get(outcome.agent.as_str())
                .and_then(|skills| skills.get(outcome.skill.as_str()))
                .and_then(|series| series.ended[slot].clone())
        });
        if let Some(ended) = known {
            return ended;
        }
        let labels = OutcomeLabels {
            agent: outcome.agent.clone(),
            skill: outcome.skill.clone(),
            outcome: outcome.state.as_v03_str(),
        };
        let ended = EndedSeries {
            count: self.outcomes.get_or_create(&labels).clone(),
            duration: self.durations.get_or_create(&labels).clone(),
        };
        if let Some(slot) = slot {
            let mut series = self.series.write();
            let skills = series.entry(labels.agent).or_default();
            let kept = skills.entry(labels.skill).or_default();
            kept.ended[slot] = Some(ended.clone());
        }
        ended
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;

    use super::*;

    fn outcome(agent: &str, skill: &str, state: TaskState) -> Outcome {
        Outcome {
            agent: agent.into(),
            skill: skill.into(),
            state,
            reason: None,
            duration_ms: 1500,
            cost_usd: None,
        }
    }

    #[test]
    fn each_agent_skill_and_end_counts_in_its_own_series() {
        let metrics = FleetMetrics::default();
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let ends = [
            ("a", "s", TaskState::Completed),
            ("a", "s", TaskState::Completed),
            ("a", "s", TaskState::Failed),
            ("a", "", TaskState::Completed),
            ("b", "s", TaskState::Rejected),
            ("b", "s", TaskState::Working),
        ];
        for (agent, skill, state) in ends {
            metrics.observe(&outcome(agent, skill, state));
        }
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        for (series, count) in [
            (r#"agent="a",skill="s",outcome="completed""#, 2),
            (r#"agent="a",skill="s",outcome="failed""#, 1),
            (r#"agent="a",skill="",outcome="completed""#, 1),
            (r#"agent="b",skill="s",outcome="rejected""#, 1),
            (r#"agent="b",skill="s",outcome="working""#, 1),
        ] {
            let counted = format!("switchboard_fleet_outcomes_total{{{series}}} {count}\n");
            assert!(text.contains(&counted), "{counted} in\n{text}");
            let timed =
                format!("switchboard_fleet_task_duration_seconds_count{{{series}}} {count}\n");
            assert!(text.contains(&timed), "{timed} in\n{text}");
        }
        assert_eq!(text.matches("switchboard_fleet_outcomes_total{").count(), 5);
    }
}
