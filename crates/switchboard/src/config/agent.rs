//! The `[[agents]]` entries are agent definitions, owned by the registry
//! (`sb_registry::AgentDefinition`): the same type reads the file, the registry's
//! `PUT /registry/agents/{name}` and a worker's announcement. Here: the agents served
//! without a configuration file.

pub use sb_registry::auth_config::{ApiKeyConfig, ApiKeyEntry, AuthConfig, JwtConfig, TokenConfig};
pub use sb_registry::definition::{AgentKind, CardForm};

/// One hosted agent: its definition (the name the embedding API has always used).
pub type AgentConfig = sb_registry::AgentDefinition;

/// The agents served without a configuration file.
pub(super) fn default_agents() -> Vec<AgentConfig> {
    let conformance = AgentConfig {
        card: CardForm::V1,
        ..AgentConfig::new("conformance", AgentKind::Conformance)
    };
    vec![
        AgentConfig::new("echo", AgentKind::Echo),
        conformance,
        AgentConfig::new("consolidate", AgentKind::Consolidate),
    ]
}

impl super::Config {
    /// The agents the registry is given: the `[[agents]]`, and the routing agent of
    /// `[fleet.router]` unless it is off or the entries define one themselves.
    pub fn registered_agents(&self) -> Vec<AgentConfig> {
        let mut agents = self.agents.clone();
        let router = &self.fleet.router;
        let defined = agents.iter().any(|a| a.kind == AgentKind::Router);
        if router.enabled && !defined {
            agents.push(AgentConfig::new(&router.name, AgentKind::Router));
        }
        agents
    }
}
