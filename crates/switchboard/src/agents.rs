//! The configured agents: their code (built-in kinds), what their cards say, and how
//! callers authenticate to them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use sb_agent::Agent;
use sb_agent::builtin::{BenchAgent, ConformanceAgent, ConsolidateAgent, EchoAgent};
use sb_gateway::auth::{AgentAuth, ApiKeys, Credential};
use sb_gateway::jwt::{JwksSource, JwtVerifier};
use sb_registry::HostedAgent;
use tokio_util::sync::CancellationToken;

use crate::config::{self, AgentConfig, AgentKind, CardForm, Config};

/// The agent's authentication: its own credentials plus the global `--auth-token`s.
/// A JWKS URL is fetched now and refreshed in the background until `stop`.
async fn build_auth(
    config: &Config,
    agent: &AgentConfig,
    stop: &CancellationToken,
) -> anyhow::Result<AgentAuth> {
    let mut auth = AgentAuth::default();
    for entry in &config.auth_tokens {
        let (principal, secret) = config::parse_token(entry).map_err(|e| anyhow::anyhow!(e))?;
        auth.bearer_tokens.push(Credential { principal, secret });
    }
    if let Some(own) = &agent.auth {
        for t in &own.bearer {
            auth.bearer_tokens.push(Credential {
                principal: t.principal.clone(),
                secret: t.token.clone(),
            });
        }
        auth.api_keys = own.api_keys.as_ref().map(|a| ApiKeys {
            header: a.header.clone(),
            keys: a
                .keys
                .iter()
                .map(|k| Credential {
                    principal: k.principal.clone(),
                    secret: k.key.clone(),
                })
                .collect(),
        });
        if let Some(jwt) = &own.jwt {
            let source = match (&jwt.jwks_file, &jwt.jwks_url) {
                (Some(file), _) => JwksSource::File(file.clone()),
                (None, Some(url)) => JwksSource::Url(url.clone()),
                (None, None) => anyhow::bail!("agent \"{}\": auth.jwt needs a key set", agent.name),
            };
            let verifier = JwtVerifier::load(
                source,
                jwt.issuer.clone(),
                jwt.audience.clone(),
                jwt.principal_claim.clone(),
            )
            .await
            .map_err(|e| anyhow::anyhow!("agent \"{}\": {e}", agent.name))?;
            if matches!(verifier.source, JwksSource::Url(_)) {
                tokio::spawn(refresh_jwks(verifier.clone(), stop.clone()));
            }
            auth.jwt = Some(verifier);
        }
    }
    Ok(auth)
}

/// Fetches a JWKS URL again every few minutes (key rotation); a failed fetch keeps the
/// keys it had.
async fn refresh_jwks(verifier: JwtVerifier, stop: CancellationToken) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(sb_gateway::jwt::JWKS_REFRESH) => {}
        }
        if let Err(e) = verifier.refresh().await {
            tracing::warn!(error = %e, "could not refresh the JWKS; keeping the previous keys");
        }
    }
}

/// The card entry of the stream-resume extension (docs/extensions.md).
fn resume_extension(memory: bool) -> sb_protocol::card::AgentExtension {
    let params = serde_json::json!({
        "sequence": "task-generation",
        "cursor": "Last-Event-ID",
        "durable": !memory,
    });
    sb_protocol::card::AgentExtension {
        uri: sb_gateway::ops::RESUME_EXTENSION.to_owned(),
        description: "Each task event has a per-task sequence number, sent as the SSE id. SubscribeToTask with \
                      Last-Event-ID replays exactly the events after it, then live ones, across restarts."
            .to_owned(),
        required: false,
        params: params.as_object().cloned(),
    }
}

/// Agents the program embedding Switchboard brings, by the name each is served under.
pub(crate) type EmbeddedAgents = BTreeMap<String, Arc<dyn Agent>>;

/// The agent an `[[agents]]` entry names: the embedding program's agent of that name if
/// it registered one, else the built-in of its kind.
pub(crate) fn build_agent(
    config: &AgentConfig,
    embedded: &EmbeddedAgents,
) -> anyhow::Result<Arc<dyn Agent>> {
    if let Some(agent) = embedded.get(&config.name) {
        return Ok(agent.clone());
    }
    Ok(match config.kind {
        AgentKind::Embedded => anyhow::bail!(
            "agent \"{}\" is of kind \"embedded\", but the program running Switchboard \
             registered no agent of that name (Switchboard::agent)",
            config.name
        ),
        AgentKind::Consolidate => {
            let mut agent = ConsolidateAgent::default();
            if let Some(ms) = config.pause_ms {
                agent.pause = Duration::from_millis(ms);
            }
            Arc::new(agent)
        }
        AgentKind::Conformance => Arc::new(ConformanceAgent::default()),
        AgentKind::Bench => Arc::new(BenchAgent),
        AgentKind::Echo => Arc::new(EchoAgent),
    })
}

pub(crate) type HostedAgents = (
    BTreeMap<String, Arc<dyn Agent>>,
    Vec<HostedAgent>,
    BTreeMap<String, AgentAuth>,
);

/// Each configured agent: the running agent, what its card says, how it authenticates.
pub(crate) async fn host_agents(
    config: &Config,
    embedded: &EmbeddedAgents,
    stop: &CancellationToken,
) -> anyhow::Result<HostedAgents> {
    let mut agents = BTreeMap::new();
    let mut hosted = Vec::new();
    let mut auths = BTreeMap::new();
    for agent_config in &config.agents {
        let agent = build_agent(agent_config, embedded)?;
        let descriptor = agent.describe();
        let auth = build_auth(config, agent_config, stop).await?;
        let (security_schemes, security_requirements) = auth.card_security();
        hosted.push(HostedAgent {
            name: agent_config.name.clone(),
            description: agent_config
                .description
                .clone()
                .unwrap_or(descriptor.description),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            skills: descriptor.skills,
            input_modes: descriptor.input_modes,
            output_modes: descriptor.output_modes,
            extensions: vec![resume_extension(config.memory && config.backend.is_none())],
            security_schemes,
            security_requirements,
            merged_card_by_default: agent_config.card == CardForm::Merged,
            extended_card: auth.is_enabled(),
        });
        auths.insert(agent_config.name.clone(), auth);
        agents.insert(agent_config.name.clone(), agent);
    }
    Ok((agents, hosted, auths))
}
