//! The agents a deployment can run: the code of each kind (built-ins, the embedding
//! program's agents, none for a worker's), what a kind brings to its cards
//! ([`Kinds`], the registry's admission), how callers authenticate to each agent, and
//! the extension every card carries.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use sb_agent::Agent;
use sb_agent::builtin::{BenchAgent, ConformanceAgent, ConsolidateAgent, EchoAgent};
use sb_agent::roster::Code;
use sb_bridge::push::PushReceiver;
use sb_bridge::{BridgeAgent, Upstream};
use sb_gateway::auth::{AgentAuth, Credential};
use sb_gateway::jwt::{JwksSource, JwtVerifier};
use sb_protocol::card::{AgentExtension, AgentProvider};
use sb_registry::{Admission, AgentDefinition, AgentKind, CardDefaults, FieldError};
use sb_router::{RouterAgent, RouterHandle};
use tokio_util::sync::CancellationToken;

use crate::config::{self, Config};

/// Agents the program embedding Switchboard brings, by the name each is served under.
pub(crate) type EmbeddedAgents = BTreeMap<String, Arc<dyn Agent>>;

/// Where agents run in a deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runs {
    /// In this process (the all-in-one).
    InProcess,
    /// On remote workers (the split deployment).
    OnWorkers,
}

/// The kinds a deployment can run, and their code: the registry's [`Admission`].
#[derive(Clone, Debug)]
pub(crate) struct Kinds {
    pub embedded: EmbeddedAgents,
    pub runs: Runs,
    /// What bridged agents call their upstreams with (one connection pool).
    pub upstream_http: reqwest::Client,
    /// Where bridged agents' upstreams push notifications, in a process that runs
    /// their turns and serves HTTP (the all-in-one).
    pub push_receiver: Option<Arc<PushReceiver>>,
    /// What routing agents work through, bound once a gateway's state is built (a
    /// process without a gateway only describes them).
    pub router: RouterHandle,
}

impl Kinds {
    pub(crate) fn new(embedded: EmbeddedAgents, runs: Runs) -> Kinds {
        Kinds {
            embedded,
            runs,
            upstream_http: reqwest::Client::new(),
            push_receiver: None,
            router: RouterHandle::default(),
        }
    }

    /// The code of `definition`'s agent in this process: the embedding program's agent of
    /// that name if it registered one, else the built-in of its kind; `None` for an agent
    /// whose code is a worker's own.
    pub(crate) fn code(&self, definition: &AgentDefinition) -> Result<Code, FieldError> {
        if let Some(agent) = self.embedded.get(&definition.name) {
            return Ok(Some(agent.clone()));
        }
        Ok(Some(match definition.kind {
            AgentKind::Embedded => {
                return Err(FieldError::new(
                    "kind",
                    format!(
                        "\"embedded\", but the program running Switchboard registered no agent \"{}\" (Switchboard::agent)",
                        definition.name
                    ),
                ));
            }
            AgentKind::Worker => return Ok(None),
            AgentKind::A2a => {
                let upstream =
                    Upstream::of(definition, self.upstream_http.clone()).ok_or_else(|| {
                        FieldError::new("url", "a bridged agent needs its upstream's URL")
                    })?;
                Arc::new(BridgeAgent::new(
                    Arc::new(upstream),
                    self.runs == Runs::InProcess,
                    self.push_receiver.clone(),
                ))
            }
            AgentKind::Consolidate => {
                let mut agent = ConsolidateAgent::default();
                if let Some(ms) = definition.pause_ms {
                    agent.pause = Duration::from_millis(ms);
                }
                Arc::new(agent)
            }
            AgentKind::Router => Arc::new(RouterAgent::new(
                definition.name.clone(),
                self.router.clone(),
            )),
            AgentKind::Conformance => Arc::new(ConformanceAgent::default()),
            AgentKind::Bench => Arc::new(BenchAgent),
            AgentKind::Echo => Arc::new(EchoAgent),
        }))
    }
}

impl Admission for Kinds {
    fn admit(&self, definition: &AgentDefinition) -> Result<CardDefaults, FieldError> {
        if let Some(secret) = &definition.webhook_secret {
            sb_webhooks::signing::parse_secret(secret)
                .map_err(|e| FieldError::new("webhook_secret", e))?;
        }
        match (definition.kind, self.runs) {
            (AgentKind::Worker, Runs::InProcess) => {
                return Err(FieldError::new(
                    "kind",
                    "\"worker\" agents run on remote workers, which attach to the split deployment (--services); this one runs agents in process",
                ));
            }
            (AgentKind::Embedded, Runs::OnWorkers) => {
                return Err(FieldError::new(
                    "kind",
                    "\"embedded\" agents run inside the program embedding Switchboard (all-in-one); a split deployment runs agents on workers",
                ));
            }
            _ => {}
        }
        let Some(agent) = self.code(definition)? else {
            return Ok(CardDefaults::default());
        };
        let described = agent.describe();
        let builtin = !matches!(definition.kind, AgentKind::Embedded | AgentKind::A2a)
            && !self.embedded.contains_key(&definition.name);
        Ok(CardDefaults {
            description: described.description,
            skills: described.skills,
            input_modes: described.input_modes,
            output_modes: described.output_modes,
            provider: builtin.then(|| AgentProvider {
                organization: "Switchboard".into(),
                url: "https://github.com/switchboard-a2a".into(),
            }),
        })
    }
}

/// The bearer tokens every agent accepts (`--auth-token`).
pub(crate) fn shared_tokens(config: &Config) -> anyhow::Result<Vec<Credential>> {
    config
        .auth_tokens
        .iter()
        .map(|entry| {
            let (principal, secret) = config::parse_token(entry).map_err(anyhow::Error::msg)?;
            Ok(Credential { principal, secret })
        })
        .collect()
}

/// The agent's authentication: its own credentials plus the `shared` tokens. A JWKS URL
/// is fetched now and refreshed in the background until `stop`.
pub(crate) async fn build_auth(
    definition: &AgentDefinition,
    shared: &[Credential],
    stop: &CancellationToken,
) -> anyhow::Result<AgentAuth> {
    let own = definition.auth.as_ref();
    let jwt = match own.and_then(|a| a.jwt.as_ref()) {
        None => None,
        Some(jwt) => {
            let source = match (&jwt.jwks_file, &jwt.jwks_url) {
                (Some(file), _) => JwksSource::File(file.clone()),
                (None, Some(url)) => JwksSource::Url(url.clone()),
                (None, None) => anyhow::bail!("auth.jwt needs a key set"),
            };
            let verifier = JwtVerifier::load(
                source,
                jwt.issuer.clone(),
                jwt.audience.clone(),
                jwt.principal_claim.clone(),
            )
            .await
            .map_err(anyhow::Error::msg)?;
            if matches!(verifier.source, JwksSource::Url(_)) {
                tokio::spawn(refresh_jwks(verifier.clone(), stop.clone()));
            }
            Some(verifier)
        }
    };
    Ok(AgentAuth::from_config(own, shared, jwt))
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
pub(crate) fn resume_extension(durable: bool) -> AgentExtension {
    let params = serde_json::json!({
        "sequence": "task-generation",
        "cursor": "Last-Event-ID",
        "durable": durable,
    });
    AgentExtension {
        uri: sb_gateway::ops::RESUME_EXTENSION.to_owned(),
        description: "Each task event has a per-task sequence number, sent as the SSE id. SubscribeToTask with \
                      Last-Event-ID replays exactly the events after it, then live ones, across restarts."
            .to_owned(),
        required: false,
        params: params.as_object().cloned(),
    }
}
