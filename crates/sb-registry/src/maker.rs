//! Makes the served cards of a fleet from registrations: the card of each definition
//! (through the deployment's [`Admission`]), at its URLs, signed.

use std::collections::BTreeMap;
use std::sync::Arc;

use sb_protocol::card::{AgentCard, AgentSkill};

use crate::card::{self, CardSettings};
use crate::definition::{AgentDefinition, AgentKind, CardForm};
use crate::entry::CardEntry;
use crate::fleet::{Fleet, ServedAgent};
use crate::registration::Registration;
use crate::service::Admission;
use crate::signing::CardSigner;
use crate::upstream::UpstreamCard;
use crate::validate::FieldError;

/// What makes a deployment's cards.
#[derive(Clone, Debug)]
pub struct CardMaker {
    pub settings: CardSettings,
    pub admission: Arc<dyn Admission>,
    /// Signs every card served; `None` serves them unsigned.
    pub signer: Option<CardSigner>,
}

/// Where Switchboard serves its signing keys, under the public URL.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

impl CardMaker {
    /// The card of `definition` without interfaces, after the definition's own checks
    /// and the deployment's; a bridged agent's shows what its `upstream` card brings.
    pub fn describe(
        &self,
        definition: &AgentDefinition,
        upstream: Option<&UpstreamCard>,
    ) -> Result<AgentCard, FieldError> {
        self.describe_with(definition, upstream, None)
    }

    /// [`CardMaker::describe`], a routing agent's card listing `routed` as its skills
    /// (unless its definition names its own).
    fn describe_with(
        &self,
        definition: &AgentDefinition,
        upstream: Option<&UpstreamCard>,
        routed: Option<&[AgentSkill]>,
    ) -> Result<AgentCard, FieldError> {
        definition.validate()?;
        let mut admitted = self.admission.admit(definition)?;
        if let Some(routed) = routed {
            admitted.skills = routed.to_vec();
        }
        let defaults = upstream
            .and_then(UpstreamCard::defaults)
            .unwrap_or(admitted);
        Ok(card::describe(definition, &defaults, &self.settings))
    }

    fn base(&self) -> &str {
        self.settings.public_url.trim_end_matches('/')
    }

    fn finish(&self, card: AgentCard, registration: &Registration) -> CardEntry {
        let card = match &self.signer {
            Some(signer) => {
                let jku = format!("{}{JWKS_PATH}", self.base());
                match signer.sign(&card, Some(&jku)) {
                    Ok(signed) => signed,
                    Err(e) => {
                        tracing::error!(agent = registration.name(), error = %e, "could not sign the card; serving it unsigned");
                        card
                    }
                }
            }
            None => card,
        };
        let merged = registration.definition.card == CardForm::Merged;
        CardEntry::new(card, merged, registration.changed_at)
    }

    /// `registration` served at `/agents/{name}`.
    pub fn serve(&self, registration: Registration) -> Result<ServedAgent, FieldError> {
        self.serve_with(registration, None)
    }

    fn serve_with(
        &self,
        registration: Registration,
        routed: Option<&[AgentSkill]>,
    ) -> Result<ServedAgent, FieldError> {
        let content = self.describe_with(
            &registration.definition,
            registration.upstream.as_ref(),
            routed,
        )?;
        let name = registration.name().to_owned();
        let base = format!("{}/agents/{name}", self.base());
        let grpc = card::grpc_interface(self.base(), Some(&name));
        let entry = self.finish(card::at(content, &base, grpc), &registration);
        Ok(ServedAgent {
            registration,
            entry: Arc::new(entry),
        })
    }

    /// The default agent's card with root URLs (and no tenant): what generic clients
    /// of either generation discover first, so always the merged form by default.
    fn root(&self, agent: &ServedAgent) -> CardEntry {
        let mut card = agent.entry.card.clone();
        card.signatures.clear();
        card = card::at(card, self.base(), card::grpc_interface(self.base(), None));
        let mut entry = self.finish(card, &agent.registration);
        entry.merged_by_default = true;
        entry
    }

    /// The fleet of `registrations` (registered and removed), reusing the served form of
    /// each one `previous` already had unchanged. An agent this deployment cannot serve
    /// (a stored definition of a kind it does not run) is left out, with a warning.
    /// Routing agents are served last: their cards list the skills of all the others.
    pub fn fleet(
        &self,
        registrations: impl IntoIterator<Item = Registration>,
        default_agent: Option<&str>,
        previous: &Fleet,
    ) -> Fleet {
        let mut agents = BTreeMap::new();
        let mut removed = BTreeMap::new();
        let mut routers = Vec::new();
        for registration in registrations {
            let name = registration.name().to_owned();
            if registration.removed_at.is_some() {
                removed.insert(name, Arc::new(registration));
                continue;
            }
            if registration.definition.kind == AgentKind::Router {
                routers.push(registration);
                continue;
            }
            if let Some(known) = previous.agents.get(&name)
                && known.registration == registration
            {
                agents.insert(name, known.clone());
                continue;
            }
            match self.serve(registration) {
                Ok(served) => {
                    agents.insert(name, Arc::new(served));
                }
                Err(e) => {
                    tracing::warn!(agent = %name, error = %e, "a registered agent cannot be served here; leaving it out");
                }
            }
        }
        let routed = routed_skills(&agents);
        for registration in routers {
            let name = registration.name().to_owned();
            match self.serve_with(registration, Some(&routed)) {
                Ok(served) => {
                    agents.insert(name, Arc::new(served));
                }
                Err(e) => {
                    tracing::warn!(agent = %name, error = %e, "a routing agent cannot be served here; leaving it out");
                }
            }
        }
        let default = default_agent.and_then(|name| agents.get(name));
        let root = default.map(|agent| match &previous.root {
            Some(root)
                if previous
                    .agents
                    .get(agent.registration.name())
                    .is_some_and(|p| Arc::ptr_eq(p, agent)) =>
            {
                root.clone()
            }
            _ => Arc::new(self.root(agent)),
        });
        Fleet {
            agents,
            removed,
            root,
            default_agent: default_agent.map(str::to_owned),
            jwks: self
                .signer
                .as_ref()
                .map(|signer| crate::signing::jwks(&[signer])),
        }
    }
}

/// Every skill the agents declare, once each (by id, as the first agent in name order
/// declares it), each saying which agents serve it: a routing agent's skills.
fn routed_skills(agents: &BTreeMap<String, Arc<ServedAgent>>) -> Vec<AgentSkill> {
    let mut skills: BTreeMap<&str, (AgentSkill, Vec<&str>)> = BTreeMap::new();
    for (name, agent) in agents {
        for skill in &agent.entry.card.skills {
            skills
                .entry(skill.id.as_str())
                .or_insert_with(|| (skill.clone(), Vec::new()))
                .1
                .push(name);
        }
    }
    skills
        .into_values()
        .map(|(mut skill, serving)| {
            let served_by = format!("Served by {}.", serving.join(", "));
            skill.description = match skill.description.trim() {
                "" => served_by,
                own => format!("{own} ({served_by})"),
            };
            skill
        })
        .collect()
}
