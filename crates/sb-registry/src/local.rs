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
            let version = maker.describe(definition)?.version;
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

    pub fn maker(&self) -> &CardMaker {
        &self.maker
    }

    fn publish(&self, registrations: &BTreeMap<String, Registration>) {
        let fleet = self.maker.fleet(
            registrations.values().cloned(),
            self.default_agent.as_deref(),
            &self.live.fleet(),
        );
        self.live.replace(fleet);
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
        let version = self.maker.describe(&definition)?.version;
        let name = definition.name.clone();
        let mut registrations = self.registrations.lock().await;
        let existing = registrations.get(&name).filter(|r| r.removed_at.is_none());
        let created = existing.is_none();
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
