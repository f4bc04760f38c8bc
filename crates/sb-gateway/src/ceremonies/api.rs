//! The ceremonies' API, with the fleet guide's paths: list, create, update, delete, and
//! fire now; plus one ceremony and its runs. Every call needs an `X-API-Key`
//! ([`super::keys`]); an agent's key stamps `createdBy` on what it creates and changes
//! only that, the admin key changes anything made through the API, and nobody changes
//! a file's ceremony here. Errors are the registry API's body, with the field when a
//! definition is refused.

use axum::extract::{FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use sb_fleet::ceremonies::book::{self, BookError, Caller, Entry};
use sb_fleet::ceremonies::definition::{Ceremony, CeremonyUpdate, check_id};
use sb_fleet::ceremonies::runs::{self, Run, Trigger};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Ceremonies, firing, keys};

/// Why a call was not carried out, as the answer it gets (boxed: a `Response` is large
/// beside the handlers' `Ok` values).
pub(super) struct Refusal(Box<Response>);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        *self.0
    }
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self(Box::new(sb_registry::http::error(status, message, None)))
    }
}

impl From<BookError> for Refusal {
    fn from(e: BookError) -> Self {
        let message = e.to_string();
        match e {
            BookError::Invalid(invalid) => Self(Box::new(sb_registry::http::error(
                StatusCode::BAD_REQUEST,
                message,
                Some(invalid.field),
            ))),
            BookError::NotFound(_) => Self::new(StatusCode::NOT_FOUND, message),
            BookError::Forbidden(_) => Self::new(StatusCode::FORBIDDEN, message),
            BookError::Conflict(_) => Self::new(StatusCode::CONFLICT, message),
            BookError::Unavailable(_) => Self::new(StatusCode::SERVICE_UNAVAILABLE, message),
        }
    }
}

/// The caller, by the key its request carries ([`keys::caller`]); every handler takes
/// one, so no call goes unauthenticated.
pub(super) struct Who(Caller);

impl FromRequestParts<Ceremonies> for Who {
    type Rejection = Refusal;

    async fn from_request_parts(
        parts: &mut Parts,
        ceremonies: &Ceremonies,
    ) -> Result<Self, Self::Rejection> {
        let fleet = ceremonies.state.registry.fleet();
        keys::caller(ceremonies.admin_token.as_deref(), &fleet, &parts.headers)
            .map(Who)
            .map_err(Refusal)
    }
}

/// The JSON body as `T`, or a 400 saying what is wrong with it.
fn body<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, Refusal> {
    serde_json::from_slice(bytes).map_err(|e| {
        Refusal::new(
            StatusCode::BAD_REQUEST,
            format!("the body must be {what} as JSON: {e}"),
        )
    })
}

/// A ceremony as listed: its definition, where it comes from, and its last run.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed<'a> {
    #[serde(flatten)]
    ceremony: &'a Ceremony,
    from_file: bool,
    /// The next firing on its schedule (while it is enabled).
    #[serde(skip_serializing_if = "Option::is_none")]
    next_run: Option<chrono::DateTime<Utc>>,
    last_run: Option<&'a Run>,
}

fn listed<'a>(entry: &'a Entry, last: Option<&'a Run>) -> Listed<'a> {
    let ceremony = &entry.ceremony;
    Listed {
        ceremony,
        from_file: entry.from_file,
        next_run: ceremony
            .enabled
            .then(|| ceremony.next_after(Utc::now()))
            .flatten(),
        last_run: last,
    }
}

/// The runs of `id`, newest first; a store failure as a 503.
async fn runs_of(ceremonies: &Ceremonies, id: &str) -> Result<Vec<Run>, Refusal> {
    runs::list(&*ceremonies.store, id)
        .await
        .map_err(|e| BookError::Unavailable(e).into())
}

/// The ceremony `id` in force; 400 for a bad id, 404 for none.
async fn entry(ceremonies: &Ceremonies, id: &str) -> Result<Entry, Refusal> {
    check_id(id).map_err(BookError::from)?;
    let files = ceremonies.files();
    let mut all = book::all(&files, &*ceremonies.store).await?;
    all.remove(id)
        .ok_or_else(|| BookError::NotFound(format!("no ceremony {id}")).into())
}

