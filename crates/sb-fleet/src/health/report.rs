//! The fleet health report (`GET /fleet/health`): for each window, every agent and
//! every skill with its counts, success rate, p50/p95 duration of the completed
//! tasks, cost, and most frequent failure reasons; the tasks waiting for a person
//! longer than the policy allows; the skills no healthy agent serves. Built from the
//! summed counters and the registry's agents, for the agents the caller may see.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use sb_protocol::TaskState;
use sb_store::TaskRecord;
use serde::{Deserialize, Serialize};

use super::recorder::tallies_of;
use super::tally::Tally;
use super::window::Window;

/// How many failure reasons a report lists per agent or skill.
const TOP_REASONS: usize = 5;

/// When an agent counts as healthy, and how long a wait for a person is too long
/// (`[fleet.health]` in the configuration, snake_case there; camelCase in reports).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all(serialize = "camelCase"))]
pub struct HealthPolicy {
    /// An agent whose success rate over the last hour is below this is unhealthy…
    pub min_success_rate: f64,
    /// …once it has at least this many outcomes there (fewer say too little).
    pub min_outcomes: u64,
    /// A task waiting for a person longer than this is listed in `waitingTooLong`.
    pub waiting_alert_secs: u64,
}

impl Default for HealthPolicy {
    fn default() -> HealthPolicy {
        HealthPolicy {
            min_success_rate: 0.5,
            min_outcomes: 5,
            waiting_alert_secs: 3600,
        }
    }
}

impl HealthPolicy {
    /// Whether an agent with this tally over the last hour is healthy.
    pub fn healthy(&self, last_hour: &Tally) -> bool {
        last_hour.count() < self.min_outcomes
            || last_hour.success_rate().unwrap_or(1.0) >= self.min_success_rate
    }
}

