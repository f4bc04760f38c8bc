//! The registry over gRPC. [`RegistryServer`] serves a [`LocalRegistry`]: the fleet as a
//! stream (the whole fleet again after each change), puts and removes. [`RegistryClient`]
//! is a gateway's registry in the split deployment: it mirrors that stream in a
//! [`LiveRegistry`] (reads stay in memory on the request path), follows it again after
//! a lost connection, and forwards writes.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::{Stream, StreamExt};
use sb_registry::fleet::{FleetWire, ServedWire};
use sb_registry::{
    AgentDefinition, CardRegistry, Fleet, LiveRegistry, LocalRegistry, Put, RegistryError,
    RegistryService, ServedAgent, Source,
};
use sb_store::backoff::Backoff;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use crate::pb;
use crate::wire::{request, to_json, traced};

/// How long a gateway's put waits for its own mirror to show the change, so a client
/// that registers then reads through the same gateway sees what it wrote.
const MIRROR_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct RegistryServer {
    pub registry: Arc<LocalRegistry>,
}

impl RegistryServer {
    pub fn into_service(self) -> pb::registry_server::RegistryServer<RegistryServer> {
        pb::registry_server::RegistryServer::new(self)
    }
}

fn fleet_pb(fleet: &Fleet) -> pb::Fleet {
    pb::Fleet {
        fleet_json: to_json(&fleet.to_wire()),
    }
}

fn source_name(source: Source) -> &'static str {
    match source {
        Source::Config => "config",
        Source::Api => "api",
        Source::Worker => "worker",
        Source::Upstream => "upstream",
    }
}

fn status_of(error: &RegistryError) -> Status {
    let code = match error {
        RegistryError::Invalid(_) => tonic::Code::InvalidArgument,
        RegistryError::NotFound(_) => tonic::Code::NotFound,
        RegistryError::Unavailable(_) => tonic::Code::Unavailable,
    };
    Status::with_details(code, error.to_string(), to_json(error).into())
}

fn error_of(status: &Status) -> RegistryError {
    match serde_json::from_slice::<RegistryError>(status.details()) {
        Ok(error) => error,
        Err(_) => RegistryError::Unavailable(format!(
            "the registry service is unavailable: {}",
            status.message()
        )),
    }
}

type FleetStream = Pin<Box<dyn Stream<Item = Result<pb::Fleet, Status>> + Send>>;

#[tonic::async_trait]
impl pb::registry_server::Registry for RegistryServer {
    type WatchStream = FleetStream;

