//! The public A2A edge: serves every hosted agent under `/agents/{name}/` (and the
//! default agent at the root) over JSON-RPC and HTTP+JSON, A2A 1.0 and 0.3, with SSE,
//! and over gRPC (`lf.a2a.v1.A2AService`, A2A 1.0), where the `tenant` names the agent.
//!
//! # Layout
//! - [`router`]: the axum router; all A2A paths go through one handler that picks the
//!   agent, then the card, JSON-RPC or REST handler.
//! - [`binding`]: which HTTP binding a request is for, read once from method and path.
//! - [`ops`]: the operations, independent of binding and version.
//! - [`jsonrpc`], [`rest`]: the two HTTP bindings, decoding and encoding per dialect.
//! - [`grpc`]: the gRPC binding, a tonic service over the same operations and state.
//! - [`wire`]: result encoding per dialect and SSE framing.
//! - [`cards`]: Agent Card responses with conditional GET.
//! - [`fleet`]: the fleet's own endpoints (`/fleet/health`) and who may see what there.
//! - [`ceremonies`]: scheduled invocations: their API (`/api/ceremonies`, `X-API-Key`)
//!   and the loop that fires them.
//! - [`state`]: [`AppState`], what the bindings share, and how it is built.
//!
//! The gateway holds no state of its own: tasks, streams, push configs and cards come
//! from the services behind the traits in [`AppState`].

pub mod auth;
pub mod binding;
pub mod cards;
pub mod ceremonies;
pub mod fleet;
pub mod grpc;
pub mod jsonrpc;
pub mod jwt;
pub mod limits;
pub mod metrics;
pub mod ops;
pub mod rest;
pub mod state;
pub mod wire;

pub use state::{AppState, EdgeLimits, Health, Services};

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::get;
use binding::Binding;
use sb_protocol::{A2AError, ErrorKind, Version};
use sb_tasks::Scope;
use serde_json::json;

async fn healthz(State(state): State<Arc<AppState>>) -> Response {
    state.health.response()
}

/// A request as the handlers see it, body already read within the size limit.
#[derive(Debug)]
pub struct Request {
    pub method: Method,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn last_event_id(&self) -> Option<u64> {
        last_event_id(&self.headers)
    }

    pub fn activates(&self, uri: &str) -> bool {
        activates(&self.headers, uri)
    }
}

/// The resume cursor: a decimal `Last-Event-ID` up to 2^53-1 (anything else, e.g. a
/// UUID from another server, counts as absent). gRPC metadata arrives as the same headers.
pub fn last_event_id(headers: &HeaderMap) -> Option<u64> {
    let value = headers.get("last-event-id")?.to_str().ok()?;
    let value: u64 = value.trim().parse().ok()?;
    (value < (1 << 53)).then_some(value)
}

/// Whether the client activated `uri` (`A2A-Extensions`, or 0.3's `X-A2A-Extensions`).
pub fn activates(headers: &HeaderMap, uri: &str) -> bool {
    ["a2a-extensions", "x-a2a-extensions"].iter().any(|name| {
        headers
            .get_all(*name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|item| item.trim() == uri)
    })
}

/// The public router. Its state is shared, not cloned: axum clones a router's state
/// for every request, and an `AppState` is a dozen reference counts.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .fallback(serve_request)
        .with_state(Arc::new(state))
}

fn serve_request(
    State(state): State<Arc<AppState>>,
    request: axum::extract::Request,
) -> impl Future<Output = Response> + Send {
    // Taken apart, not extracted piece by piece: extractors copy the header map.
    let (parts, body) = request.into_parts();
    let axum::http::request::Parts {
        method,
        uri,
        headers,
        ..
    } = parts;
    let binding = Binding::of(&method, uri.path());
    let metrics = state.metrics.clone();
    // The root of a task's trace, or a child of the caller's (`traceparent`).
    let span = tracing::info_span!("a2a_request", binding = binding.label(), method = %method, path = %uri.path());
    sb_telemetry::extract(&span, &headers);
    // Mapped rather than awaited in an async block, which would hold the routed future
    // twice: axum boxes this future for every request, so its size is paid per request.
    let routed = tracing::Instrument::instrument(
        route_request(state, binding, method, uri, headers, body),
        span,
    );
    futures::FutureExt::map(routed, move |response| {
        metrics.request(
            binding.label(),
            response.extensions().get::<metrics::Tagged>(),
        );
        response
    })
}

