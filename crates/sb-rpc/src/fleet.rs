//! The fleet layer's state over gRPC ([`FleetService`]), so a gateway answers
//! `/fleet/…` from the task-state service that keeps it.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use sb_fleet::{FleetService, Window};
use sb_protocol::A2AError;
use sb_store::TaskRecord;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use crate::pb;
use crate::pb::fleet_state_client::FleetStateClient as Raw;
use crate::tasks::{record_from, record_pb};
use crate::wire::{error_from, request, status_from};

#[derive(Debug, Clone)]
pub struct FleetServer {
    pub fleet: Arc<dyn FleetService>,
}

impl FleetServer {
    pub fn into_service(self) -> pb::fleet_state_server::FleetStateServer<FleetServer> {
        pb::fleet_state_server::FleetStateServer::new(self)
    }
}

#[tonic::async_trait]
impl pb::fleet_state_server::FleetState for FleetServer {
    async fn counters(
        &self,
        request: Request<pb::CountersRequest>,
    ) -> Result<Response<pb::CountersResponse>, Status> {
        let name = request.into_inner().window;
        let window = Window::parse(&name).ok_or_else(|| {
            Status::invalid_argument(format!("window must be 1h or 24h, not {name:?}"))
        })?;
        let counters = self.fleet.counters(window).await.map_err(status_from)?;
        Ok(Response::new(pb::CountersResponse {
            counters: counters.into_iter().collect(),
        }))
    }

    async fn waiting(
        &self,
        _request: Request<pb::WaitingRequest>,
    ) -> Result<Response<pb::WaitingResponse>, Status> {
        let waiting = self.fleet.waiting().await.map_err(status_from)?;
        Ok(Response::new(pb::WaitingResponse {
            tasks: waiting.iter().map(record_pb).collect(),
        }))
    }
}

/// The fleet layer of a task-state service.
#[derive(Debug, Clone)]
pub struct FleetClient {
    raw: Raw<Channel>,
}

impl FleetClient {
    pub fn new(channel: Channel) -> FleetClient {
        FleetClient {
            raw: Raw::new(channel).max_decoding_message_size(64 * 1024 * 1024),
        }
    }
}

#[async_trait]
impl FleetService for FleetClient {
    async fn counters(&self, window: Window) -> Result<BTreeMap<String, i64>, A2AError> {
        let message = pb::CountersRequest {
            window: window.name().to_owned(),
        };
        let response = self
            .raw
            .clone()
            .counters(request(message))
            .await
            .map_err(error_from)?;
        Ok(response.into_inner().counters.into_iter().collect())
    }

    async fn waiting(&self) -> Result<Vec<TaskRecord>, A2AError> {
        let response = self
            .raw
            .clone()
            .waiting(request(pb::WaitingRequest {}))
            .await
            .map_err(error_from)?;
        response
            .into_inner()
            .tasks
            .into_iter()
            .map(|record| record_from(Some(record)))
            .collect()
    }
}
