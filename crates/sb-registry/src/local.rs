//! The registry over a store: what the all-in-one and the registry service run. Writes
//! are stored first, then served; every replica sharing the store (Redis) hears of
//! each change and serves it too.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use sb_store::RegistryStore;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::definition::AgentDefinition;
use crate::fleet::{CardRegistry, Fleet, LiveRegistry};
use crate::maker::CardMaker;
use crate::registration::{Registration, Source};
use crate::service::{Put, RegistryError, RegistryService};
use crate::upstream::UpstreamCard;

#[derive(Debug)]
pub struct LocalRegistry {
    store: Arc<dyn RegistryStore>,
    maker: CardMaker,
    live: Arc<LiveRegistry>,
    default_agent: Option<String>,
    /// Every registration, removed ones included; held while writing, so this
    /// process's writes apply one at a time.
    registrations: Mutex<BTreeMap<String, Registration>>,
}

fn unavailable(e: impl std::fmt::Display) -> RegistryError {
    RegistryError::Unavailable(format!("the registry's store is unavailable: {e}"))
}

async fn load(store: &dyn RegistryStore) -> Result<BTreeMap<String, Registration>, RegistryError> {
    let mut registrations = BTreeMap::new();
    for (name, bytes) in store.list_agents().await.map_err(unavailable)? {
        match serde_json::from_slice::<Registration>(&bytes) {
            Ok(registration) => {
                registrations.insert(name, registration);
            }
            Err(e) => {
                tracing::error!(agent = %name, error = %e, "a stored registration cannot be read; leaving it out");
            }
        }
    }
    Ok(registrations)
}

async fn save(store: &dyn RegistryStore, registration: &Registration) -> Result<(), RegistryError> {
    let bytes = serde_json::to_vec(registration).map_err(unavailable)?;
    store
        .put_agent(registration.name(), bytes)
        .await
        .map_err(unavailable)
}

impl LocalRegistry {
    /// The registry of `store`, with the configuration file's agents registered: a
    /// stored definition the file changes is replaced (the file wins, said in the log),
    /// and an agent that came from the file and is no longer in it is removed.
    pub async fn open(
        store: Arc<dyn RegistryStore>,
        maker: CardMaker,
        configured: &[AgentDefinition],
        default_agent: Option<String>,
    ) -> Result<LocalRegistry, RegistryError> {
        let mut registrations = load(&*store).await?;
        for definition in configured {
            let upstream = registrations
                .get(&definition.name)
                .and_then(|r| r.upstream_for(definition));
            let version = maker.describe(definition, upstream)?.version;
            let next = match registrations.get(&definition.name) {
                None => Some(Registration::new(
                    definition.clone(),
                    Source::Config,
                    version,
                )),
                Some(stored) => {
                    if stored.definition != *definition && stored.source != Source::Config {
                        tracing::warn!(
                            agent = %definition.name,
                            registered_by = ?stored.source,
                            changed_at = %stored.changed_at,
                            "the configuration file defines this agent differently from its registration; the file wins"
                        );
                    }
                    stored.replaced_by(definition.clone(), Source::Config, version)
                }
            };
            if let Some(next) = next {
                save(&*store, &next).await?;
                registrations.insert(next.name().to_owned(), next);
            }
        }
        let dropped: Vec<Registration> = registrations
            .values()
            .filter(|r| r.source == Source::Config && r.removed_at.is_none())
            .filter(|r| !configured.iter().any(|d| d.name == r.name()))
            .map(Registration::removed)
            .collect();
        for registration in dropped {
            tracing::info!(
                agent = registration.name(),
                "removed: no longer in the configuration file"
            );
            save(&*store, &registration).await?;
            registrations.insert(registration.name().to_owned(), registration);
        }
        let fleet = maker.fleet(
            registrations.values().cloned(),
            default_agent.as_deref(),
            &Fleet::default(),
        );
        Ok(LocalRegistry {
            store,
            maker,
            live: Arc::new(LiveRegistry::new(fleet)),
            default_agent,
            registrations: Mutex::new(registrations),
        })
    }

    /// What the gateway reads cards from, and followers follow.
    pub fn live(&self) -> Arc<LiveRegistry> {
        self.live.clone()
    }

    fn publish(&self, registrations: &BTreeMap<String, Registration>) {
        let fleet = self.maker.fleet(
            registrations.values().cloned(),
            self.default_agent.as_deref(),
            &self.live.fleet(),
        );
        self.live.replace(fleet);
    }

