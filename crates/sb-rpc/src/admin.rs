//! The dispatcher's dead letters over gRPC, so an operator reaches them through any
//! gateway (`/admin/…`) while the dispatcher runs elsewhere.

use std::sync::Arc;

use sb_store::DeadLetter;
use sb_webhooks::admin::DeadLetterAdmin;
use sb_webhooks::{DeliveryStatus, DispatchError};
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use crate::pb;
use crate::pb::dispatcher_admin_client::DispatcherAdminClient as Raw;
use crate::wire::{from_json, request, to_json};

#[derive(Debug, Clone)]
pub struct DispatcherAdminServer {
    pub admin: Arc<dyn DeadLetterAdmin>,
}

impl DispatcherAdminServer {
    pub fn into_service(
        self,
    ) -> pb::dispatcher_admin_server::DispatcherAdminServer<DispatcherAdminServer> {
        pb::dispatcher_admin_server::DispatcherAdminServer::new(self)
    }
}

#[tonic::async_trait]
impl pb::dispatcher_admin_server::DispatcherAdmin for DispatcherAdminServer {
    async fn list_dead_letters(
        &self,
        _request: Request<pb::ListDeadLettersRequest>,
    ) -> Result<Response<pb::ListDeadLettersResponse>, Status> {
        let letters = self.admin.dead_letters().await.map_err(unavailable)?;
        Ok(Response::new(pb::ListDeadLettersResponse {
            letters_json: to_json(&letters),
        }))
    }

    async fn delivery_status(
        &self,
        request: Request<pb::DeliveryStatusRequest>,
    ) -> Result<Response<pb::DeliveryStatusResponse>, Status> {
        let task_id = request.into_inner().task_id;
        let configs = self
            .admin
            .delivery_status(&task_id)
            .await
            .map_err(unavailable)?;
        Ok(Response::new(pb::DeliveryStatusResponse {
            configs_json: to_json(&configs),
        }))
    }

    async fn redrive(
        &self,
        request: Request<pb::RedriveRequest>,
    ) -> Result<Response<pb::RedriveResponse>, Status> {
        let id = request.into_inner().id;
        let found = self.admin.redrive(&id).await.map_err(unavailable)?;
        Ok(Response::new(pb::RedriveResponse { found }))
    }
}

/// The dead letters of a dispatcher service.
#[derive(Debug, Clone)]
pub struct DispatcherAdminClient {
    raw: Raw<Channel>,
}

impl DispatcherAdminClient {
    pub fn new(channel: Channel) -> DispatcherAdminClient {
        DispatcherAdminClient {
            raw: Raw::new(channel).max_decoding_message_size(64 * 1024 * 1024),
        }
    }
}

fn unavailable(error: DispatchError) -> Status {
    Status::unavailable(error.to_string())
}

fn unreachable(status: Status) -> DispatchError {
    DispatchError::Unreachable(status.message().to_owned())
}

#[tonic::async_trait]
impl DeadLetterAdmin for DispatcherAdminClient {
    async fn dead_letters(&self) -> Result<Vec<DeadLetter>, DispatchError> {
        let response = self
            .raw
            .clone()
            .list_dead_letters(request(pb::ListDeadLettersRequest {}))
            .await
            .map_err(unreachable)?;
        from_json(&response.into_inner().letters_json, "dead letters")
            .map_err(|e| DispatchError::Unreachable(e.message))
    }

    /// Not retried: a redrive that reached the dispatcher but whose answer was lost
    /// would otherwise be queued twice.
    async fn redrive(&self, id: &str) -> Result<bool, DispatchError> {
        let message = pb::RedriveRequest { id: id.to_owned() };
        let response = self
            .raw
            .clone()
            .redrive(request(message))
            .await
            .map_err(unreachable)?;
        Ok(response.into_inner().found)
    }

    async fn delivery_status(&self, task_id: &str) -> Result<Vec<DeliveryStatus>, DispatchError> {
        let message = pb::DeliveryStatusRequest {
            task_id: task_id.to_owned(),
        };
        let response = self
            .raw
            .clone()
            .delivery_status(request(message))
            .await
            .map_err(unreachable)?;
        from_json(&response.into_inner().configs_json, "delivery status")
            .map_err(|e| DispatchError::Unreachable(e.message))
    }
}