    async fn watch(
        &self,
        _request: Request<pb::WatchFleetRequest>,
    ) -> Result<Response<FleetStream>, Status> {
        let mut changes = self.registry.live().follow();
        changes.mark_changed();
        let stream = futures::stream::unfold(changes, |mut changes| async move {
            changes.changed().await.ok()?;
            let fleet = changes.borrow_and_update().clone();
            Some((Ok(fleet_pb(&fleet)), changes))
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn put(
        &self,
        request: Request<pb::PutAgentRequest>,
    ) -> Result<Response<pb::PutAgentResponse>, Status> {
        let request = request.into_inner();
        let definition: AgentDefinition = serde_json::from_slice(&request.definition_json)
            .map_err(|e| Status::invalid_argument(format!("malformed agent definition: {e}")))?;
        let source = match request.source.as_str() {
            "config" => Source::Config,
            "worker" => Source::Worker,
            _ => Source::Api,
        };
        let put = self
            .registry
            .put(definition, source)
            .await
            .map_err(|e| status_of(&e))?;
        Ok(Response::new(pb::PutAgentResponse {
            created: put.created,
            changed: put.changed,
            agent_json: to_json(&put.agent.to_wire()),
        }))
    }

    async fn remove(
        &self,
        request: Request<pb::RemoveAgentRequest>,
    ) -> Result<Response<pb::RemoveAgentResponse>, Status> {
        self.registry
            .remove(&request.into_inner().name)
            .await
            .map_err(|e| status_of(&e))?;
        Ok(Response::new(pb::RemoveAgentResponse {}))
    }
}

/// The registry service seen from another process.
#[derive(Debug)]
pub struct RegistryClient {
    client: pb::registry_client::RegistryClient<Channel>,
    mirror: Arc<LiveRegistry>,
}

impl RegistryClient {
    /// Connects and waits for the first fleet (at most `patience`: services may start in
    /// any order), then follows the registry until `stop`.
    pub async fn connect(
        channel: Channel,
        patience: Duration,
        stop: CancellationToken,
    ) -> Result<Arc<RegistryClient>, String> {
        let client = pb::registry_client::RegistryClient::new(channel);
        let started = tokio::time::Instant::now();
        let mut pause = Backoff::doubling(Duration::from_millis(200), Duration::from_secs(2));
        let (first, stream) = loop {
            match open(&client).await {
                Ok(opened) => break opened,
                Err(message) if started.elapsed() < patience => {
                    tracing::info!(error = %message, "waiting for the registry service");
                    tokio::time::sleep(pause.next_delay().unwrap_or_default()).await;
                }
                Err(message) => {
                    return Err(format!("the registry service did not answer: {message}"));
                }
            }
        };
        let registry = Arc::new(RegistryClient {
            client,
            mirror: Arc::new(LiveRegistry::new(Fleet::from_wire(
                first,
                &Fleet::default(),
            ))),
        });
        tokio::spawn(registry.clone().follow(stream, stop));
        Ok(registry)
    }

    /// What followers of the fleet (agent code, authentication) subscribe to.
    pub fn live(&self) -> Arc<LiveRegistry> {
        self.mirror.clone()
    }

    fn apply(&self, wire: FleetWire) {
        let fleet = Fleet::from_wire(wire, &self.mirror.fleet());
        self.mirror.replace(fleet);
    }

    async fn follow(
        self: Arc<Self>,
        mut stream: tonic::Streaming<pb::Fleet>,
        stop: CancellationToken,
    ) {
        let mut pause = Backoff::doubling(Duration::from_millis(200), Duration::from_secs(5));
        loop {
            loop {
                let next = tokio::select! {
                    () = stop.cancelled() => return,
                    next = stream.next() => next,
                };
                match next.map(|r| r.map(|fleet| decode(&fleet.fleet_json))) {
                    Some(Ok(Ok(wire))) => {
                        self.apply(wire);
                        pause.reset();
                    }
                    Some(Ok(Err(message))) => {
                        tracing::error!(error = %message, "the registry service sent an unreadable fleet");
                        break;
                    }
                    Some(Err(status)) => {
                        tracing::warn!(error = %status.message(), "lost the registry service; following it again");
                        break;
                    }
                    None => {
                        tracing::warn!(
                            "the registry service ended the fleet stream; following it again"
                        );
                        break;
                    }
                }
            }
            // Serving the last fleet known meanwhile: cards stay up while the registry is away.
            loop {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(pause.next_delay().unwrap_or_default()) => {}
                }
                match open(&self.client).await {
                    Ok((first, next)) => {
                        self.apply(first);
                        stream = next;
                        break;
                    }
                    Err(message) => {
                        tracing::debug!(error = %message, "the registry service is still away");
                    }
                }
            }
        }
    }

    /// Waits until the mirror serves `agent`'s registration as `expected` says.
    async fn mirrored(&self, expected: impl Fn(&Fleet) -> bool) {
        let mut changes = self.mirror.follow();
        let _ = tokio::time::timeout(MIRROR_WAIT, async {
            loop {
                if expected(&changes.borrow_and_update()) {
                    return;
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
    }
}

fn decode(bytes: &[u8]) -> Result<FleetWire, String> {
    serde_json::from_slice(bytes).map_err(|e| e.to_string())
}

/// Opens the fleet stream and reads its first fleet.
async fn open(
    client: &pb::registry_client::RegistryClient<Channel>,
) -> Result<(FleetWire, tonic::Streaming<pb::Fleet>), String> {
    let mut stream = client
        .clone()
        .watch(traced(pb::WatchFleetRequest {}))
        .await
        .map_err(|s| s.message().to_owned())?
        .into_inner();
    match stream.next().await {
        Some(Ok(fleet)) => Ok((decode(&fleet.fleet_json)?, stream)),
        Some(Err(status)) => Err(status.message().to_owned()),
        None => Err("the fleet stream ended at once".into()),
    }
}

impl CardRegistry for RegistryClient {
    fn fleet(&self) -> Arc<Fleet> {
        self.mirror.fleet()
    }
}

#[async_trait]
impl RegistryService for RegistryClient {
    async fn put(&self, definition: AgentDefinition, source: Source) -> Result<Put, RegistryError> {
        let response = self
            .client
            .clone()
            .put(request(pb::PutAgentRequest {
                definition_json: to_json(&definition),
                source: source_name(source).to_owned(),
            }))
            .await
            .map_err(|s| error_of(&s))?
            .into_inner();
        let wire: ServedWire = serde_json::from_slice(&response.agent_json).map_err(|e| {
            RegistryError::Unavailable(format!("unreadable answer of the registry service: {e}"))
        })?;
        let agent = Arc::new(ServedAgent::from_wire(wire));
        let registration = agent.registration.clone();
        self.mirrored(|fleet| {
            fleet
                .agent(registration.name())
                .is_some_and(|a| a.registration == registration)
        })
        .await;
        Ok(Put {
            created: response.created,
            changed: response.changed,
            agent,
        })
    }

    async fn remove(&self, name: &str) -> Result<(), RegistryError> {
        self.client
            .clone()
            .remove(request(pb::RemoveAgentRequest {
                name: name.to_owned(),
            }))
            .await
            .map_err(|s| error_of(&s))?;
        self.mirrored(|fleet| fleet.agent(name).is_none()).await;
        Ok(())
    }

    fn fleet(&self) -> Arc<Fleet> {
        self.mirror.fleet()
    }
}
