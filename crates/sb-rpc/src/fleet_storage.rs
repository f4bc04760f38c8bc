//! The fleet layer's storage over gRPC ([`FleetStore`]): a gateway of the split
//! deployment keeps no state, so what it keeps for ceremonies (definitions, cursors,
//! claims on firings, runs) goes through the task-state service to its backend. Each
//! call is one of the backend's atomic primitives, so the ceremonies' code runs
//! unchanged over either, and replicas agree exactly as they do on the backend.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use sb_store::{FleetStore, StoreError, StoreResult};
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use crate::pb;
use crate::pb::fleet_storage_client::FleetStorageClient as Raw;
use crate::wire::request;

/// Serves the backend's [`FleetStore`].
#[derive(Debug, Clone)]
pub struct FleetStorageServer {
    pub store: Arc<dyn FleetStore>,
}

impl FleetStorageServer {
    pub fn into_service(self) -> pb::fleet_storage_server::FleetStorageServer<FleetStorageServer> {
        pb::fleet_storage_server::FleetStorageServer::new(self)
    }
}

/// A backend failure: the caller may try again.
fn unavailable(error: StoreError) -> Status {
    Status::unavailable(error.to_string())
}

fn done(done: bool) -> Result<Response<pb::StoredResponse>, Status> {
    Ok(Response::new(pb::StoredResponse { done }))
}

#[tonic::async_trait]
impl pb::fleet_storage_server::FleetStorage for FleetStorageServer {
    async fn add_counters(
        &self,
        request: Request<pb::AddCountersRequest>,
    ) -> Result<Response<pb::StoredResponse>, Status> {
        let call = request.into_inner();
        let deltas: Vec<(String, i64)> = call
            .deltas
            .into_iter()
            .map(|d| (d.field, d.delta))
            .collect();
        let store = &self.store;
        store
            .add_counters(&call.key, &deltas, call.expires_at_ms)
            .await
            .map_err(unavailable)?;
        done(false)
    }

    async fn read_counters(
        &self,
        request: Request<pb::ReadCountersRequest>,
    ) -> Result<Response<pb::ReadCountersResponse>, Status> {
        let keys = request.into_inner().keys;
        let maps = self.store.read_counters(&keys).await.map_err(unavailable)?;
        let maps = maps
            .into_iter()
            .map(|counters| pb::CounterMap {
                counters: counters.into_iter().collect(),
            })
            .collect();
        Ok(Response::new(pb::ReadCountersResponse { maps }))
    }

    async fn set_put(
        &self,
        request: Request<pb::SetPutRequest>,
    ) -> Result<Response<pb::StoredResponse>, Status> {
        let call = request.into_inner();
        let store = &self.store;
        store
            .set_put(&call.set, &call.member, call.score)
            .await
            .map_err(unavailable)?;
        done(false)
    }

    async fn set_remove(
        &self,
        request: Request<pb::SetMemberRequest>,
    ) -> Result<Response<pb::StoredResponse>, Status> {
        let call = request.into_inner();
        let removed = self.store.set_remove(&call.set, &call.member).await;
        done(removed.map_err(unavailable)?)
    }

    async fn set_members(
        &self,
        request: Request<pb::SetMembersRequest>,
    ) -> Result<Response<pb::SetMembersResponse>, Status> {
        let set = request.into_inner().set;
        let members = self.store.set_members(&set).await.map_err(unavailable)?;
        let members = members
            .into_iter()
            .map(|(member, score)| pb::ScoredMember { member, score })
            .collect();
        Ok(Response::new(pb::SetMembersResponse { members }))
    }

    async fn doc_put(
        &self,
        request: Request<pb::DocPutRequest>,
    ) -> Result<Response<pb::StoredResponse>, Status> {
        let call = request.into_inner();
        let store = &self.store;
        store
            .doc_put(&call.collection, &call.id, call.value)
            .await
            .map_err(unavailable)?;
        done(false)
    }

