//! The registry's HTTP API, served by every gateway (and by the registry service):
//! - `PUT /registry/agents/{name}`: register (201) or replace (200) an agent; the body is
//!   its definition as JSON, the fields of a TOML `[[agents]]` entry;
//! - `GET /registry/agents/{name}`: its definition (secrets redacted), card and history
//!   (and a bridged agent's upstream card: where, which, when checked, why refused);
//! - `DELETE /registry/agents/{name}`: remove it (204);
//! - `GET /registry/agents?skill=&tag=&q=&capability=&input_mode=&output_mode=`: search;
//! - `GET /agents`: every agent with its card URL;
//! - `GET /.well-known/jwks.json`: the keys cards are signed with.
//!
//! Writes need the admin token ([`WriteGuard`]); without one they are refused with the
//! reason. Errors are `{"error": {"code", "status", "message", "field"?}}`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::definition::AgentDefinition;
use crate::fleet::{Fleet, ServedAgent};
use crate::maker::JWKS_PATH;
use crate::registration::Source;
use crate::search::Query;
use crate::service::{RegistryError, RegistryService};
use crate::validate::{FieldError, check_name};

/// Decides whether a request may write: `Some` is the answer to send instead.
pub type WriteGuard = Arc<dyn Fn(&HeaderMap) -> Option<Response> + Send + Sync>;

/// Checks a definition needs what only this process can try (a JWT key set it must be
/// able to fetch), before it is registered; an error is the 400 to answer.
pub type Precheck = Arc<
    dyn Fn(AgentDefinition) -> Pin<Box<dyn Future<Output = Result<(), FieldError>> + Send>>
        + Send
        + Sync,
>;

#[derive(Clone)]
struct Api {
    registry: Arc<dyn RegistryService>,
    writes: Option<WriteGuard>,
    precheck: Option<Precheck>,
    public_url: Arc<str>,
}

/// The routes over `registry`; `public_url` makes the card URLs.
pub fn router(
    registry: Arc<dyn RegistryService>,
    writes: Option<WriteGuard>,
    precheck: Option<Precheck>,
    public_url: &str,
) -> Router {
    let api = Api {
        registry,
        writes,
        precheck,
        public_url: Arc::from(public_url.trim_end_matches('/')),
    };
    Router::new()
        .route("/agents", get(list))
        .route("/registry/agents", get(search))
        .route("/registry/agents/{name}", get(read).put(put).delete(remove))
        .route(JWKS_PATH, get(serve_jwks))
        .with_state(api)
}

/// An error of Switchboard's own HTTP APIs (the registry's, the fleet's):
/// `{"error": {code, status, message, field?}}`.
pub fn error(status: StatusCode, message: impl Into<String>, field: Option<&str>) -> Response {
    let mut body = json!({"error": {
        "code": status.as_u16(),
        "status": match status {
            StatusCode::BAD_REQUEST => "INVALID_ARGUMENT",
            StatusCode::UNAUTHORIZED => "UNAUTHENTICATED",
            StatusCode::NOT_FOUND => "NOT_FOUND",
            StatusCode::FORBIDDEN => "PERMISSION_DENIED",
            StatusCode::CONFLICT => "ABORTED",
            _ => "UNAVAILABLE",
        },
        "message": message.into(),
    }});
    if let Some(field) = field {
        body["error"]["field"] = json!(field);
    }
    (status, axum::Json(body)).into_response()
}

fn failed(e: RegistryError) -> Response {
    match e {
        RegistryError::Invalid(field) => error(
            StatusCode::BAD_REQUEST,
            field.to_string(),
            Some(&field.field),
        ),
        RegistryError::NotFound(message) => error(StatusCode::NOT_FOUND, message, None),
        RegistryError::Unavailable(message) => {
            error(StatusCode::SERVICE_UNAVAILABLE, message, None)
        }
    }
}

impl Api {
    fn card_url(&self, name: &str) -> String {
        format!(
            "{}/agents/{name}/.well-known/agent-card.json",
            self.public_url
        )
    }

    /// The refusal to answer a write with, if any.
    fn refusal(&self, headers: &HeaderMap) -> Option<Response> {
        match &self.writes {
            Some(guard) => guard(headers),
            None => Some(error(
                StatusCode::FORBIDDEN,
                "registry writes are off: start Switchboard with an admin token (--admin-token) and send it as Authorization: Bearer <admin token>",
                None,
            )),
        }
    }

    /// An agent as `GET /registry/agents/{name}` shows it.
    fn view(&self, agent: &ServedAgent) -> Value {
        let registration = &agent.registration;
        // A bridged agent's upstream card: where, which, checked when, and why it was
        // last refused (the card itself is what `card` follows).
        let upstream = registration.upstream.as_ref().map(|u| {
            json!({
                "url": u.url,
                "name": u.card.as_ref().map(|c| &c.name),
                "version": u.card.as_ref().map(|c| &c.version),
                "hash": u.hash,
                "signedBy": u.signed_by,
                "checkedAt": u.checked_at,
                "refused": u.refused,
            })
        });
        json!({
            "name": registration.name(),
            "upstream": upstream,
            "cardUrl": self.card_url(registration.name()),
            "version": registration.version(),
            "source": registration.source,
            "createdAt": registration.created_at,
            "changedAt": registration.changed_at,
            "history": registration.history,
            "definition": registration.definition.redacted(),
            "card": agent.entry.card,
        })
    }
}

