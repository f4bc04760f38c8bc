//! Agent Card responses: cacheable, with a strong ETag and `If-None-Match` (spec §8.6).

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sb_registry::CardEntry;

/// Cards change only with the configuration, so clients may cache them briefly.
const CACHE_CONTROL: &str = "public, max-age=300";

pub fn respond(entry: &CardEntry, request_headers: &HeaderMap) -> Response {
    let version = request_headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok());
    let rendered = entry.for_version(version);
    let matches = request_headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',')
                .any(|t| t.trim() == rendered.etag || t.trim() == "*")
        });
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, rendered.json.clone()).into_response()
    };
    let headers = response.headers_mut();
    if !matches {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    headers.insert(header::VARY, HeaderValue::from_static("A2A-Version"));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    if let Ok(etag) = HeaderValue::from_str(&rendered.etag) {
        headers.insert(header::ETAG, etag);
    }
    let last_modified = entry
        .last_modified
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    if let Ok(value) = HeaderValue::from_str(&last_modified) {
        headers.insert(header::LAST_MODIFIED, value);
    }
    response
}
