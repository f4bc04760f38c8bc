//! One port for HTTP and gRPC: requests with a gRPC content type go to the tonic routes
//! (the public `lf.a2a.v1.A2AService`, and in split mode the internal services), all
//! others to the axum routes. Both routers end in a catch-all, so they cannot simply be
//! merged. axum's server speaks HTTP/1.1 and cleartext HTTP/2 on the same listener.

/// Routes each request to `grpc` or `http` by its content type.
pub(crate) fn by_protocol(grpc: axum::Router, http: axum::Router) -> axum::Router {
    use tower::ServiceExt;
    let route = move |request: axum::extract::Request| {
        let is_grpc = request
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
        let target = if is_grpc { grpc.clone() } else { http.clone() };
        target.oneshot(request)
    };
    axum::Router::new().fallback_service(tower::service_fn(route))
}
