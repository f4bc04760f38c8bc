//! The operator's endpoints for deliveries, behind an admin token:
//! `GET /admin/dead-letters` lists the failed ones, `POST /admin/dead-letters/{id}/redrive`
//! queues one for another delivery, `GET /admin/deliveries/{task_id}` says how far each
//! of a task's push configs has been served.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use subtle::ConstantTimeEq;

#[cfg(feature = "delivery")]
use crate::dispatcher::Dispatcher;
use crate::status::{DeliveryStatus, DispatchError};

/// What the admin endpoints need of a dispatcher: the one in this process, or a
/// dispatcher service reached over the internal API.
#[async_trait::async_trait]
pub trait DeadLetterAdmin: Send + Sync + std::fmt::Debug + 'static {
    /// The deliveries that failed for good, oldest first.
    async fn dead_letters(&self) -> Result<Vec<sb_store::DeadLetter>, DispatchError>;
    /// Queues a dead letter for one more delivery; returns whether it existed.
    async fn redrive(&self, id: &str) -> Result<bool, DispatchError>;
    /// How far each push config of the task has been served.
    async fn delivery_status(&self, task_id: &str) -> Result<Vec<DeliveryStatus>, DispatchError>;
}

#[cfg(feature = "delivery")]
#[async_trait::async_trait]
impl DeadLetterAdmin for Dispatcher {
    async fn dead_letters(&self) -> Result<Vec<sb_store::DeadLetter>, DispatchError> {
        Dispatcher::dead_letters(self).await
    }

    async fn redrive(&self, id: &str) -> Result<bool, DispatchError> {
        Dispatcher::redrive(self, id).await
    }

    async fn delivery_status(&self, task_id: &str) -> Result<Vec<DeliveryStatus>, DispatchError> {
        Dispatcher::delivery_status(self, task_id).await
    }
}

#[derive(Clone, Debug)]
struct Admin {
    dispatcher: Arc<dyn DeadLetterAdmin>,
    token: Arc<str>,
}

/// The admin routes; every request needs `Authorization: Bearer <token>`.
pub fn admin_router(dispatcher: Arc<dyn DeadLetterAdmin>, token: &str) -> Router {
    let state = Admin {
        dispatcher,
        token: Arc::from(token),
    };
    Router::new()
        .route("/admin/dead-letters", get(list))
        .route("/admin/dead-letters/{id}/redrive", post(redrive))
        .route("/admin/deliveries/{task_id}", get(deliveries))
        .with_state(state)
}

fn authorized(admin: &Admin, headers: &HeaderMap) -> bool {
    refusal(&admin.token, headers).is_none()
}

/// Whether `headers` carry `Authorization: Bearer <token>` (compared in constant time).
/// Every operator check of the admin token is this one.
pub fn presents(token: &str, headers: &HeaderMap) -> bool {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    bool::from(presented.as_bytes().ct_eq(token.as_bytes()))
}

/// The 401 to answer unless `headers` carry the admin token ([`presents`]).
pub fn refusal(token: &str, headers: &HeaderMap) -> Option<Response> {
    (!presents(token, headers)).then(refused)
}

fn refused() -> Response {
    let body = json!({"error": {"code": 401, "status": "UNAUTHENTICATED", "message": "this endpoint needs the operator's Authorization: Bearer <admin token>"}});
    (
        StatusCode::UNAUTHORIZED,
        [(
            header::WWW_AUTHENTICATE,
            "Bearer realm=\"switchboard-admin\"",
        )],
        axum::Json(body),
    )
        .into_response()
}

fn internal(error: DispatchError) -> Response {
    let body = json!({"error": {"code": 500, "status": "INTERNAL", "message": error.to_string()}});
    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response()
}

async fn list(State(admin): State<Admin>, headers: HeaderMap) -> Response {
    if !authorized(&admin, &headers) {
        return refused();
    }
    match admin.dispatcher.dead_letters().await {
        Ok(letters) => axum::Json(json!({"deadLetters": letters})).into_response(),
        Err(e) => internal(e),
    }
}

async fn redrive(
    State(admin): State<Admin>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if !authorized(&admin, &headers) {
        return refused();
    }
    match admin.dispatcher.redrive(&id).await {
        Ok(true) => (StatusCode::ACCEPTED, axum::Json(json!({"redriven": id}))).into_response(),
        Ok(false) => {
            let body = json!({"error": {"code": 404, "status": "NOT_FOUND", "message": format!("no dead letter {id}")}});
            (StatusCode::NOT_FOUND, axum::Json(body)).into_response()
        }
        Err(e) => internal(e),
    }
}

async fn deliveries(
    State(admin): State<Admin>,
    headers: HeaderMap,
    Path(task_id): Path<String>,
) -> Response {
    if !authorized(&admin, &headers) {
        return refused();
    }
    match admin.dispatcher.delivery_status(&task_id).await {
        Ok(configs) => axum::Json(json!({"taskId": task_id, "configs": configs})).into_response(),
        Err(e) => internal(e),
    }
}
