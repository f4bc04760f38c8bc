//! The gateway's Prometheus metrics: requests by operation and outcome, open streams.
//!
//! Handlers tag their responses with what they did ([`Tagged`]); the dispatcher counts
//! once per request from the tags, so no handler path can forget to.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `jsonrpc`, `rest`, `card` or `grpc`.
    pub binding: String,
    /// The A2A operation (`SendMessage`, …) or `unknown`.
    pub operation: String,
    /// `ok`, `stream`, or the error reason (`TASK_NOT_FOUND`, …).
    pub outcome: String,
}

#[derive(Debug, Default)]
pub struct GatewayMetrics {
    requests: Family<RequestLabels, Counter>,
    pub open_streams: Gauge,
}

/// What a handler did, attached to its response for the dispatcher to count.
#[derive(Clone, Debug, PartialEq)]
pub struct Tagged {
    pub operation: String,
    pub outcome: String,
}

impl GatewayMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "switchboard_requests",
            "A2A requests by binding, operation and outcome",
            self.requests.clone(),
        );
        registry.register(
            "switchboard_open_streams",
            "SSE streams open on this node",
            self.open_streams.clone(),
        );
    }

    pub fn request(&self, binding: &str, tagged: Option<&Tagged>) {
        let (operation, outcome) = match tagged {
            Some(t) => (t.operation.clone(), t.outcome.clone()),
            None => ("unknown".to_owned(), "unrouted".to_owned()),
        };
        self.requests
            .get_or_create(&RequestLabels {
                binding: binding.to_owned(),
                operation,
                outcome,
            })
            .inc();
    }
}

/// Tags a response with its operation and outcome.
pub fn tag(
    mut response: axum::response::Response,
    operation: impl Into<String>,
    outcome: impl Into<String>,
) -> axum::response::Response {
    response.extensions_mut().insert(Tagged {
        operation: operation.into(),
        outcome: outcome.into(),
    });
    response
}

/// Names the operation of an already tagged response (the outcome stays).
pub fn name_operation(
    mut response: axum::response::Response,
    operation: &str,
) -> axum::response::Response {
    let outcome = response
        .extensions()
        .get::<Tagged>()
        .map(|t| t.outcome.clone())
        .unwrap_or_else(|| "stream".to_owned());
    response.extensions_mut().insert(Tagged {
        operation: operation.to_owned(),
        outcome,
    });
    response
}

/// The outcome label of a result.
pub fn outcome<T>(result: &Result<T, sb_protocol::A2AError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(e) => e.kind.reason(),
    }
}