/// An agent as the report sees it: its name and the skills its card declares.
#[derive(Clone, Debug)]
pub struct AgentSkills {
    pub agent: String,
    pub skills: Vec<String>,
    /// A routing agent: its outcomes are those of the tasks it routed, end to end,
    /// reported for it but not again in the skills' rollup (the agents that did the
    /// work count them there), and it serves no skill itself.
    pub routes: bool,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthReport {
    pub generated_at: DateTime<Utc>,
    pub policy: HealthPolicy,
    pub windows: BTreeMap<&'static str, WindowReport>,
    pub waiting_too_long: Vec<LongWait>,
    pub unserved_skills: Vec<UnservedSkill>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowReport {
    pub agents: Vec<AgentHealth>,
    pub skills: Vec<SkillHealth>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentHealth {
    pub agent: String,
    /// Judged on the last hour, whatever the window.
    pub healthy: bool,
    #[serde(flatten)]
    pub stats: Stats,
    /// By the skill its tasks named (`""`: none).
    pub skills: Vec<SkillHealth>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillHealth {
    pub skill: String,
    #[serde(flatten)]
    pub stats: Stats,
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub count: u64,
    pub completed: u64,
    pub failed: u64,
    pub canceled: u64,
    pub rejected: u64,
    /// Completed share of `count`; null without outcomes.
    pub success_rate: Option<f64>,
    /// Of the completed tasks, known to within a histogram bucket.
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    /// Reported in `cost-v1` parts, by every outcome that reported one.
    pub cost_usd: f64,
    /// `costUsd` over the completed tasks; null without any.
    pub cost_per_success_usd: Option<f64>,
    pub top_failure_reasons: Vec<FailureReason>,
}

#[derive(Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureReason {
    pub state: TaskState,
    pub reason: String,
    pub count: u64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LongWait {
    pub agent: String,
    pub task_id: String,
    pub context_id: String,
    pub state: TaskState,
    pub since: DateTime<Utc>,
    pub waiting_secs: u64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnservedSkill {
    pub skill: String,
    /// The agents declaring it, all unhealthy (empty: none declares it any more).
    pub agents: Vec<String>,
}

impl Stats {
    pub fn of(tally: &Tally) -> Stats {
        let completed = tally.of_state(TaskState::Completed);
        let cost_usd = tally.cost_micro_usd as f64 / 1e6;
        let mut reasons: Vec<FailureReason> = tally
            .reasons
            .iter()
            .map(|((state, reason), count)| FailureReason {
                state: *state,
                reason: reason.clone(),
                count: *count,
            })
            .collect();
        reasons.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.reason.cmp(&b.reason)));
        reasons.truncate(TOP_REASONS);
        Stats {
            count: tally.count(),
            completed,
            failed: tally.of_state(TaskState::Failed),
            canceled: tally.of_state(TaskState::Canceled),
            rejected: tally.of_state(TaskState::Rejected),
            success_rate: tally.success_rate(),
            p50_ms: tally.quantile_ms(0.5),
            p95_ms: tally.quantile_ms(0.95),
            cost_usd,
            cost_per_success_usd: (completed > 0).then(|| cost_usd / completed as f64),
            top_failure_reasons: reasons,
        }
    }
}

/// What one window's counters say about `agents` (and only them).
fn window_report(
    counters: &BTreeMap<String, i64>,
    agents: &[AgentSkills],
    healthy: &BTreeMap<String, bool>,
) -> WindowReport {
    let visible: BTreeSet<&str> = agents.iter().map(|a| a.agent.as_str()).collect();
    let routing: BTreeSet<&str> = agents
        .iter()
        .filter(|a| a.routes)
        .map(|a| a.agent.as_str())
        .collect();
    let mut by_agent: BTreeMap<String, (Tally, BTreeMap<String, Tally>)> = agents
        .iter()
        .map(|a| (a.agent.clone(), Default::default()))
        .collect();
    let mut by_skill: BTreeMap<String, Tally> = BTreeMap::new();
    for ((agent, skill), tally) in tallies_of(counters) {
        if !visible.contains(agent.as_str()) {
            continue;
        }
        if !routing.contains(agent.as_str()) {
            by_skill.entry(skill.clone()).or_default().merge(&tally);
        }
        let (total, skills) = by_agent.entry(agent).or_default();
        total.merge(&tally);
        skills.entry(skill).or_default().merge(&tally);
    }
    let skill_health = |(skill, tally): (String, Tally)| SkillHealth {
        stats: Stats::of(&tally),
        skill,
    };
    WindowReport {
        agents: by_agent
            .into_iter()
            .map(|(agent, (total, skills))| AgentHealth {
                healthy: healthy.get(&agent).copied().unwrap_or(true),
                stats: Stats::of(&total),
                skills: skills.into_iter().map(skill_health).collect(),
                agent,
            })
            .collect(),
        skills: by_skill.into_iter().map(skill_health).collect(),
    }
}

/// The whole report: `counters` by window, `agents` the caller may see, `waiting` the
/// waiting tasks among them.
pub fn build(
    counters: &BTreeMap<Window, BTreeMap<String, i64>>,
    agents: &[AgentSkills],
    waiting: &[TaskRecord],
    policy: HealthPolicy,
    now: DateTime<Utc>,
) -> HealthReport {
    let none = BTreeMap::new();
    let last_hour = counters.get(&Window::LastHour).unwrap_or(&none);
    let mut hour_totals: BTreeMap<String, Tally> = BTreeMap::new();
    for ((agent, _), tally) in tallies_of(last_hour) {
        hour_totals.entry(agent).or_default().merge(&tally);
    }
    let healthy: BTreeMap<String, bool> = agents
        .iter()
        .map(|a| {
            let tally = hour_totals.get(&a.agent).cloned().unwrap_or_default();
            (a.agent.clone(), policy.healthy(&tally))
        })
        .collect();
    let windows = counters
        .iter()
        .map(|(window, counters)| (window.name(), window_report(counters, agents, &healthy)))
        .collect();
    let waiting_too_long = waiting
        .iter()
        .filter_map(|record| {
            let since = record.status_time();
            let waiting_secs = (now - since).num_seconds().max(0) as u64;
            (waiting_secs > policy.waiting_alert_secs).then(|| LongWait {
                agent: record.agent.clone(),
                task_id: record.task.id.clone(),
                context_id: record.task.context_id.clone(),
                state: record.state(),
                since,
                waiting_secs,
            })
        })
        .collect();
    let mut declared: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for agent in agents.iter().filter(|a| !a.routes) {
        for skill in &agent.skills {
            declared.entry(skill).or_default().push(agent.agent.clone());
        }
    }
    let unserved_skills = declared
        .into_iter()
        .filter(|(_, serving)| {
            !serving
                .iter()
                .any(|a| healthy.get(a).copied().unwrap_or(true))
        })
        .map(|(skill, agents)| UnservedSkill {
            skill: skill.to_owned(),
            agents,
        })
        .collect();
    HealthReport {
        generated_at: now,
        policy,
        windows,
        waiting_too_long,
        unserved_skills,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Outcome;

    fn counters(outcomes: &[(&str, &str, TaskState)]) -> BTreeMap<String, i64> {
        let mut tallies: BTreeMap<(String, String), Tally> = BTreeMap::new();
        for (agent, skill, state) in outcomes {
            let outcome = Outcome {
                agent: (*agent).into(),
                skill: (*skill).into(),
                state: *state,
                reason: (*state != TaskState::Completed).then(|| "nope".to_owned()),
                duration_ms: 30,
                cost_usd: None,
            };
            tallies
                .entry(((*agent).into(), (*skill).into()))
                .or_default()
                .add(&outcome);
        }
        let mut fields = BTreeMap::new();
        for ((agent, skill), tally) in tallies {
            fields.extend(tally.deltas(&agent, &skill));
        }
        fields
    }

    fn agent(name: &str, skills: &[&str]) -> AgentSkills {
        AgentSkills {
            agent: name.into(),
            skills: skills.iter().map(|s| (*s).to_owned()).collect(),
            routes: false,
        }
    }

    #[test]
    fn an_agent_failing_most_tasks_is_unhealthy_and_its_only_skill_unserved() {
        use TaskState::{Completed, Failed};
        let mut outcomes = vec![("good", "summarize", Completed); 6];
        outcomes.extend(vec![("bad", "translate", Failed); 5]);
        outcomes.push(("bad", "translate", Completed));
        outcomes.push(("hidden", "summarize", Completed));
        let hour = counters(&outcomes);
        let by_window = BTreeMap::from([(Window::LastHour, hour.clone()), (Window::LastDay, hour)]);
        let agents = [
            agent("good", &["summarize"]),
            agent("bad", &["translate", "summarize"]),
            agent("idle", &["poetry"]),
        ];
        let report = build(
            &by_window,
            &agents,
            &[],
            HealthPolicy::default(),
            Utc::now(),
        );
        let hour = &report.windows["1h"];
        let names: Vec<_> = hour
            .agents
            .iter()
            .map(|a| (a.agent.as_str(), a.healthy))
            .collect();
        assert_eq!(names, [("bad", false), ("good", true), ("idle", true)]);
        let bad = &hour.agents[0];
        assert_eq!((bad.stats.count, bad.stats.failed), (6, 5));
        assert_eq!(bad.stats.top_failure_reasons[0].count, 5);
        let skills: Vec<_> = hour
            .skills
            .iter()
            .map(|s| (s.skill.as_str(), s.stats.count))
            .collect();
        assert_eq!(
            skills,
            [("summarize", 6), ("translate", 6)],
            "the hidden agent is left out"
        );
        let unserved: Vec<_> = report
            .unserved_skills
            .iter()
            .map(|s| s.skill.as_str())
            .collect();
        assert_eq!(unserved, ["translate"]);
    }

    #[test]
    fn a_routing_agents_outcomes_are_its_own_not_the_skills_again() {
        use TaskState::{Completed, Failed};
        let mut outcomes = vec![("worker", "summarize", Completed); 3];
        outcomes.push(("worker", "summarize", Failed));
        outcomes.extend(vec![("fleet", "summarize", Completed); 3]);
        let hour = counters(&outcomes);
        let by_window = BTreeMap::from([(Window::LastHour, hour)]);
        let agents = [
            agent("worker", &["summarize"]),
            AgentSkills {
                routes: true,
                ..agent("fleet", &["summarize"])
            },
        ];
        let report = build(
            &by_window,
            &agents,
            &[],
            HealthPolicy::default(),
            Utc::now(),
        );
        let hour = &report.windows["1h"];
        assert_eq!(hour.agents[0].agent, "fleet");
        assert_eq!(
            hour.agents[0].stats.count, 3,
            "the routed tasks, end to end"
        );
        assert_eq!(
            hour.skills[0].stats.count, 4,
            "the skill counts the work once, where it was done"
        );
        let unhealthy_worker = build(
            &BTreeMap::from([(
                Window::LastHour,
                counters(&[("worker", "summarize", Failed); 6]),
            )]),
            &agents,
            &[],
            HealthPolicy::default(),
            Utc::now(),
        );
        assert_eq!(
            unhealthy_worker.unserved_skills[0].agents,
            ["worker"],
            "a routing agent serves no skill of its own"
        );
    }
}
