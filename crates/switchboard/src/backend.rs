//! Where state lives: the embedded store (redb, or memory) with the in-process bus, or
//! Redis shared by every replica.

use std::sync::Arc;

use sb_store::{
    DeadLetterStore, EventBus, FleetStore, LocalBus, MemoryStore, PushConfigStore, RedbStore,
    RedisBus, RedisStore, RedisWorkQueue, RegistryStore, TaskStore, WorkQueue,
};

use crate::config::Config;

/// The backend seen through each storage trait (one object in practice).
#[derive(Clone, Debug)]
pub(crate) struct Backend {
    pub tasks: Arc<dyn TaskStore>,
    pub push: Arc<dyn PushConfigStore>,
    pub dead: Arc<dyn DeadLetterStore>,
    /// The registry's agent definitions and card signing key.
    pub registry: Arc<dyn RegistryStore>,
    /// The fleet layer's counters, index, documents and claims.
    pub fleet: Arc<dyn FleetStore>,
    pub bus: Arc<dyn EventBus>,
    /// The turn queue of remote workers (Redis only).
    pub queue: Option<Arc<dyn WorkQueue>>,
    /// The embedded store, to checkpoint at a graceful shutdown.
    pub embedded: Option<Arc<RedbStore>>,
}

impl Backend {
    /// What `/healthz` watches: the embedded store's fault, when it has one (Redis
    /// outages are ridden out by reconnecting, not by restarting).
    pub(crate) fn health(&self) -> sb_gateway::Health {
        match &self.embedded {
            Some(store) => {
                let store = store.clone();
                sb_gateway::Health::watching(move || store.fault())
            }
            None => sb_gateway::Health::default(),
        }
    }

    /// Leaves the embedded store checkpointed (its journal empty), so the next start
    /// has nothing to replay. Nothing to do for memory or Redis.
    pub(crate) async fn close(&self) {
        if let Some(store) = &self.embedded {
            match store.checkpoint().await {
                Ok(()) => tracing::info!("embedded store checkpointed"),
                Err(e) => {
                    tracing::warn!(error = %e, "could not checkpoint the store; the next start replays its journal")
                }
            }
        }
    }
}

/// The backend `config` names: Redis (`backend`), memory (`memory`) or the embedded
/// store in `data_dir`.
pub(crate) async fn open(config: &Config) -> anyhow::Result<Backend> {
    if let Some(url) = &config.backend {
        let prefix = &config.redis_prefix;
        let store = Arc::new(RedisStore::connect(url, prefix).await?);
        let bus = Arc::new(RedisBus::connect(url, prefix).await?);
        let queue = Arc::new(RedisWorkQueue::connect(url, prefix).await?);
        tracing::info!(redis = %sb_store::redis::redact_url(url), prefix, "Redis backend connected");
        return Ok(Backend {
            tasks: store.clone(),
            push: store.clone(),
            dead: store.clone(),
            registry: store.clone(),
            fleet: store,
            bus,
            queue: Some(queue),
            embedded: None,
        });
    }
    let bus = Arc::new(LocalBus::new());
    if config.memory {
        let store = Arc::new(MemoryStore::new());
        return Ok(Backend {
            tasks: store.clone(),
            push: store.clone(),
            dead: store.clone(),
            registry: store.clone(),
            fleet: store,
            bus,
            queue: None,
            embedded: None,
        });
    }
    let path = config.data_dir.join("switchboard.redb");
    let store = Arc::new(RedbStore::open(&path).map_err(|e| anyhow::anyhow!("{e}"))?);
    tracing::info!(path = %path.display(), "embedded store opened");
    Ok(Backend {
        tasks: store.clone(),
        push: store.clone(),
        dead: store.clone(),
        registry: store.clone(),
        fleet: store.clone(),
        bus,
        queue: None,
        embedded: Some(store),
    })
}
