//! Bodies `/mcp` cannot read, answered as JSON-RPC errors.
//!
//! rmcp answers a JSON body that is not a JSON-RPC message with 415 Unsupported Media
//! Type and a line of plain text, even though the Content-Type was `application/json`.
//! That points the client at its headers when its body is at fault. The caller is
//! talking JSON-RPC, which has a code for each case: -32700 when the body is not JSON
//! and -32600 when it is JSON but not a request, notification or response. Each is sent
//! with HTTP 400, as the MCP transport asks for input a server cannot accept. Requests
//! that rmcp refuses for other reasons pass through unchanged: a wrong Content-Type is
//! still 415, a missing session 400 or 404.

use axum::body::Body;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, Method, StatusCode};
use sb_protocol::{ErrorKind, media_type_essence};
use serde::de::IgnoredAny;
use serde_json::json;

/// The largest request body `/mcp` reads; rmcp is given the same limit.
pub const MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// Middleware in front of rmcp's service. It keeps a POST's JSON body so that a refusal
/// can say what is wrong with it.
pub async fn as_json_rpc_errors(request: Request, next: Next) -> Response {
    if request.method() != Method::POST || !declares_json(request.headers()) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_REQUEST_BYTES).await else {
        return refusal(
            ErrorKind::PayloadTooLarge,
            format!(
                "the request body could not be read whole, or is over {MAX_REQUEST_BYTES} bytes"
            ),
        );
    };
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes.clone())))
        .await;
    if response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    // The Content-Type was JSON, so what rmcp refused is the body itself.
    let detail = reason_of(response).await;
    match serde_json::from_slice::<IgnoredAny>(&bytes) {
        Err(e) => refusal(
            ErrorKind::ParseError,
            format!("the request body is not JSON: {e}"),
        ),
        Ok(_) => refusal(
            ErrorKind::InvalidRequest,
            format!(
                "the request body is JSON but not a JSON-RPC 2.0 request, notification or response ({detail})"
            ),
        ),
    }
}

fn declares_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| media_type_essence(value) == "application/json")
}

/// rmcp's own text, kept as the detail: it names the field or shape it missed.
async fn reason_of(response: Response) -> String {
    let Ok(text) = axum::body::to_bytes(response.into_body(), 4096).await else {
        return String::from("no reason given");
    };
    let text = String::from_utf8_lossy(&text);
    let text = text.trim();
    text.strip_prefix("fail to deserialize request body ")
        .unwrap_or(text)
        .to_owned()
}

/// A JSON-RPC error with no id, its code and HTTP status those of `kind` in A2A's table
/// (the same JSON-RPC codes).
fn refusal(kind: ErrorKind, message: String) -> Response {
    let status = StatusCode::from_u16(kind.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let code = kind.jsonrpc_code();
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (
        status,
        [(CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::body::Body;
    use http::{Request, StatusCode};
    use serde_json::Value;
    use tokio_util::sync::CancellationToken;
    use tower::ServiceExt;

    use crate::call::Caller;
    use crate::catalog::{Catalog, CatalogFeed};
    use crate::server::http_service;

    async fn post(content_type: &str, body: &'static str) -> (StatusCode, String) {
        let caller = Caller {
            http: reqwest::Client::new(),
            credentials: Default::default(),
            wait: Duration::from_secs(1),
        };
        let feed = CatalogFeed::fixed(Catalog::of([]));
        let service = http_service(feed, caller, Vec::new(), CancellationToken::new());
        let request = Request::post("/")
            .header("host", "localhost")
            .header("content-type", content_type)
            .header("accept", "application/json, text/event-stream")
            .body(Body::from(body))
            .unwrap();
        let response = service.oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    fn error_of(body: &str) -> (i64, String) {
        let value: Value = serde_json::from_str(body).unwrap();
        assert_eq!(value["jsonrpc"], "2.0", "{body}");
        assert_eq!(value["id"], Value::Null, "{body}");
        let error = &value["error"];
        (
            error["code"].as_i64().unwrap(),
            error["message"].as_str().unwrap().to_owned(),
        )
    }

    #[tokio::test]
    async fn a_body_that_is_not_json_is_a_parse_error() {
        for body in ["", "{", "{\"jsonrpc\": \"2.0\",}"] {
            let (status, text) = post("application/json", body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}: {text}");
            let (code, message) = error_of(&text);
            assert_eq!(code, -32700, "{body:?}: {text}");
            assert!(
                message.starts_with("the request body is not JSON: "),
                "{message}"
            );
        }
    }

    #[tokio::test]
    async fn json_that_is_not_a_json_rpc_message_is_an_invalid_request() {
        for body in ["{\"hello\": 1}", "[1, 2]", "\"initialize\""] {
            let (status, text) = post("application/json; charset=utf-8", body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}: {text}");
            let (code, message) = error_of(&text);
            assert_eq!(code, -32600, "{body:?}: {text}");
            assert!(message.contains("not a JSON-RPC 2.0 request"), "{message}");
            assert!(!message.contains("fail to deserialize"), "{message}");
        }
    }

    #[tokio::test]
    async fn a_body_of_another_type_is_still_an_unsupported_media_type() {
        let (status, text) = post("text/plain", "{\"hello\": 1}").await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{text}");
    }

    #[tokio::test]
    async fn a_request_it_can_read_reaches_the_server_whole() {
        let initialize = r#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let (status, text) = post("application/json", initialize).await;
        assert_eq!(status, StatusCode::OK, "{text}");
        assert!(text.contains(r#""id":7"#), "{text}");
        assert!(text.contains(r#""serverInfo""#), "{text}");
    }
}
