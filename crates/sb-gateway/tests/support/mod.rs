//! The gateway the binding tests run against: `echo` (the default agent) and
//! `conformance`, on the memory store, its state built with `AppState::new` as the
//! binary builds it. Webhook targets may be literal loopback addresses (a host name
//! would have to resolve, and these tests have no DNS).

use std::collections::BTreeMap;
use std::sync::Arc;

use sb_agent::builtin::{ConformanceAgent, EchoAgent};
use sb_agent::{Agent, AgentHost, TurnRunner};
use sb_fanout::LocalFanout;
use sb_gateway::auth::AgentAuth;
use sb_gateway::{AppState, EdgeLimits, Health, Services};
use sb_registry::{HostedAgent, StaticRegistry};
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
    let hosted: Vec<HostedAgent> = agents
        .iter()
        .map(|(name, agent)| {
            let d = agent.describe();
            let (security_schemes, security_requirements) =
                auth.get(name).cloned().unwrap_or_default().card_security();
            HostedAgent {
                name: name.clone(),
                description: d.description,
                version: "1".into(),
                skills: d.skills,
                input_modes: d.input_modes,
                output_modes: d.output_modes,
                extensions: vec![],
                security_schemes,
                security_requirements,
                merged_card_by_default: name != "conformance",
                extended_card: auth.get(name).is_some_and(AgentAuth::is_enabled),
            }
        })
        .collect();
    let policy = AddressPolicy::parse("127.0.0.1/32").expect("a valid policy");
    let services = Services {
        tasks: tasks.clone(),
        fanout: Arc::new(LocalFanout::new(tasks.clone(), bus.clone())),
        push: Arc::new(LocalPushConfigs::new(
            store,
            tasks.clone(),
            Arc::new(policy),
        )),
        registry: Arc::new(StaticRegistry::new("http://sb.test", &hosted, Some("echo"))),
        runner: runner(AgentHost::new(agents, tasks, bus)),
    };
    let limits = EdgeLimits {
        max_body_bytes: 64 * 1024,
        max_streams_per_principal: max_streams,
    };
    AppState::new(
        services,
        limits,
        auth,
        Health::default(),
        CancellationToken::new(),
        &mut prometheus_client::registry::Registry::default(),
    )
}
