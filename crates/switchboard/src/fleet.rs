//! The registry in a deployment: its store, its cards (signed with the configured key,
//! or with the one kept in the store), its HTTP API, and the follower that keeps what a
//! process derives from the fleet (which agents run here, how each authenticates) in
//! step with every change.

use std::collections::BTreeMap;
use std::sync::Arc;

use sb_agent::Roster;
use sb_gateway::auth::{AgentAuth, Authenticators, Credential};
use sb_registry::http::{Precheck, WriteGuard};
use sb_registry::signing::{CardSigner, SigningAlgorithm};
use sb_registry::{
    CardMaker, CardSettings, FieldError, Fleet, LiveRegistry, LocalRegistry, RegistryService,
};
use sb_store::RegistryStore;
use sb_webhooks::signing::SigningSecrets;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::agents::{Kinds, build_auth, resume_extension, shared_tokens};
use crate::backend::Backend;
use crate::config::Config;

/// The signer of this deployment's cards: the configured key, or the store's (generated
/// at the first start, so every replica signs with the same key); none when unsigned.
pub(crate) async fn card_signer(
    config: &Config,
    store: &dyn RegistryStore,
) -> anyhow::Result<Option<CardSigner>> {
    if config.unsigned_cards {
        return Ok(None);
    }
    if let Some(path) = &config.card_signing_key {
        let pem = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("card_signing_key {}: {e}", path.display()))?;
        let signer = CardSigner::from_pem(&pem, None)
            .map_err(|e| anyhow::anyhow!("card_signing_key {}: {e}", path.display()))?;
        return Ok(Some(signer));
    }
    let (_, generated) = CardSigner::generate(SigningAlgorithm::Es256)?;
    let stored = store
        .signing_key(generated.into_bytes())
        .await
        .map_err(|e| anyhow::anyhow!("could not read the card signing key from the store: {e}"))?;
    let pem = String::from_utf8(stored)
        .map_err(|_| anyhow::anyhow!("the card signing key in the store is not PEM text"))?;
    let signer = CardSigner::from_pem(&pem, None)
        .map_err(|e| anyhow::anyhow!("the card signing key in the store: {e}"))?;
    Ok(Some(signer))
}

/// The registry over the backend's store, with the configuration file's agents
/// registered, following the changes other replicas make to the store until `stop` (the
/// handle ends when it no longer uses the store).
pub(crate) async fn open_registry(
    config: &Config,
    backend: &Backend,
    kinds: Kinds,
    stop: &CancellationToken,
) -> anyhow::Result<(Arc<LocalRegistry>, JoinHandle<()>)> {
    let signer = card_signer(config, &*backend.registry).await?;
    let maker = card_maker(config, kinds, signer);
    let registry = LocalRegistry::open(
        backend.registry.clone(),
        maker,
        &config.registered_agents(),
        config.default_agent.clone(),
    )
    .await
    .map_err(|e| anyhow::anyhow!("registry: {e}"))?;
    let registry = Arc::new(registry);
    let following = registry.spawn_follow_store(stop.clone());
    Ok((registry, following))
}

/// Calls `apply` with each fleet `changes` sees from now on, until `stop` (a slow
/// `apply` sees the latest fleet only). Take the current one from `changes` first, so
/// no change falls between the two.
fn on_each_change<F, Fut>(
    mut changes: watch::Receiver<Arc<Fleet>>,
    stop: &CancellationToken,
    mut apply: F,
) where
    F: FnMut(Arc<Fleet>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let stop = stop.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                changed = changes.changed() => if changed.is_err() { return },
            }
            let fleet = changes.borrow_and_update().clone();
            apply(fleet).await;
        }
    });
}

/// What makes this deployment's cards.
pub(crate) fn card_maker(config: &Config, kinds: Kinds, signer: Option<CardSigner>) -> CardMaker {
    // Memory is the only store that forgets events on restart.
    let durable = !(config.memory && config.backend.is_none());
    CardMaker {
        settings: CardSettings {
            public_url: config.public_url(),
            shared_bearer: !config.auth_tokens.is_empty(),
            extensions: vec![resume_extension(durable)],
        },
        admission: Arc::new(kinds),
        signer,
    }
}

/// The registry's routes: reads for everyone, writes with the admin token.
pub(crate) fn registry_routes(config: &Config, registry: Arc<dyn RegistryService>) -> axum::Router {
    let writes: Option<WriteGuard> = config.admin_token.as_deref().map(|token| {
        let token: Arc<str> = Arc::from(token);
        let guard: WriteGuard =
            Arc::new(move |headers| sb_webhooks::admin::refusal(&token, headers));
        guard
    });
    // The key set a JWT agent names must be reachable from here, where tokens are
    // verified: a definition whose key set cannot be fetched is refused, not registered
    // and then left unserved.
    let precheck: Precheck = Arc::new(|definition| {
        Box::pin(async move {
            if definition
                .auth
                .as_ref()
                .and_then(|a| a.jwt.as_ref())
                .is_none()
            {
                return Ok(());
            }
            let stop = CancellationToken::new();
            let built = build_auth(&definition, &[], &stop).await;
            stop.cancel();
            built
                .map(drop)
                .map_err(|e| FieldError::new("auth.jwt", e.to_string()))
        })
    });
    sb_registry::http::router(registry, writes, Some(precheck), &config.public_url())
}