async fn route_request(
    state: Arc<AppState>,
    binding: Binding,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let path = uri.path().to_owned();
    // Reading stops at the limit, so an oversized body is never buffered whole.
    let Ok(body) = axum::body::to_bytes(body, state.max_body_bytes).await else {
        let err = A2AError::new(
            ErrorKind::PayloadTooLarge,
            format!(
                "request body exceeds the limit of {} bytes",
                state.max_body_bytes
            ),
        );
        // JSON-RPC callers get a JSON-RPC error, REST callers a Status body.
        let body = if binding == Binding::JsonRpc {
            json!({"jsonrpc": "2.0", "id": null, "error": err.jsonrpc_error(Version::V1_0)})
        } else {
            err.rest_body(Version::V1_0)
        };
        return wire::json_response(StatusCode::PAYLOAD_TOO_LARGE, &body);
    };
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let fleet = state.registry.fleet();
    let (agent, rest, at_root) = match segments.as_slice() {
        ["agents", name, rest @ ..] => ((*name).to_owned(), rest.to_vec(), false),
        rest => match fleet.default_agent() {
            Some(name) => (name.to_owned(), rest.to_vec(), true),
            None => return not_found(&path),
        },
    };
    if !state.takes_requests_for(&fleet, &agent) {
        return not_found(&path);
    }
    let req = Request {
        method,
        path: path.clone(),
        query: uri.query().map(str::to_owned),
        headers,
        body,
    };
    // Cards are public (spec §8): no authentication.
    if binding == Binding::Card && req.method == Method::GET {
        let card = match at_root {
            true => fleet.root.clone(),
            false => fleet.card(&agent),
        };
        return match card {
            Some(entry) => metrics::tag(cards::respond(&entry, &req.headers), "GetAgentCard", "ok"),
            None => not_found(&path),
        };
    }
    drop(fleet);
    let is_jsonrpc = binding == Binding::JsonRpc;
    let caller = match state.auth.get(&agent).map(|a| a.authenticate(&req.headers)) {
        None => auth::Caller::Anonymous,
        Some(Ok(caller)) => caller,
        Some(Err(refusal)) => return unauthenticated(&refusal, is_jsonrpc),
    };
    let scope = Scope {
        agent,
        owner: caller.owner().to_owned(),
    };
    // JSON-RPC lives at `{base}/a2a`; the TCK posts to the card URL with a trailing
    // slash, and some clients post to the base itself.
    if is_jsonrpc {
        return jsonrpc::handle(&state, &scope, req).await;
    }
    match rest::handle(&state, &scope, req, &rest).await {
        Some(response) => response,
        None => not_found(&path),
    }
}

/// 401 with the challenge; JSON-RPC callers get a JSON-RPC error body as well.
fn unauthenticated(refusal: &auth::Refusal, is_jsonrpc: bool) -> Response {
    let err = A2AError::new(ErrorKind::Unauthenticated, refusal.message.clone());
    let body = if is_jsonrpc {
        json!({"jsonrpc": "2.0", "id": null, "error": err.jsonrpc_error(Version::V1_0)})
    } else {
        err.rest_body(Version::V1_0)
    };
    let mut response = wire::json_response(StatusCode::UNAUTHORIZED, &body);
    if let Ok(value) = axum::http::HeaderValue::from_str(&refusal.challenge) {
        response
            .headers_mut()
            .insert(axum::http::header::WWW_AUTHENTICATE, value);
    }
    response
}

fn not_found(path: &str) -> Response {
    let err = A2AError::new(
        ErrorKind::MethodNotFound,
        format!("no A2A endpoint at {path}"),
    );
    wire::json_response(StatusCode::NOT_FOUND, &err.rest_body(Version::V1_0))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The size of the future `handler` returns, without calling it.
    fn future_size<A, B, F, H: FnOnce(A, B) -> F>(_: &H) -> usize {
        std::mem::size_of::<F>()
    }

    /// axum boxes this future once per request. At 8 KiB it shared the allocator's size
    /// class with hyper's connection buffers, which then landed on memory it had touched:
    /// every idle stream kept more resident (bench/profile.md, B4).
    #[test]
    fn a_request_keeps_a_small_future() {
        let size = future_size(&serve_request);
        assert!(
            size <= 4096,
            "serve_request's future is {size} bytes; box the large operation that grew it"
        );
    }

    #[tokio::test]
    async fn health_answers_503_with_the_fault() {
        assert_eq!(Health::default().response().status(), StatusCode::OK);
        let faulty = Health::watching(|| Some("the disk is full".to_owned()));
        let response = faulty.response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = http_body_util::BodyExt::collect(response.into_body())
            .await
            .unwrap()
            .to_bytes();
        assert_eq!(&body[..], b"unhealthy: the disk is full");
    }
}
