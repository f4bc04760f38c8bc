//! Task event subscriptions over gRPC: [`FanoutServer`] streams from this node's
//! [`Fanout`]; [`FanoutClient`] implements [`Fanout`] for the gateway.

use std::sync::Arc;

use futures::StreamExt;
use prometheus_client::metrics::gauge::Gauge;
use sb_fanout::{EventStream, Fanout};
use tonic::transport::Channel;
use tonic::{Request, Response, Status};
use tracing::Instrument;

use crate::pb;
use crate::pb::fanout_client::FanoutClient as Raw;
use crate::tasks::{event_from, event_pb};
use crate::wire::{error_from, is_transient, status_from, traced};

#[derive(Debug, Clone)]
pub struct FanoutServer {
    pub fanout: Arc<dyn Fanout>,
    /// Subscriptions open on this node (a scaling signal, and how an operator finds the
    /// node serving a stream).
    pub open: Gauge,
}

/// Counts a subscription for as long as its stream lives.
struct Open(Gauge);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.dec();
    }
}

impl FanoutServer {
    pub fn into_service(self) -> pb::fanout_server::FanoutServer<FanoutServer> {
        pb::fanout_server::FanoutServer::new(self)
    }
}

type EventStreamPb = futures::stream::BoxStream<'static, Result<pb::TaskEvent, Status>>;

#[tonic::async_trait]
impl pb::fanout_server::Fanout for FanoutServer {
    type SubscribeStream = EventStreamPb;

    async fn subscribe(
        &self,
        request: Request<pb::SubscribeRequest>,
    ) -> Result<Response<EventStreamPb>, Status> {
        let req = request.into_inner();
        // The stream ends when the client goes away (tonic drops it), which drops this
        // node's subscription with it.
        self.open.inc();
        let open = Open(self.open.clone());
        let events = self
            .fanout
            .subscribe(&req.task_id, req.after)
            .map(move |item| {
                let _counted = &open;
                item.map(|e| event_pb(&e)).map_err(status_from)
            });
        Ok(Response::new(events.boxed()))
    }
}

#[derive(Debug, Clone)]
pub struct FanoutClient {
    raw: Raw<Channel>,
}

impl FanoutClient {
    pub fn new(channel: Channel) -> FanoutClient {
        FanoutClient {
            raw: Raw::new(channel).max_decoding_message_size(64 * 1024 * 1024),
        }
    }
}

impl Fanout for FanoutClient {
    /// A fan-out node that goes away ends the stream with a retryable error; the client
    /// resumes with Last-Event-ID and lands on another node.
    fn subscribe(&self, task_id: &str, after: u64) -> EventStream {
        let mut raw = self.raw.clone();
        let request = pb::SubscribeRequest {
            task_id: task_id.to_owned(),
            after,
        };
        let opened = async move {
            // Opening is idempotent: a replica that just died is skipped by trying again
            // (the balancer then sees it down and picks another).
            let mut attempt = 0;
            loop {
                attempt += 1;
                match raw.subscribe(traced(request.clone())).await {
                    Ok(response) => {
                        return response
                            .into_inner()
                            .map(|item| item.map_err(error_from).and_then(event_from))
                            .boxed();
                    }
                    Err(status) if attempt < 4 && is_transient(&status) => {
                        tokio::time::sleep(std::time::Duration::from_millis(100 * attempt)).await;
                    }
                    Err(status) => {
                        return futures::stream::once(async move { Err(error_from(status)) })
                            .boxed();
                    }
                }
            }
        };
        // Opened when first polled, which for a response stream is outside the request's
        // span: the call joins the trace of whoever subscribed.
        let opened = opened.instrument(tracing::Span::current());
        futures::stream::once(opened).flatten().boxed()
    }
}