/// What a process derives from the fleet: the agents it serves (with their code where
/// it runs here) and how each authenticates.
#[derive(Clone, Debug)]
pub(crate) struct Followers {
    pub kinds: Kinds,
    pub roster: Arc<Roster>,
    pub auth: Arc<Authenticators>,
    pub shared: Vec<Credential>,
}

/// One agent as last derived: from which definition, and what it became.
struct Derived {
    definition: sb_registry::AgentDefinition,
    code: Option<sb_agent::roster::Code>,
    auth: Arc<AgentAuth>,
    /// Stops what this derivation runs in the background (JWKS refreshes).
    stop: CancellationToken,
}

impl Followers {
    /// Followers filling `roster` (the agent host's, or the edge's in the split
    /// deployment) and a new set of authenticators.
    pub(crate) fn new(
        config: &Config,
        kinds: Kinds,
        roster: Arc<Roster>,
    ) -> anyhow::Result<Followers> {
        Ok(Followers {
            kinds,
            roster,
            auth: Arc::new(Authenticators::default()),
            shared: shared_tokens(config)?,
        })
    }

    /// Derives from the fleet now (failing if an agent's authentication cannot be set
    /// up: a start must not serve an agent without the protection it was configured
    /// with), then follows every change until `stop`.
    pub(crate) async fn follow(
        self,
        live: &LiveRegistry,
        stop: &CancellationToken,
    ) -> anyhow::Result<()> {
        let derived = Arc::new(tokio::sync::Mutex::new(BTreeMap::new()));
        let mut changes = live.follow();
        let first = changes.borrow_and_update().clone();
        self.apply(&first, &mut *derived.lock().await, stop, true)
            .await?;
        let followers = Arc::new(self);
        let agents_stop = stop.clone();
        on_each_change(changes, stop, move |fleet| {
            let (followers, derived, stop) =
                (followers.clone(), derived.clone(), agents_stop.clone());
            async move {
                let mut derived = derived.lock().await;
                if let Err(e) = followers.apply(&fleet, &mut derived, &stop, false).await {
                    tracing::error!(error = %e, "could not follow a registry change");
                }
            }
        });
        Ok(())
    }

    async fn apply(
        &self,
        fleet: &Fleet,
        derived: &mut BTreeMap<String, Derived>,
        stop: &CancellationToken,
        starting: bool,
    ) -> anyhow::Result<()> {
        let mut next = BTreeMap::new();
        let names = fleet.agents.keys().chain(fleet.removed.keys());
        for name in names {
            let Some(registration) = fleet.registration(name) else {
                continue;
            };
            let served = fleet.agents.contains_key(name);
            if let Some(known) = derived.remove(name)
                && known.definition == registration.definition
                && known.code.is_some() == served
            {
                next.insert(name.clone(), known);
                continue;
            }
            let definition = &registration.definition;
            let agent_stop = stop.child_token();
            let auth = match build_auth(definition, &self.shared, &agent_stop).await {
                Ok(auth) => auth,
                Err(e) if starting => anyhow::bail!("agent \"{name}\": {e}"),
                Err(e) => {
                    tracing::error!(agent = %name, error = %e, "cannot set up the agent's authentication; not serving it");
                    continue;
                }
            };
            let code = match served {
                true => match self.kinds.code(definition) {
                    Ok(code) => Some(code),
                    Err(e) => {
                        tracing::error!(agent = %name, error = %e, "cannot run the agent here; not serving it");
                        continue;
                    }
                },
                false => None,
            };
            next.insert(
                name.clone(),
                Derived {
                    definition: definition.clone(),
                    code,
                    auth: Arc::new(auth),
                    stop: agent_stop,
                },
            );
        }
        for (_, gone) in std::mem::take(derived) {
            gone.stop.cancel();
        }
        let roster = next
            .iter()
            .filter_map(|(name, d)| Some((name.clone(), d.code.clone()?)))
            .collect();
        let auth = next
            .iter()
            .filter(|(_, d)| d.auth.is_enabled())
            .map(|(name, d)| (name.clone(), d.auth.clone()))
            .collect();
        self.roster.replace(roster);
        self.auth.replace(auth);
        *derived = next;
        Ok(())
    }
}

/// Keeps `secrets` (the dispatcher's signing keys) in step with the agents' definitions,
/// removed agents included (their tasks' webhooks are still delivered), until `stop`.
pub(crate) fn follow_webhook_secrets(
    live: &LiveRegistry,
    secrets: Arc<SigningSecrets>,
    stop: &CancellationToken,
) {
    let apply = move |fleet: &Fleet| {
        let names = fleet.agents.keys().chain(fleet.removed.keys());
        let keys = names.filter_map(|name| {
            let secret = fleet
                .registration(name)?
                .definition
                .webhook_secret
                .as_deref()?;
            // Checked when the definition was admitted.
            let key = sb_webhooks::signing::parse_secret(secret).ok()?;
            Some((name.clone(), key))
        });
        secrets.replace(keys.collect());
    };
    let mut changes = live.follow();
    apply(&changes.borrow_and_update());
    on_each_change(changes, stop, move |fleet| {
        apply(&fleet);
        std::future::ready(())
    });
}
