//! The gateway the binding tests run against: `echo` (the default agent) and
//! `conformance`, on the memory store, its state built with `AppState::new` as the
//! binary builds it. Webhook targets may be literal loopback addresses (a host name
//! would have to resolve, and these tests have no DNS).

use std::collections::BTreeMap;
use std::sync::Arc;

use sb_agent::builtin::{ConformanceAgent, EchoAgent};
use sb_agent::{Agent, AgentHost, TurnRunner};
use sb_fanout::LocalFanout;
use sb_gateway::auth::{AgentAuth, Authenticators};
use sb_gateway::{AppState, EdgeLimits, Health, Services};
use sb_registry::auth_config::{ApiKeyConfig, ApiKeyEntry, AuthConfig, JwtConfig, TokenConfig};
use sb_registry::{
    Admission, AgentDefinition, AgentKind, CardDefaults, CardForm, CardMaker, CardSettings,
    FieldError, Fleet, LiveRegistry, Registration, Source,
};
use sb_store::{EventBus, LocalBus, MemoryStore};
use sb_tasks::LocalTaskService;
use sb_webhooks::{AddressPolicy, LocalPushConfigs};
use tokio_util::sync::CancellationToken;

/// The state of a test gateway: agents authenticate as `auth` says, their turns run by
/// `runner` around the in-process host, each principal holds `max_streams` at most.
pub(crate) fn state(
    auth: BTreeMap<String, AgentAuth>,
    runner: impl FnOnce(AgentHost) -> Arc<dyn TurnRunner>,
    max_streams: usize,
) -> AppState {
    let store = Arc::new(MemoryStore::new());
    let bus: Arc<dyn EventBus> = Arc::new(LocalBus::new());
    let tasks = Arc::new(LocalTaskService::new(store.clone(), bus.clone()));
    let mut agents: BTreeMap<String, Arc<dyn Agent>> = BTreeMap::new();
    agents.insert("echo".into(), Arc::new(EchoAgent));
    agents.insert("conformance".into(), Arc::new(ConformanceAgent::default()));
    let defaults: BTreeMap<String, CardDefaults> = agents
        .iter()
        .map(|(name, agent)| {
            let d = agent.describe();
            let defaults = CardDefaults {
                description: d.description,
                skills: d.skills,
                input_modes: d.input_modes,
                output_modes: d.output_modes,
                provider: None,
            };
            (name.clone(), defaults)
        })
        .collect();
    let maker = CardMaker {
        settings: CardSettings {
            public_url: "http://sb.test".into(),
            ..Default::default()
        },
        admission: Arc::new(Defaults(defaults)),
        signer: None,
    };
    let registrations = agents.keys().map(|name| {
        let mut definition = AgentDefinition::new(name, AgentKind::Echo);
        definition.version = Some("1".into());
        definition.auth = auth.get(name).map(config_of);
        if name == "conformance" {
            definition.card = CardForm::V1;
        }
        Registration::new(definition, Source::Config, "1".into())
    });
    let fleet = maker.fleet(registrations, Some("echo"), &Fleet::default());
    let policy = AddressPolicy::parse("127.0.0.1/32").expect("a valid policy");
    let services = Services {
        tasks: tasks.clone(),
        fanout: Arc::new(LocalFanout::new(tasks.clone(), bus.clone())),
        push: Arc::new(LocalPushConfigs::new(
            store,
            tasks.clone(),
            Arc::new(policy),
        )),
        registry: Arc::new(LiveRegistry::new(fleet)),
        runner: runner(AgentHost::new(agents, tasks, bus)),
    };
    let limits = EdgeLimits {
        max_body_bytes: 64 * 1024,
        max_streams_per_principal: max_streams,
        max_delegation_depth: 8,
    };
    AppState::new(
        services,
        limits,
        Arc::new(Authenticators::new(auth)),
        Health::default(),
        CancellationToken::new(),
        &mut prometheus_client::registry::Registry::default(),
    )
}

/// Each agent's card defaults, from its code.
#[derive(Debug)]
struct Defaults(BTreeMap<String, CardDefaults>);

impl Admission for Defaults {
    fn admit(&self, definition: &AgentDefinition) -> Result<CardDefaults, FieldError> {
        Ok(self.0.get(&definition.name).cloned().unwrap_or_default())
    }
}

/// The `auth` of a definition that authenticates as `auth` does, so the card declares
/// what the test's authenticator enforces.
fn config_of(auth: &AgentAuth) -> AuthConfig {
    AuthConfig {
        bearer: auth
            .bearer_tokens
            .iter()
            .map(|c| TokenConfig {
                principal: c.principal.clone(),
                token: c.secret.clone(),
            })
            .collect(),
        api_keys: auth.api_keys.as_ref().map(|a| ApiKeyConfig {
            header: a.header.clone(),
            keys: a
                .keys
                .iter()
                .map(|k| ApiKeyEntry {
                    principal: k.principal.clone(),
                    key: k.secret.clone(),
                })
                .collect(),
        }),
        jwt: auth.jwt.as_ref().map(|_| JwtConfig {
            jwks_file: Some("test-keys.json".into()),
            jwks_url: None,
            issuer: None,
            audience: None,
            principal_claim: None,
            oauth: None,
        }),
    }
}
