//! [`Tally`]: the outcomes of one agent and skill summed — counts by how they ended, the
//! duration histogram of the completed ones, cost, failure reasons — and how a tally is
//! written as counters of a bucket (one field per number, so replicas add to the same
//! bucket with atomic increments) and read back.

use std::collections::BTreeMap;

use sb_protocol::TaskState;

use crate::outcome::Outcome;

/// Upper bounds of the duration histogram's buckets, in milliseconds; one more bucket
/// holds the longer durations. Quantiles are known to within their bucket.
pub const DURATION_BOUNDS_MS: [u64; 16] = [
    5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000,
    3_600_000,
];

const HISTOGRAM_LEN: usize = DURATION_BOUNDS_MS.len() + 1;

/// Most distinct failure reasons one tally keeps; the rest are counted under
/// [`OTHER_REASONS`], so an agent whose every error message differs cannot grow a bucket
/// without bound.
const MAX_REASONS: usize = 20;
pub const OTHER_REASONS: &str = "(other reasons)";

/// Separates agent, skill and number in a counter field; never in any of them.
const SEP: char = '\u{1f}';

/// The terminal states counted, in the order reports list them.
pub const ENDINGS: [TaskState; 4] = [
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::Rejected,
];

/// Summed outcomes of one agent and skill.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// Outcomes by terminal state (as in [`ENDINGS`]).
    pub ended: [u64; 4],
    /// Completed outcomes by duration bucket ([`DURATION_BOUNDS_MS`]).
    pub histogram: [u64; HISTOGRAM_LEN],
    /// Sum of the completed outcomes' durations.
    pub completed_ms: u64,
    /// Sum of reported costs, in millionths of a dollar.
    pub cost_micro_usd: u64,
    /// How many outcomes reported a cost.
    pub costed: u64,
    /// Unsuccessful outcomes by (state, reason).
    pub reasons: BTreeMap<(TaskState, String), u64>,
}

fn ending_index(state: TaskState) -> Option<usize> {
    ENDINGS.iter().position(|s| *s == state)
}

/// The histogram bucket of a duration.
pub fn duration_bucket(ms: u64) -> usize {
    DURATION_BOUNDS_MS
        .iter()
        .position(|bound| ms <= *bound)
        .unwrap_or(DURATION_BOUNDS_MS.len())
}

impl Tally {
    pub fn add(&mut self, outcome: &Outcome) {
        let Some(index) = ending_index(outcome.state) else {
            return;
        };
        self.ended[index] += 1;
        if outcome.state == TaskState::Completed {
            self.histogram[duration_bucket(outcome.duration_ms)] += 1;
            self.completed_ms += outcome.duration_ms;
        }
        if let Some(usd) = outcome.cost_usd {
            self.cost_micro_usd += (usd * 1e6).round() as u64;
            self.costed += 1;
        }
        if let Some(reason) = &outcome.reason {
            self.count_reason(outcome.state, reason, 1);
        }
    }

    fn count_reason(&mut self, state: TaskState, reason: &str, count: u64) {
        let mut key = (state, reason.to_owned());
        if !self.reasons.contains_key(&key) && self.reasons.len() >= MAX_REASONS {
            key.1 = OTHER_REASONS.to_owned();
        }
        *self.reasons.entry(key).or_default() += count;
    }

    pub fn merge(&mut self, other: &Tally) {
        for (mine, theirs) in self.ended.iter_mut().zip(other.ended) {
            *mine += theirs;
        }
        for (mine, theirs) in self.histogram.iter_mut().zip(other.histogram) {
            *mine += theirs;
        }
        self.completed_ms += other.completed_ms;
        self.cost_micro_usd += other.cost_micro_usd;
        self.costed += other.costed;
        for ((state, reason), count) in &other.reasons {
            self.count_reason(*state, reason, *count);
        }
    }

    pub fn count(&self) -> u64 {
        self.ended.iter().sum()
    }

    pub fn of_state(&self, state: TaskState) -> u64 {
        ending_index(state).map_or(0, |i| self.ended[i])
    }

    /// Completed share of the outcomes; `None` without any.
    pub fn success_rate(&self) -> Option<f64> {
        let count = self.count();
        (count > 0).then(|| self.of_state(TaskState::Completed) as f64 / count as f64)
    }