/// `GET /api/ceremonies`: every ceremony in force with its last run.
pub(super) async fn list(
    State(ceremonies): State<Ceremonies>,
    _: Who,
) -> Result<Response, Refusal> {
    let files = ceremonies.files();
    let all = book::all(&files, &*ceremonies.store).await?;
    let mut lasts = Vec::new();
    for id in all.keys() {
        let mut runs = runs_of(&ceremonies, id).await?;
        lasts.push((!runs.is_empty()).then(|| runs.remove(0)));
    }
    let shown: Vec<Listed<'_>> = all
        .values()
        .zip(&lasts)
        .map(|(entry, last)| listed(entry, last.as_ref()))
        .collect();
    Ok(axum::Json(json!({ "ceremonies": shown })).into_response())
}

/// `GET /api/ceremonies/{id}`.
pub(super) async fn one(
    State(ceremonies): State<Ceremonies>,
    _: Who,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    let entry = entry(&ceremonies, &id).await?;
    let runs = runs_of(&ceremonies, &id).await?;
    Ok(axum::Json(listed(&entry, runs.first())).into_response())
}

/// `GET /api/ceremonies/{id}/runs`: its runs (the last 100), newest first.
pub(super) async fn runs(
    State(ceremonies): State<Ceremonies>,
    _: Who,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    entry(&ceremonies, &id).await?;
    let runs = runs_of(&ceremonies, &id).await?;
    Ok(axum::Json(json!({ "runs": runs })).into_response())
}

/// `POST /api/ceremonies/create`: 201 with the ceremony as kept.
pub(super) async fn create(
    State(ceremonies): State<Ceremonies>,
    Who(who): Who,
    bytes: axum::body::Bytes,
) -> Result<Response, Refusal> {
    let ceremony: Ceremony = body(&bytes, "a ceremony")?;
    let files = ceremonies.files();
    let made = book::create(&files, &*ceremonies.store, &who, ceremony).await?;
    Ok((StatusCode::CREATED, axum::Json(made)).into_response())
}

/// `POST /api/ceremonies/{id}/update`: only the fields the body carries change.
pub(super) async fn update(
    State(ceremonies): State<Ceremonies>,
    Who(who): Who,
    Path(id): Path<String>,
    bytes: axum::body::Bytes,
) -> Result<Response, Refusal> {
    let change: CeremonyUpdate = body(&bytes, "the fields to change")?;
    let files = ceremonies.files();
    let updated = book::update(&files, &*ceremonies.store, &who, &id, change).await?;
    Ok(axum::Json(updated).into_response())
}

/// `POST /api/ceremonies/{id}/delete`.
pub(super) async fn delete(
    State(ceremonies): State<Ceremonies>,
    Who(who): Who,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    let files = ceremonies.files();
    book::delete(&files, &*ceremonies.store, &who, &id).await?;
    Ok(axum::Json(json!({ "deleted": id })).into_response())
}

/// `POST /api/ceremonies/{id}/run`: fires it now, whatever its schedule (paused too),
/// and answers the run with its tasks. Its creator's key or the admin key (a file's
/// ceremony: the admin key).
pub(super) async fn run_now(
    State(ceremonies): State<Ceremonies>,
    Who(who): Who,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    let entry = entry(&ceremonies, &id).await?;
    if let Caller::Agent(agent) = &who
        && entry.ceremony.created_by.as_deref() != Some(agent.as_str())
    {
        let owner = match (&entry.ceremony.created_by, entry.from_file) {
            (_, true) => "the ceremonies directory".to_owned(),
            (Some(owner), false) => owner.clone(),
            (None, false) => "the admin".to_owned(),
        };
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!(
                "ceremony {id} belongs to {owner}: only its creator's key or the admin key may fire it"
            ),
        ));
    }
    let run = firing::fire(&ceremonies, &entry.ceremony, Utc::now(), Trigger::Manual).await;
    Ok(axum::Json(json!({ "run": run })).into_response())
}

#[cfg(test)]
mod tests {
    use sb_store::StoreError;

    use super::*;

    #[test]
    fn each_refusal_has_its_status() {
        let status = |e: BookError| Refusal::from(e).into_response().status().as_u16();
        let Err(bad_id) = check_id("has space") else {
            panic!("a space is not in an id");
        };
        assert_eq!(status(bad_id.into()), 400);
        assert_eq!(status(BookError::NotFound("no ceremony x".into())), 404);
        assert_eq!(status(BookError::Forbidden("not yours".into())), 403);
        assert_eq!(status(BookError::Conflict("taken".into())), 409);
        let down = BookError::Unavailable(StoreError::backend("connection refused"));
        assert_eq!(status(down), 503);
    }
}
