//! What every client and server here share: JSON payloads, the A2A error carried in a
//! status, per-call deadlines, and connecting to a set of replicas.

use std::time::Duration;

use sb_protocol::{A2AError, ErrorKind};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::transport::{Channel, Endpoint};

/// Deadline of one unary call. Long enough for a loaded store, short enough that a dead
/// replica costs one retry rather than a hung request.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

pub fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing our own model types cannot fail (no maps with non-string keys).
    serde_json::to_vec(value).unwrap_or_default()
}

/// Decodes a JSON field of a request or response. A bad payload is the sender's bug:
/// invalid, and not worth retrying unchanged.
pub fn from_json<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, A2AError> {
    serde_json::from_slice(bytes).map_err(|e| malformed(what, &e))
}

/// Why a JSON field of a request or response could not be read (see [`from_json`]).
pub fn malformed(what: &str, err: &serde_json::Error) -> A2AError {
    A2AError::new(
        ErrorKind::InvalidParams,
        format!("malformed {what} on the internal API: {err}"),
    )
}

/// The A2A error a failed internal call carries, as a status whose details hold the
/// error's JSON (so the edge answers exactly as an in-process call would). Its code is
/// the public binding's, from the one mapping in `sb_a2a_grpc::status`.
pub fn status_from(err: A2AError) -> tonic::Status {
    let code = sb_a2a_grpc::status::code(err.kind);
    let details = to_json(&err);
    tonic::Status::with_details(code, err.message, details.into())
}

/// The A2A error of a failed call: the one the server sent, or, when the call failed
/// before reaching it (replica down, deadline), a retryable internal error.
pub fn error_from(status: tonic::Status) -> A2AError {
    if let Ok(err) = serde_json::from_slice::<A2AError>(status.details()) {
        return err;
    }
    tracing::warn!(code = ?status.code(), message = status.message(), "internal call failed");
    let message = match status.code() {
        tonic::Code::Unavailable => "an internal service is unavailable; try again",
        tonic::Code::DeadlineExceeded => "an internal service did not answer in time; try again",
        _ => "an internal call failed; try again",
    };
    A2AError::internal(message).retryable(true)
}

/// Whether a failed idempotent call may be sent again (it never reached a server, or the
/// server was shutting down).
pub fn is_transient(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::Unavailable | tonic::Code::Cancelled
    ) && status.details().is_empty()
}

/// A request with the standard deadline, in the caller's trace.
pub fn request<T>(message: T) -> tonic::Request<T> {
    let mut request = traced(message);
    request.set_timeout(CALL_TIMEOUT);
    request
}

/// A request carrying the current span's trace context in its metadata (no deadline:
/// for streams that last as long as they are wanted).
pub fn traced<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    let mut headers = http::HeaderMap::new();
    sb_telemetry::inject(&mut headers);
    for (name, value) in &headers {
        let key = tonic::metadata::MetadataKey::from_bytes(name.as_str().as_bytes());
        let value = value
            .to_str()
            .ok()
            .map(tonic::metadata::MetadataValue::try_from);
        if let (Ok(key), Some(Ok(value))) = (key, value) {
            request.metadata_mut().insert(key, value);
        }
    }
    request
}

/// One channel over every replica of a service (comma-separated `http://host:port`
/// URLs), balancing calls across them and skipping replicas that are down. Connects
/// lazily, so services may start in any order.
pub fn connect(urls: &str) -> Result<Channel, String> {
    let mut endpoints = Vec::new();
    for url in urls.split(',').map(str::trim).filter(|u| !u.is_empty()) {
        let endpoint = Endpoint::from_shared(url.to_owned())
            .map_err(|e| format!("invalid service URL {url:?}: {e}"))?
            .connect_timeout(Duration::from_secs(3))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(5))
            .keep_alive_while_idle(true)
            // A stream we drop (a subscriber that left) is reset; the frames the server
            // had already sent must find it remembered, or each one counts toward the
            // limit of resets after which h2 closes the whole connection.
            .http2_max_concurrent_reset_streams(4096)
            .http2_reset_stream_duration(Duration::from_secs(2));
        endpoints.push(endpoint);
    }
    if endpoints.is_empty() {
        return Err("no service URL given".to_owned());
    }
    Ok(Channel::balance_list(endpoints.into_iter()))
}