    /// The `q` quantile of the completed durations, interpolated within its histogram
    /// bucket (as Prometheus' `histogram_quantile`); `None` without any.
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        let total: u64 = self.histogram.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total as f64;
        let mut below = 0u64;
        for (index, count) in self.histogram.iter().enumerate() {
            if *count == 0 || ((below + count) as f64) < rank {
                below += count;
                continue;
            }
            let lower = index.checked_sub(1).map_or(0, |i| DURATION_BOUNDS_MS[i]) as f64;
            let Some(upper) = DURATION_BOUNDS_MS.get(index) else {
                return Some(lower);
            };
            let within = (rank - below as f64) / *count as f64;
            return Some(lower + (*upper as f64 - lower) * within);
        }
        None
    }

    /// The tally as counter increments of a bucket (only the numbers that are not 0).
    pub fn deltas(&self, agent: &str, skill: &str) -> Vec<(String, i64)> {
        let field = |number: &str| format!("{agent}{SEP}{skill}{SEP}{number}");
        let mut deltas = Vec::new();
        let mut put = |number: String, value: u64| {
            if value > 0 {
                deltas.push((field(&number), value as i64));
            }
        };
        for (state, count) in ENDINGS.iter().zip(self.ended) {
            put(format!("n.{}", state.as_v03_str()), count);
        }
        for (index, count) in self.histogram.iter().enumerate() {
            put(format!("h.{index}"), *count);
        }
        put("ms".into(), self.completed_ms);
        put("usd".into(), self.cost_micro_usd);
        put("usd.n".into(), self.costed);
        for ((state, reason), count) in &self.reasons {
            put(format!("r.{}.{reason}", state.as_v03_str()), *count);
        }
        deltas
    }

    /// Adds one counter field of a bucket (as [`Tally::deltas`] wrote it) to the tally
    /// of its agent and skill in `tallies`. A field this version does not know is
    /// skipped: a newer replica may count more.
    pub fn absorb(tallies: &mut BTreeMap<(String, String), Tally>, field: &str, value: i64) {
        let mut pieces = field.splitn(3, SEP);
        let (Some(agent), Some(skill), Some(number)) =
            (pieces.next(), pieces.next(), pieces.next())
        else {
            return;
        };
        let value = value.max(0) as u64;
        let tally = tallies
            .entry((agent.to_owned(), skill.to_owned()))
            .or_default();
        let state_named = |name: &str| TaskState::parse(name).and_then(ending_index);
        match number.split_once('.') {
            Some(("n", state)) => {
                if let Some(index) = state_named(state) {
                    tally.ended[index] += value;
                }
            }
            Some(("h", index)) => {
                if let Some(slot) = index
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| tally.histogram.get_mut(i))
                {
                    *slot += value;
                }
            }
            Some(("usd", "n")) => tally.costed += value,
            Some(("r", rest)) => {
                if let Some((state, reason)) = rest.split_once('.')
                    && let Some(state) = TaskState::parse(state)
                {
                    tally.count_reason(state, reason, value);
                }
            }
            _ => match number {
                "ms" => tally.completed_ms += value,
                "usd" => tally.cost_micro_usd += value,
                _ => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(state: TaskState, ms: u64, reason: Option<&str>, usd: Option<f64>) -> Outcome {
        Outcome {
            agent: "a".into(),
            skill: "s".into(),
            state,
            reason: reason.map(str::to_owned),
            duration_ms: ms,
            cost_usd: usd,
        }
    }

    #[test]
    fn a_tally_written_as_counters_reads_back_the_same() {
        let mut tally = Tally::default();
        tally.add(&outcome(TaskState::Completed, 40, None, Some(0.25)));
        tally.add(&outcome(TaskState::Completed, 700, None, None));
        tally.add(&outcome(
            TaskState::Failed,
            3,
            Some("boom. twice"),
            Some(0.01),
        ));
        tally.add(&outcome(TaskState::Rejected, 1, Some("too deep"), None));
        let mut read = BTreeMap::new();
        for (field, value) in tally.deltas("writer", "sum.marize") {
            Tally::absorb(&mut read, &field, value);
        }
        assert_eq!(read.len(), 1);
        assert_eq!(read[&("writer".to_owned(), "sum.marize".to_owned())], tally);
        assert_eq!(tally.count(), 4);
        assert_eq!(tally.success_rate(), Some(0.5));
        assert_eq!(tally.cost_micro_usd, 260_000);
    }

    #[test]
    fn quantiles_fall_in_the_bucket_of_the_true_value() {
        let mut tally = Tally::default();
        let durations: Vec<u64> = (1..=100).map(|i| i * 37).collect();
        for ms in &durations {
            tally.add(&outcome(TaskState::Completed, *ms, None, None));
        }
        for (q, true_value) in [(0.5, durations[49]), (0.95, durations[94])] {
            let estimate = tally.quantile_ms(q).unwrap();
            assert_eq!(
                duration_bucket(estimate.ceil() as u64),
                duration_bucket(true_value),
                "q{q}: {estimate} vs {true_value}"
            );
        }
        assert_eq!(Tally::default().quantile_ms(0.5), None);
    }

    #[test]
    fn reasons_beyond_the_cap_are_counted_together() {
        let mut tally = Tally::default();
        for i in 0..30 {
            tally.add(&outcome(
                TaskState::Failed,
                1,
                Some(&format!("error {i}")),
                None,
            ));
        }
        assert_eq!(tally.reasons.len(), MAX_REASONS + 1);
        let other = (TaskState::Failed, OTHER_REASONS.to_owned());
        assert_eq!(tally.reasons[&other], 10);
        assert_eq!(tally.reasons.values().sum::<u64>(), 30);
    }
}
