//! How often a caller reads a task it cannot stream or be pushed (seed "When Agents Need
//! to Talk"): never faster than every 2 s; after 10 consecutive working answers the
//! interval doubles, up to 30 s; an input request resets it, since the task is about to
//! move again once answered.

use std::time::Duration;

use sb_protocol::TaskState;

/// The shortest interval between two reads of a task.
pub const MIN_INTERVAL: Duration = Duration::from_secs(2);
/// The longest.
pub const MAX_INTERVAL: Duration = Duration::from_secs(30);
/// Working answers in a row before the interval starts to double.
pub const PATIENCE: u32 = 10;

/// The interval before each next read, from the answers so far.
#[derive(Clone, Debug)]
pub struct PollSchedule {
    base: Duration,
    current: Duration,
    working_in_a_row: u32,
}

impl Default for PollSchedule {
    fn default() -> Self {
        PollSchedule::new(MIN_INTERVAL)
    }
}

impl PollSchedule {
    /// A schedule starting at `base`, raised to [`MIN_INTERVAL`] if below it.
    pub fn new(base: Duration) -> PollSchedule {
        let base = base.clamp(MIN_INTERVAL, MAX_INTERVAL);
        PollSchedule {
            base,
            current: base,
            working_in_a_row: 0,
        }
    }

    /// Takes the state a read found; the wait before the next read.
    pub fn after(&mut self, state: TaskState) -> Duration {
        match state {
            TaskState::Working | TaskState::Submitted => {
                self.working_in_a_row += 1;
                if self.working_in_a_row > PATIENCE {
                    self.current = (self.current * 2).min(MAX_INTERVAL);
                }
            }
            _ => {
                self.working_in_a_row = 0;
                self.current = self.base;
            }
        }
        self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_seconds_then_doubling_after_ten_working_answers_then_reset() {
        let mut schedule = PollSchedule::new(Duration::from_millis(100));
        let waits: Vec<u64> = (0..15)
            .map(|_| schedule.after(TaskState::Working).as_secs())
            .collect();
        assert_eq!(waits, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 4, 8, 16, 30, 30]);
        assert_eq!(schedule.after(TaskState::InputRequired).as_secs(), 2);
        assert_eq!(schedule.after(TaskState::Working).as_secs(), 2);
    }
}