    /// Keeps what a fetch of a bridged agent's upstream card found: its card follows
    /// an accepted card, and a change of content is a new version in its history, with
    /// what drifted. Returns the drift (empty when the card's content is the same).
    pub async fn observe_upstream(
        &self,
        name: &str,
        upstream: UpstreamCard,
    ) -> Result<Vec<String>, RegistryError> {
        let mut registrations = self.registrations.lock().await;
        let Some(current) = registrations.get(name).filter(|r| r.removed_at.is_none()) else {
            return Err(RegistryError::NotFound(format!(
                "no agent \"{name}\" is registered"
            )));
        };
        let drift = match &current.upstream {
            Some(before) => before.drift(&upstream),
            None => Vec::new(),
        };
        let version = self
            .maker
            .describe(&current.definition, Some(&upstream))?
            .version;
        let note = (!drift.is_empty()).then(|| drift.join("; "));
        let Some(next) = current.with_upstream(upstream, version, note) else {
            return Ok(drift);
        };
        save(&*self.store, &next).await?;
        registrations.insert(name.to_owned(), next);
        // Published even when refused: the registry entry says why.
        self.publish(&registrations);
        Ok(drift)
    }

    /// Reads every registration again from the store (another replica changed some).
    pub async fn reload(&self) -> Result<(), RegistryError> {
        let mut registrations = self.registrations.lock().await;
        *registrations = load(&*self.store).await?;
        self.publish(&registrations);
        Ok(())
    }

    /// Follows the changes other replicas make to the store until `stop` (await the
    /// handle to know the store is no longer used).
    pub fn spawn_follow_store(self: &Arc<Self>, stop: CancellationToken) -> JoinHandle<()> {
        let registry = self.clone();
        tokio::spawn(async move {
            let mut changes = match registry.store.watch_agents().await {
                Ok(changes) => changes,
                Err(e) => {
                    tracing::error!(error = %e, "cannot follow the registry's changes; this replica serves what it has");
                    return;
                }
            };
            loop {
                let changed = tokio::select! {
                    () = stop.cancelled() => return,
                    changed = changes.recv() => changed,
                };
                if let Err(tokio::sync::broadcast::error::RecvError::Closed) = changed {
                    return;
                }
                // A lagging receiver missed some names: reloading covers them all.
                if let Err(e) = registry.reload().await {
                    tracing::warn!(error = %e, "could not reload the registry after a change");
                }
            }
        })
    }
}

#[async_trait]
impl RegistryService for LocalRegistry {
    async fn put(&self, definition: AgentDefinition, source: Source) -> Result<Put, RegistryError> {
        let name = definition.name.clone();
        let mut registrations = self.registrations.lock().await;
        let upstream = registrations
            .get(&name)
            .and_then(|r| r.upstream_for(&definition));
        let version = self.maker.describe(&definition, upstream)?.version;
        let created = registrations
            .get(&name)
            .is_none_or(|r| r.removed_at.is_some());
        let next = match registrations.get(&name) {
            Some(stored) if stored.removed_at.is_none() && !source.may_replace(stored.source) => {
                if stored.definition != definition {
                    tracing::warn!(
                        agent = %name,
                        registered_by = ?stored.source,
                        "a worker announced a definition that differs from the registered one; the registered one stays"
                    );
                }
                None
            }
            Some(stored) => stored.replaced_by(definition, source, version),
            None => Some(Registration::new(definition, source, version)),
        };
        let changed = next.is_some();
        if let Some(next) = next {
            save(&*self.store, &next).await?;
            registrations.insert(name.clone(), next);
            self.publish(&registrations);
        }
        let agent = self.live.fleet().agent(&name).cloned().ok_or_else(|| {
            RegistryError::Unavailable(format!(
                "agent \"{name}\" was registered but cannot be served"
            ))
        })?;
        Ok(Put {
            created,
            changed,
            agent,
        })
    }

    async fn remove(&self, name: &str) -> Result<(), RegistryError> {
        let mut registrations = self.registrations.lock().await;
        let removed = match registrations.get(name) {
            Some(registration) if registration.removed_at.is_none() => registration.removed(),
            _ => {
                return Err(RegistryError::NotFound(format!(
                    "no agent \"{name}\" is registered"
                )));
            }
        };
        save(&*self.store, &removed).await?;
        registrations.insert(name.to_owned(), removed);
        self.publish(&registrations);
        Ok(())
    }

