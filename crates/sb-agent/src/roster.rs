//! The agents a process serves, by name, with their code where this process has it
//! (the gateway of the split deployment knows agents whose code runs on workers only).
//! The registry can change them at any time, so the set is replaced whole: readers take
//! a snapshot without a lock, and a turn keeps the code it started with.

use std::collections::BTreeMap;
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::Agent;

/// An agent's code, or `None` where it runs elsewhere.
pub type Code = Option<Arc<dyn Agent>>;

#[derive(Debug, Default)]
pub struct Roster(ArcSwap<BTreeMap<String, Code>>);

impl Roster {
    pub fn new(agents: BTreeMap<String, Code>) -> Roster {
        Roster(ArcSwap::from_pointee(agents))
    }

    /// Agents whose code runs here.
    pub fn with_code(agents: BTreeMap<String, Arc<dyn Agent>>) -> Roster {
        Roster::new(agents.into_iter().map(|(k, v)| (k, Some(v))).collect())
    }

    pub fn serves(&self, name: &str) -> bool {
        self.0.load().contains_key(name)
    }

    /// The agent's code, when it is served and runs here.
    pub fn code(&self, name: &str) -> Option<Arc<dyn Agent>> {
        self.0.load().get(name).cloned().flatten()
    }

    pub fn names(&self) -> Vec<String> {
        self.0.load().keys().cloned().collect()
    }

    /// Serves `agents` from now on (turns already running keep their code).
    pub fn replace(&self, agents: BTreeMap<String, Code>) {
        self.0.store(Arc::new(agents));
    }
}