async fn list(State(api): State<Api>) -> Response {
    let fleet = api.registry.fleet();
    let agents: Vec<Value> = fleet
        .agents
        .values()
        .map(|agent| {
            let card = &agent.entry.card;
            json!({
                "name": card.name,
                "description": card.description,
                "version": card.version,
                "cardUrl": api.card_url(&card.name),
            })
        })
        .collect();
    axum::Json(json!({"agents": agents, "defaultAgent": fleet.default_agent()})).into_response()
}

async fn search(State(api): State<Api>, RawQuery(query): RawQuery) -> Response {
    let query: Query = match serde_urlencoded::from_str(query.as_deref().unwrap_or_default()) {
        Ok(query) => query,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("invalid search: {e}"),
                None,
            );
        }
    };
    let fleet = api.registry.fleet();
    match query.run(&fleet) {
        Ok(hits) => {
            let agents: Vec<Value> = hits
                .iter()
                .map(|hit| {
                    let card = &hit.agent.entry.card;
                    json!({
                        "name": card.name,
                        "cardUrl": api.card_url(&card.name),
                        "score": hit.score,
                        "card": card,
                    })
                })
                .collect();
            axum::Json(json!({"agents": agents})).into_response()
        }
        Err(e) => error(StatusCode::BAD_REQUEST, e.to_string(), Some("capability")),
    }
}

fn missing(fleet: &Fleet, name: &str) -> Response {
    let message = match fleet.removed.get(name).and_then(|r| r.removed_at) {
        Some(at) => format!("agent \"{name}\" was removed at {at}"),
        None => format!("no agent \"{name}\" is registered"),
    };
    error(StatusCode::NOT_FOUND, message, None)
}

async fn read(State(api): State<Api>, Path(name): Path<String>) -> Response {
    let fleet = api.registry.fleet();
    match fleet.agent(&name) {
        Some(agent) => axum::Json(api.view(agent)).into_response(),
        None => missing(&fleet, &name),
    }
}

/// The definition in `body`, named `name` (the body may leave the name out).
fn definition(name: &str, body: &[u8]) -> Result<AgentDefinition, RegistryError> {
    let invalid =
        |field: &str, reason: String| RegistryError::Invalid(FieldError::new(field, reason));
    check_name(name)?;
    let mut value: Value =
        serde_json::from_slice(body).map_err(|e| invalid("body", format!("is not JSON: {e}")))?;
    let Some(fields) = value.as_object_mut() else {
        return Err(invalid(
            "body",
            "must be a JSON object: the agent's definition".into(),
        ));
    };
    match fields.get("name") {
        None => {
            fields.insert("name".into(), json!(name));
        }
        Some(Value::String(given)) if given == name => {}
        Some(given) => {
            return Err(invalid(
                "name",
                format!("{given} differs from the name in the path, \"{name}\""),
            ));
        }
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = match path.as_str() {
            "." | "" => "body".to_owned(),
            _ => path,
        };
        invalid(&field, e.into_inner().to_string())
    })
}

async fn put(
    State(api): State<Api>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = api.refusal(&headers) {
        return refused;
    }
    let definition = match definition(&name, &body) {
        Ok(definition) => definition,
        Err(e) => return failed(e),
    };
    if let Err(e) = definition.validate() {
        return failed(e.into());
    }
    if let Some(precheck) = &api.precheck
        && let Err(e) = precheck(definition.clone()).await
    {
        return failed(e.into());
    }
    match api.registry.put(definition, Source::Api).await {
        Ok(put) => {
            let status = match put.created {
                true => StatusCode::CREATED,
                false => StatusCode::OK,
            };
            (status, axum::Json(api.view(&put.agent))).into_response()
        }
        Err(e) => failed(e),
    }
}

async fn remove(State(api): State<Api>, Path(name): Path<String>, headers: HeaderMap) -> Response {
    if let Some(refused) = api.refusal(&headers) {
        return refused;
    }
    match api.registry.remove(&name).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(RegistryError::NotFound(_)) => missing(&api.registry.fleet(), &name),
        Err(e) => failed(e),
    }
}

/// The keys of the fleet's signer (an empty set when cards are unsigned).
async fn serve_jwks(State(api): State<Api>) -> Response {
    let keys = api.registry.fleet().jwks.clone();
    (
        [(axum::http::header::CACHE_CONTROL, "public, max-age=300")],
        axum::Json(keys.unwrap_or_else(|| json!({"keys": []}))),
    )
        .into_response()
}
