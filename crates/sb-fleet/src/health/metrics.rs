//! Fleet health as Prometheus metrics, by agent and skill, from the outcomes this
//! process commits: with several replicas each counts its own, and the sum over the
//! replicas (what a `sum by (agent, skill)` query gives) is the fleet's.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

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
}

impl Default for FleetMetrics {
    fn default() -> FleetMetrics {
        FleetMetrics {
            outcomes: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
            cost: Family::default(),
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
        let labels = OutcomeLabels {
            agent: outcome.agent.clone(),
            skill: outcome.skill.clone(),
            outcome: outcome.state.as_v03_str(),
        };
        self.durations
            .get_or_create(&labels)
            .observe(outcome.duration_ms as f64 / 1000.0);
        self.outcomes.get_or_create(&labels).inc();
        if let Some(usd) = outcome.cost_usd {
            let labels = SkillLabels {
                agent: labels.agent,
                skill: labels.skill,
            };
            self.cost.get_or_create(&labels).inc_by(usd);
        }
    }
}
