//! The gateway's Prometheus metrics: requests by operation and outcome, open streams,
//! ceremonies' firings.
//!
//! Handlers tag their responses with what they did ([`Tagged`]); the dispatcher counts
//! once per request from the tags, so no handler path can forget to.

use std::borrow::Cow;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `jsonrpc`, `rest`, `card` or `grpc`.
    pub binding: &'static str,
    /// The A2A operation (`SendMessage`, …) or `unknown`.
    pub operation: &'static str,
    /// `ok`, `stream`, or the error reason (`TASK_NOT_FOUND`, …).
    pub outcome: Cow<'static, str>,
}

/// A ceremony's firing, by what set it off and how many of its targets got a task (not
/// by ceremony: any agent with a key may create ceremonies, and a label per id would let
/// it grow the series without bound).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FiringLabels {
    /// `schedule`, `manual` or `missed` (due while no gateway was up, past the grace).
    pub trigger: &'static str,
    /// `sent` (every target), `partly_sent`, `not_sent`, or `missed`.
    pub outcome: &'static str,
}

#[derive(Debug, Default)]
pub struct GatewayMetrics {
    requests: Family<RequestLabels, Counter>,
    pub open_streams: Gauge,
    pub ceremony_firings: Family<FiringLabels, Counter>,
}

/// What a handler did, attached to its response for the dispatcher to count. Names,
/// not copies: every request is counted, and its labels are looked up without an
/// allocation (the outcome is one only for a gRPC status with a reason of its own).
#[derive(Clone, Debug, PartialEq)]
pub struct Tagged {
    pub operation: &'static str,
    pub outcome: Cow<'static, str>,
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
        registry.register(
            "switchboard_ceremony_firings",
            "Ceremonies' firings on this node, by trigger and how many targets got a task",
            self.ceremony_firings.clone(),
        );
    }

    pub fn request(&self, binding: &'static str, tagged: Option<&Tagged>) {
        let (operation, outcome) = match tagged {
            Some(t) => (t.operation, t.outcome.clone()),
            None => ("unknown", Cow::Borrowed("unrouted")),
        };
        self.requests
            .get_or_create(&RequestLabels {
                binding,
                operation,
                outcome,
            })
            .inc();
    }
}

/// Tags a response with its operation and outcome.
pub fn tag(
    mut response: axum::response::Response,
    operation: &'static str,
    outcome: &'static str,
) -> axum::response::Response {
    response.extensions_mut().insert(Tagged {
        operation,
        outcome: Cow::Borrowed(outcome),
    });
    response
}

/// Names the operation of an already tagged response (the outcome stays).
pub fn name_operation(
    mut response: axum::response::Response,
    operation: &'static str,
) -> axum::response::Response {
    match response.extensions_mut().get_mut::<Tagged>() {
        Some(tagged) => tagged.operation = operation,
        None => {
            response.extensions_mut().insert(Tagged {
                operation,
                outcome: Cow::Borrowed("stream"),
            });
        }
    }
    response
}

/// The outcome label of a result.
pub fn outcome<T>(result: &Result<T, sb_protocol::A2AError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(e) => e.kind.reason(),
    }
}
