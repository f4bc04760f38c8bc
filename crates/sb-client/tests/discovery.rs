//! Card discovery over real HTTP: a 1.0 card, a 0.3 card at the legacy path, a card URL
//! given directly, an unusable card, a signed one and a tampered one, and the cache.

#![allow(clippy::unwrap_used)] // test harness

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Json;
use axum::routing::get;
use sb_client::discovery::{CardCache, CardError, discover};
use sb_protocol::card::AgentCard;
use sb_registry::signing::{CardSigner, CardVerifier, SigningAlgorithm, jwks};
use serde_json::{Value, json};

fn card_v1(name: &str) -> Value {
    json!({
        "name": name, "description": "d", "version": "1.0.0", "capabilities": {"streaming": true},
        "supportedInterfaces": [
            {"url": "http://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "S", "description": "d", "tags": []}]
    })
}

fn card_v03() -> Value {
    json!({
        "protocolVersion": "0.3.0", "name": "legacy", "description": "d", "version": "2",
        "url": "http://h/rpc", "preferredTransport": "JSONRPC",
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": []
    })
}

/// Serves the fixtures; counts the fetches of `/counted`.
async fn server(signed: Value, fetches: Arc<AtomicUsize>) -> String {
    let mut tampered = signed.clone();
    tampered["description"] = json!("changed after signing");
    let app = axum::Router::new()
        .route("/one/.well-known/agent-card.json", get(|| async { Json(card_v1("one")) }))
        .route("/old/.well-known/agent.json", get(|| async { Json(card_v03()) }))
        .route("/cards/x.json", get(|| async { Json(card_v1("x")) }))
        .route(
            "/bad/.well-known/agent-card.json",
            get(|| async {
                let mut card = card_v1("bad");
                card["supportedInterfaces"] = json!([{"url": "ftp://h", "protocolBinding": "JSONRPC", "protocolVersion": "one"}]);
                Json(card)
            }),
        )
        .route("/signed/.well-known/agent-card.json", get(move || async move { Json(signed) }))
        .route("/tampered/.well-known/agent-card.json", get(move || async move { Json(tampered) }))
        .route(
            "/counted/.well-known/agent-card.json",
            get(move || async move {
                fetches.fetch_add(1, Ordering::SeqCst);
                Json(card_v1("counted"))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

#[tokio::test]
async fn cards_are_found_read_checked_and_verified() {
    let (signer, _) = CardSigner::generate(SigningAlgorithm::Es256).unwrap();
    let card: AgentCard = serde_json::from_value(card_v1("signed")).unwrap();
    let signed = serde_json::to_value(signer.sign(&card, None).unwrap()).unwrap();
    let base = server(signed, Arc::default()).await;
    let http = reqwest::Client::new();

    let one = discover(&http, &format!("{base}/one"), None).await.unwrap();
    assert_eq!(one.card.name, "one");
    assert_eq!(one.url, format!("{base}/one/.well-known/agent-card.json"));

    let old = discover(&http, &format!("{base}/old/"), None)
        .await
        .unwrap();
    assert_eq!(old.card.name, "legacy");
    assert_eq!(
        old.url,
        format!("{base}/old/.well-known/agent.json"),
        "the legacy path, second"
    );
    assert_eq!(old.card.supported_interfaces[0].protocol_version, "0.3");

    let direct = discover(&http, &format!("{base}/cards/x.json"), None)
        .await
        .unwrap();
    assert_eq!(direct.card.name, "x");

    let missing = discover(&http, &format!("{base}/nobody"), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&missing, CardError::NotFound { tried } if tried.len() == 2),
        "{missing}"
    );

    let bad = discover(&http, &format!("{base}/bad"), None)
        .await
        .unwrap_err();
    let reason = bad.to_string();
    assert!(
        reason.contains("not an http(s) URL") && reason.contains("not MAJOR.MINOR"),
        "{reason}"
    );

    let down = discover(&http, "http://127.0.0.1:1", None)
        .await
        .unwrap_err();
    assert!(matches!(down, CardError::Unreachable { .. }), "{down}");

    let verifier = CardVerifier::from_jwks(&jwks(&[&signer])).unwrap();
    let verified = discover(&http, &format!("{base}/signed"), Some(&verifier))
        .await
        .unwrap();
    assert_eq!(verified.signed_by.as_deref(), Some(signer.kid()));
    let refused = discover(&http, &format!("{base}/tampered"), Some(&verifier))
        .await
        .unwrap_err();
    assert!(matches!(refused, CardError::Signature { .. }), "{refused}");
}

#[tokio::test]
async fn the_cache_keeps_a_card_for_its_ttl_and_forgets_it_on_demand() {
    let fetches = Arc::new(AtomicUsize::new(0));
    let base = server(json!({}), fetches.clone()).await;
    let url = format!("{base}/counted");
    let cache = CardCache::new(reqwest::Client::new(), Duration::from_secs(600), None);
    cache.get(&url).await.unwrap();
    cache.get(&url).await.unwrap();
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        1,
        "fresh: served from the cache"
    );
    cache.forget(&url);
    cache.get(&url).await.unwrap();
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        2,
        "forgotten: fetched again"
    );
    let expiring = CardCache::new(reqwest::Client::new(), Duration::ZERO, None);
    expiring.get(&url).await.unwrap();
    expiring.get(&url).await.unwrap();
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        4,
        "past its TTL: fetched again"
    );
}
