//! The id a turn is handed to a worker under. A turn is its queue entry, whose id is
//! unique only within its agent's queue (two agents' queues give out the same id for
//! turns queued in the same millisecond), so the assignment id names the agent too: a
//! worker running turns of several agents tells them apart, and the task-state service
//! finds the entry whose lease fences the worker's updates.

/// The assignment id of entry `entry_id` of `agent`'s queue.
pub fn assignment_id(agent: &str, entry_id: &str) -> String {
    format!("{agent}/{entry_id}")
}

/// The queue entry an assignment id names, when it is one of `agent`'s.
pub fn entry_of<'a>(assignment_id: &'a str, agent: &str) -> Option<&'a str> {
    assignment_id.strip_prefix(agent)?.strip_prefix('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_entry_of_two_agents_is_two_assignments() {
        let echo = assignment_id("echo", "1764180436367-0");
        let consolidate = assignment_id("consolidate", "1764180436367-0");
        assert_ne!(echo, consolidate);
        assert_eq!(entry_of(&echo, "echo"), Some("1764180436367-0"));
        assert_eq!(entry_of(&echo, "consolidate"), None);
        assert_eq!(entry_of(&echo, "ech"), None);
        assert_eq!(entry_of("1764180436367-0", "echo"), None);
    }
}
