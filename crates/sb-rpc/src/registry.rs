//! Agent cards over gRPC: the registry service serves its cards; a gateway loads them
//! once at startup into a [`StaticRegistry`] of its own (cards change with the
//! configuration, which restarts the services).

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use sb_registry::{CardSnapshot, StaticRegistry};
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use crate::pb;
use crate::wire::{from_json, request, to_json};

#[derive(Debug, Clone)]
pub struct RegistryServer {
    pub registry: Arc<StaticRegistry>,
}

impl RegistryServer {
    pub fn into_service(self) -> pb::registry_server::RegistryServer<RegistryServer> {
        pb::registry_server::RegistryServer::new(self)
    }
}

fn card_pb(s: &CardSnapshot) -> pb::Card {
    pb::Card {
        agent: s.agent.clone(),
        card_json: to_json(&s.card),
        merged_by_default: s.merged_by_default,
        last_modified_millis: s.last_modified.timestamp_millis(),
    }
}

fn card_from(c: pb::Card) -> Result<CardSnapshot, sb_protocol::A2AError> {
    Ok(CardSnapshot {
        agent: c.agent,
        card: from_json(&c.card_json, "agent card")?,
        merged_by_default: c.merged_by_default,
        last_modified: Utc
            .timestamp_millis_opt(c.last_modified_millis)
            .single()
            .unwrap_or_else(Utc::now),
    })
}

#[tonic::async_trait]
impl pb::registry_server::Registry for RegistryServer {
    async fn list_cards(
        &self,
        _request: Request<pb::ListCardsRequest>,
    ) -> Result<Response<pb::ListCardsResponse>, Status> {
        let (cards, root) = self.registry.snapshots();
        Ok(Response::new(pb::ListCardsResponse {
            cards: cards.iter().map(card_pb).collect(),
            default_agent: root.as_ref().map(|r| r.agent.clone()).unwrap_or_default(),
            root: root.as_ref().map(card_pb),
        }))
    }
}

/// Fetches the cards from the registry service, retrying until it answers or
/// `patience` runs out (services may start in any order).
pub async fn load_registry(channel: Channel, patience: Duration) -> Result<StaticRegistry, String> {
    let mut client = pb::registry_client::RegistryClient::new(channel);
    let started = tokio::time::Instant::now();
    let response = loop {
        match client.list_cards(request(pb::ListCardsRequest {})).await {
            Ok(response) => break response.into_inner(),
            Err(status) if started.elapsed() < patience => {
                tracing::info!(error = %status.message(), "waiting for the registry service");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(status) => {
                return Err(format!(
                    "the registry service did not answer: {}",
                    status.message()
                ));
            }
        }
    };
    let cards = response
        .cards
        .into_iter()
        .map(card_from)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.message)?;
    let root = response
        .root
        .map(card_from)
        .transpose()
        .map_err(|e| e.message)?;
    let default_agent = Some(response.default_agent).filter(|a| !a.is_empty());
    Ok(StaticRegistry::from_snapshots(cards, root, default_agent))
}
