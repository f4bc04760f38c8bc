//! The fleet as one process serves it: every registered agent with its rendered card,
//! the agents removed (their tasks stay readable), and the root's default agent. A
//! [`LiveRegistry`] holds the current [`Fleet`] and swaps in a new one on every change:
//! requests read it without a lock, followers (the agent host, the authenticators)
//! are woken to rebuild what they derive from it.

use std::collections::BTreeMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio::sync::watch;

use crate::entry::CardEntry;
use crate::registration::Registration;

/// One registered agent and its card at `/agents/{name}`.
#[derive(Debug)]
pub struct ServedAgent {
    pub registration: Registration,
    pub entry: Arc<CardEntry>,
}

/// Every agent one process knows of, at one moment.
#[derive(Debug, Default)]
pub struct Fleet {
    /// Registered agents by name.
    pub agents: BTreeMap<String, Arc<ServedAgent>>,
    /// Agents removed from the registry: no new messages, but their tasks stay
    /// readable by their owners (who authenticate as the agent did).
    pub removed: BTreeMap<String, Arc<Registration>>,
    /// The default agent's card with root URLs, when it is registered.
    pub root: Option<Arc<CardEntry>>,
    /// The agent the root serves.
    pub default_agent: Option<String>,
    /// The public keys the cards are signed with (a JWKS document), when they are.
    pub jwks: Option<serde_json::Value>,
}

impl Fleet {
    pub fn agent(&self, name: &str) -> Option<&Arc<ServedAgent>> {
        self.agents.get(name)
    }

    pub fn card(&self, name: &str) -> Option<Arc<CardEntry>> {
        self.agents.get(name).map(|a| a.entry.clone())
    }

    /// The registration of a registered or removed agent: what a task of it is read with.
    pub fn registration(&self, name: &str) -> Option<&Registration> {
        match self.agents.get(name) {
            Some(agent) => Some(&agent.registration),
            None => self.removed.get(name).map(|r| &**r),
        }
    }

    /// The default agent, when it is registered.
    pub fn default_agent(&self) -> Option<&str> {
        self.default_agent
            .as_deref()
            .filter(|name| self.agents.contains_key(*name))
    }
}

/// Where the gateway reads cards: the fleet as this process last heard of it.
pub trait CardRegistry: Send + Sync + std::fmt::Debug + 'static {
    fn fleet(&self) -> Arc<Fleet>;
}

/// The current fleet, swapped whole on each change.
#[derive(Debug)]
pub struct LiveRegistry {
    current: ArcSwap<Fleet>,
    changes: watch::Sender<Arc<Fleet>>,
}

impl LiveRegistry {
    pub fn new(fleet: Fleet) -> LiveRegistry {
        let fleet = Arc::new(fleet);
        LiveRegistry {
            current: ArcSwap::new(fleet.clone()),
            changes: watch::Sender::new(fleet),
        }
    }

    /// Serves `fleet` from now on and wakes every follower.
    pub fn replace(&self, fleet: Fleet) {
        let fleet = Arc::new(fleet);
        self.current.store(fleet.clone());
        self.changes.send_replace(fleet);
    }

    /// The fleet now, and each one after it (a slow follower sees the latest only).
    pub fn follow(&self) -> watch::Receiver<Arc<Fleet>> {
        self.changes.subscribe()
    }
}

impl CardRegistry for LiveRegistry {
    fn fleet(&self) -> Arc<Fleet> {
        self.current.load_full()
    }
}

/// A fleet as the registry service sends it to gateways: registrations and their cards
/// as made (and signed) there; each gateway renders them the same way, so every
/// replica serves the same bytes and ETags.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
pub struct FleetWire {
    pub agents: Vec<ServedWire>,
    pub removed: Vec<Registration>,
    pub root: Option<sb_protocol::card::AgentCard>,
    pub default_agent: Option<String>,
    #[serde(default)]
    pub jwks: Option<serde_json::Value>,
}

/// One registered agent on the wire.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
pub struct ServedWire {
    pub registration: Registration,
    pub card: sb_protocol::card::AgentCard,
}

impl ServedAgent {
    pub fn to_wire(&self) -> ServedWire {
        ServedWire {
            registration: self.registration.clone(),
            card: self.entry.card.clone(),
        }
    }

    pub fn from_wire(wire: ServedWire) -> ServedAgent {
        let merged = wire.registration.definition.card == crate::definition::CardForm::Merged;
        let entry = CardEntry::new(wire.card, merged, wire.registration.changed_at);
        ServedAgent {
            registration: wire.registration,
            entry: Arc::new(entry),
        }
    }
}

impl Fleet {
    pub fn to_wire(&self) -> FleetWire {
        FleetWire {
            agents: self.agents.values().map(|a| a.to_wire()).collect(),
            removed: self.removed.values().map(|r| (**r).clone()).collect(),
            root: self.root.as_ref().map(|r| r.card.clone()),
            default_agent: self.default_agent.clone(),
            jwks: self.jwks.clone(),
        }
    }

    /// The fleet `wire` describes, reusing what `previous` already served unchanged.
    pub fn from_wire(wire: FleetWire, previous: &Fleet) -> Fleet {
        let agents: BTreeMap<String, Arc<ServedAgent>> = wire
            .agents
            .into_iter()
            .map(|served| {
                let name = served.registration.name().to_owned();
                let agent = match previous.agents.get(&name) {
                    Some(known)
                        if known.registration == served.registration
                            && known.entry.card == served.card =>
                    {
                        known.clone()
                    }
                    _ => Arc::new(ServedAgent::from_wire(served)),
                };
                (name, agent)
            })
            .collect();
        let root = wire.root.map(|card| {
            let at = wire
                .default_agent
                .as_deref()
                .and_then(|name| agents.get(name))
                .map_or_else(chrono::Utc::now, |a| a.registration.changed_at);
            match &previous.root {
                Some(known) if known.card == card => known.clone(),
                _ => Arc::new(CardEntry::new(card, true, at)),
            }
        });
        Fleet {
            agents,
            removed: wire
                .removed
                .into_iter()
                .map(|r| (r.name().to_owned(), Arc::new(r)))
                .collect(),
            root,
            default_agent: wire.default_agent,
            jwks: wire.jwks,
        }
    }
}