    fn fleet(&self) -> Arc<Fleet> {
        self.live.fleet()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::card::{CardDefaults, CardSettings};
    use crate::definition::AgentKind;
    use crate::service::Admission;
    use crate::validate::FieldError;
    use sb_store::MemoryStore;

    #[derive(Debug)]
    struct Anything;

    impl Admission for Anything {
        fn admit(&self, _: &AgentDefinition) -> Result<CardDefaults, FieldError> {
            Ok(CardDefaults::default())
        }
    }

    fn maker() -> CardMaker {
        CardMaker {
            settings: CardSettings {
                public_url: "http://sb.test".into(),
                ..Default::default()
            },
            admission: Arc::new(Anything),
            signer: None,
        }
    }

    fn described(name: &str, description: &str) -> AgentDefinition {
        let mut definition = AgentDefinition::new(name, AgentKind::Worker);
        definition.description = Some(description.into());
        definition
    }

    async fn open(store: &Arc<MemoryStore>, file: &[AgentDefinition]) -> LocalRegistry {
        LocalRegistry::open(store.clone(), maker(), file, None)
            .await
            .unwrap()
    }

    fn description(registry: &LocalRegistry, name: &str) -> String {
        let fleet = registry.fleet();
        fleet.card(name).unwrap().card.description.clone()
    }

    #[tokio::test]
    async fn a_workers_announcement_never_replaces_an_operators_definition() {
        let store = Arc::new(MemoryStore::new());
        let registry = open(&store, &[described("filed", "from the file")]).await;
        registry
            .put(described("put", "from the API"), Source::Api)
            .await
            .unwrap();
        for name in ["filed", "put"] {
            let put = registry
                .put(described(name, "from a worker"), Source::Worker)
                .await
                .unwrap();
            assert!(!put.changed && !put.created, "{name}");
            assert_ne!(description(&registry, name), "from a worker");
        }
        let first = registry
            .put(described("own", "announced"), Source::Worker)
            .await
            .unwrap();
        assert!(first.created);
        let again = registry
            .put(described("own", "announced again"), Source::Worker)
            .await
            .unwrap();
        assert!(again.changed && !again.created);
        assert_eq!(description(&registry, "own"), "announced again");
    }

    #[tokio::test]
    async fn at_start_the_file_wins_and_what_left_it_is_removed() {
        let store = Arc::new(MemoryStore::new());
        let registry = open(
            &store,
            &[described("a", "file 1"), described("b", "file 1")],
        )
        .await;
        registry
            .put(described("a", "changed at runtime"), Source::Api)
            .await
            .unwrap();
        registry
            .put(described("c", "registered at runtime"), Source::Api)
            .await
            .unwrap();
        drop(registry);
        let registry = open(&store, &[described("a", "file 2")]).await;
        assert_eq!(description(&registry, "a"), "file 2");
        assert_eq!(description(&registry, "c"), "registered at runtime");
        let fleet = registry.fleet();
        assert!(fleet.card("b").is_none(), "b left the file");
        assert!(fleet.removed.contains_key("b"), "its tasks stay readable");
        let history = &fleet.agent("a").unwrap().registration.history;
        assert_eq!(history.len(), 3, "file 1, runtime, file 2: {history:?}");
    }

    #[tokio::test]
    async fn a_removed_agent_comes_back_when_registered_again() {
        let store = Arc::new(MemoryStore::new());
        let registry = open(&store, &[]).await;
        registry
            .put(described("a", "one"), Source::Api)
            .await
            .unwrap();
        registry.remove("a").await.unwrap();
        assert!(matches!(
            registry.remove("a").await,
            Err(RegistryError::NotFound(_))
        ));
        let back = registry
            .put(described("a", "one"), Source::Api)
            .await
            .unwrap();
        assert!(back.created, "registered again after its removal");
        assert!(registry.fleet().removed.is_empty());
    }

    fn serving(name: &str, skills: &[&str]) -> AgentDefinition {
        let mut definition = AgentDefinition::new(name, AgentKind::Worker);
        definition.skills = Some(
            skills
                .iter()
                .map(|id| crate::definition::SkillDefinition {
                    id: (*id).into(),
                    name: None,
                    description: format!("does {id}"),
                    tags: Vec::new(),
                    examples: Vec::new(),
                    input_modes: Vec::new(),
                    output_modes: Vec::new(),
                })
                .collect(),
        );
        definition
    }

    #[tokio::test]
    async fn a_routing_agents_card_lists_the_fleets_skills_as_the_fleet_changes() {
        let store = Arc::new(MemoryStore::new());
        let file = [
            AgentDefinition::new("fleet", AgentKind::Router),
            serving("a", &["summarize"]),
            serving("b", &["summarize", "translate"]),
        ];
        let registry = open(&store, &file).await;
        let skills = |registry: &LocalRegistry| -> Vec<(String, String)> {
            let card = registry.fleet().card("fleet").unwrap();
            card.card
                .skills
                .iter()
                .map(|s| (s.id.clone(), s.description.clone()))
                .collect()
        };
        assert_eq!(
            skills(&registry),
            [
                (
                    "summarize".into(),
                    "does summarize (Served by a, b.)".into()
                ),
                ("translate".into(), "does translate (Served by b.)".into()),
            ]
        );
        registry
            .put(serving("c", &["classify"]), Source::Api)
            .await
            .unwrap();
        registry.remove("b").await.unwrap();
        assert_eq!(
            skills(&registry),
            [
                ("classify".into(), "does classify (Served by c.)".into()),
                ("summarize".into(), "does summarize (Served by a.)".into()),
            ],
            "an agent joining or leaving changes the routing agent's card"
        );
    }
}