    async fn doc_swap(
        &self,
        request: Request<pb::DocSwapRequest>,
    ) -> Result<Response<pb::StoredResponse>, Status> {
        let call = request.into_inner();
        let swapped = self
            .store
            .doc_swap(
                &call.collection,
                &call.id,
                call.expected.as_deref(),
                call.value,
            )
            .await;
        done(swapped.map_err(unavailable)?)
    }

    async fn doc_get(
        &self,
        request: Request<pb::DocRequest>,
    ) -> Result<Response<pb::DocGetResponse>, Status> {
        let call = request.into_inner();
        let value = self.store.doc_get(&call.collection, &call.id).await;
        Ok(Response::new(pb::DocGetResponse {
            value: value.map_err(unavailable)?,
        }))
    }

    async fn doc_list(
        &self,
        request: Request<pb::DocListRequest>,
    ) -> Result<Response<pb::DocListResponse>, Status> {
        let collection = request.into_inner().collection;
        let docs = self
            .store
            .doc_list(&collection)
            .await
            .map_err(unavailable)?;
        let docs = docs
            .into_iter()
            .map(|(id, value)| pb::Doc { id, value })
            .collect();
        Ok(Response::new(pb::DocListResponse { docs }))
    }

    async fn doc_remove(
        &self,
        request: Request<pb::DocRequest>,
    ) -> Result<Response<pb::StoredResponse>, Status> {
        let call = request.into_inner();
        let removed = self.store.doc_remove(&call.collection, &call.id).await;
        done(removed.map_err(unavailable)?)
    }

    async fn claim(
        &self,
        request: Request<pb::ClaimRequest>,
    ) -> Result<Response<pb::StoredResponse>, Status> {
        let call = request.into_inner();
        let claimed = self
            .store
            .claim(&call.key, &call.holder, call.expires_at_ms)
            .await;
        done(claimed.map_err(unavailable)?)
    }
}

/// The task-state service's [`FleetStore`], as if it were this process's.
#[derive(Debug, Clone)]
pub struct FleetStorageClient {
    raw: Raw<Channel>,
}

impl FleetStorageClient {
    pub fn new(channel: Channel) -> FleetStorageClient {
        FleetStorageClient {
            raw: Raw::new(channel).max_decoding_message_size(64 * 1024 * 1024),
        }
    }
}

/// A failed call as the store's failure (the backend's reason, or why it was not
/// reached).
fn failed(status: Status) -> StoreError {
    StoreError::backend(format!("fleet storage: {}", status.message()))
}

#[async_trait]
impl FleetStore for FleetStorageClient {
    async fn add_counters(
        &self,
        key: &str,
        deltas: &[(String, i64)],
        expires_at_ms: u64,
    ) -> StoreResult<()> {
        let deltas = deltas
            .iter()
            .map(|(field, delta)| pb::CounterDelta {
                field: field.clone(),
                delta: *delta,
            })
            .collect();
        let call = pb::AddCountersRequest {
            key: key.to_owned(),
            deltas,
            expires_at_ms,
        };
        let raw = &mut self.raw.clone();
        raw.add_counters(request(call)).await.map_err(failed)?;
        Ok(())
    }

    async fn read_counters(&self, keys: &[String]) -> StoreResult<Vec<BTreeMap<String, i64>>> {
        let call = pb::ReadCountersRequest {
            keys: keys.to_vec(),
        };
        let raw = &mut self.raw.clone();
        let maps = raw.read_counters(request(call)).await.map_err(failed)?;
        let maps = maps.into_inner().maps.into_iter();
        Ok(maps.map(|m| m.counters.into_iter().collect()).collect())
    }

    async fn set_put(&self, set: &str, member: &str, score: i64) -> StoreResult<()> {
        let call = pb::SetPutRequest {
            set: set.to_owned(),
            member: member.to_owned(),
            score,
        };
        let raw = &mut self.raw.clone();
        raw.set_put(request(call)).await.map_err(failed)?;
        Ok(())
    }

