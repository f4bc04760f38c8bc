//! A webhook receiver on a free loopback port, for the tests that check what arrived.

#![allow(dead_code)] // each test binary uses its part
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};

/// What arrived: each request's headers and body, in arrival order.
pub(crate) type Received = Arc<Mutex<Vec<(HeaderMap, String)>>>;

/// Receives webhooks at the returned URL, answering 200.
pub(crate) async fn receiver() -> (String, Received) {
    let received: Received = Arc::default();
    let kept = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| async move {
            kept.lock().unwrap().push((headers, body));
            StatusCode::OK
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, received)
}

/// Waits (at most 5 s) until `count` requests arrived; what arrived.
pub(crate) async fn wait_for(received: &Received, count: usize) -> Vec<(HeaderMap, String)> {
    for _ in 0..200 {
        if received.lock().unwrap().len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let arrived = received.lock().unwrap().clone();
    assert!(
        arrived.len() >= count,
        "{} of {count} webhooks arrived",
        arrived.len()
    );
    arrived
}
