//! A turn's end on the wire: how a worker reports [`TurnEnd`] in its `TurnDone`, and how
//! the hub reads it back. The worker protocol carries whether the agent chose its task's
//! state and, if not, the agent's error text (empty when it simply returned); workers in
//! other languages send the same two fields.

use sb_agent::turn::{DID_NOT_STOP, TurnEnd};

use crate::pb;

/// The `TurnDone` of a turn that ended so.
pub(super) fn report(assignment_id: String, end: &TurnEnd) -> pb::TurnDone {
    let (settled_by_agent, error) = match end {
        TurnEnd::Chosen => (true, String::new()),
        TurnEnd::WithoutAState => (false, String::new()),
        TurnEnd::Failed(error) => (false, error.clone()),
        TurnEnd::DidNotStop => (false, DID_NOT_STOP.to_owned()),
    };
    pb::TurnDone {
        task_id: String::new(),
        assignment_id,
        settled_by_agent,
        error,
    }
}

/// How the turn a `TurnDone` reports ended.
pub(super) fn read(done: &pb::TurnDone) -> TurnEnd {
    match (done.settled_by_agent, done.error.as_str()) {
        (true, _) => TurnEnd::Chosen,
        (false, "") => TurnEnd::WithoutAState,
        (false, DID_NOT_STOP) => TurnEnd::DidNotStop,
        (false, error) => TurnEnd::Failed(error.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_end_reads_back_as_it_was_reported() {
        for end in [
            TurnEnd::Chosen,
            TurnEnd::WithoutAState,
            TurnEnd::Failed("the model is down".into()),
            TurnEnd::DidNotStop,
        ] {
            assert_eq!(read(&report("a1".into(), &end)), end);
        }
    }
}