    async fn set_remove(&self, set: &str, member: &str) -> StoreResult<bool> {
        let call = pb::SetMemberRequest {
            set: set.to_owned(),
            member: member.to_owned(),
        };
        let raw = &mut self.raw.clone();
        let answer = raw.set_remove(request(call)).await.map_err(failed)?;
        Ok(answer.into_inner().done)
    }

    async fn set_members(&self, set: &str) -> StoreResult<Vec<(String, i64)>> {
        let call = pb::SetMembersRequest {
            set: set.to_owned(),
        };
        let raw = &mut self.raw.clone();
        let members = raw.set_members(request(call)).await.map_err(failed)?;
        let members = members.into_inner().members.into_iter();
        Ok(members.map(|m| (m.member, m.score)).collect())
    }

    async fn doc_put(&self, collection: &str, id: &str, value: Vec<u8>) -> StoreResult<()> {
        let call = pb::DocPutRequest {
            collection: collection.to_owned(),
            id: id.to_owned(),
            value,
        };
        let raw = &mut self.raw.clone();
        raw.doc_put(request(call)).await.map_err(failed)?;
        Ok(())
    }

    async fn doc_swap(
        &self,
        collection: &str,
        id: &str,
        expected: Option<&[u8]>,
        new: Option<Vec<u8>>,
    ) -> StoreResult<bool> {
        let call = pb::DocSwapRequest {
            collection: collection.to_owned(),
            id: id.to_owned(),
            expected: expected.map(<[u8]>::to_vec),
            value: new,
        };
        let raw = &mut self.raw.clone();
        let answer = raw.doc_swap(request(call)).await.map_err(failed)?;
        Ok(answer.into_inner().done)
    }

    async fn doc_get(&self, collection: &str, id: &str) -> StoreResult<Option<Vec<u8>>> {
        let call = pb::DocRequest {
            collection: collection.to_owned(),
            id: id.to_owned(),
        };
        let raw = &mut self.raw.clone();
        let answer = raw.doc_get(request(call)).await.map_err(failed)?;
        Ok(answer.into_inner().value)
    }

    async fn doc_list(&self, collection: &str) -> StoreResult<Vec<(String, Vec<u8>)>> {
        let call = pb::DocListRequest {
            collection: collection.to_owned(),
        };
        let raw = &mut self.raw.clone();
        let docs = raw.doc_list(request(call)).await.map_err(failed)?;
        let docs = docs.into_inner().docs.into_iter();
        Ok(docs.map(|d| (d.id, d.value)).collect())
    }

    async fn doc_remove(&self, collection: &str, id: &str) -> StoreResult<bool> {
        let call = pb::DocRequest {
            collection: collection.to_owned(),
            id: id.to_owned(),
        };
        let raw = &mut self.raw.clone();
        let answer = raw.doc_remove(request(call)).await.map_err(failed)?;
        Ok(answer.into_inner().done)
    }

    async fn claim(&self, key: &str, holder: &str, expires_at_ms: u64) -> StoreResult<bool> {
        let call = pb::ClaimRequest {
            key: key.to_owned(),
            holder: holder.to_owned(),
            expires_at_ms,
        };
        let raw = &mut self.raw.clone();
        let answer = raw.claim(request(call)).await.map_err(failed)?;
        Ok(answer.into_inner().done)
    }
}

/// The store conformance suite's fleet part, over real gRPC on loopback in front of the
/// in-memory backend: the client keeps every promise the backends keep.
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    async fn make() -> FleetStorageClient {
        let server = FleetStorageServer {
            store: Arc::new(sb_store::MemoryStore::new()),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(server.into_service())
                .serve_with_incoming(incoming),
        );
        FleetStorageClient::new(crate::wire::connect(&url).unwrap())
    }

    sb_store::fleet_test_suite!();
}
