//! Calling a route of the binding: its URL under the interface's base, the headers of
//! the version (media types, `A2A-Version`, the resume extension), the credentials
//! placed, and the answer read as JSON or as an event stream; and the check that keeps
//! an empty id from making a route name another one.

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{Method, Url};
use sb_protocol::requests::require_id;
use sb_protocol::{StreamResponse, v03};
use serde::Serialize;
use serde_json::Value;

use crate::interface::Generation;
use crate::sse;
use crate::transport::{CallError, EventStream};
use crate::wire::Tap;

use super::RestTransport;
use super::answer::{answer, error_in};
use super::bodies::read_in;

impl RestTransport {
    /// Calls the route `path` (each item one path segment, escaped as needed).
    pub(super) async fn call(
        &self,
        name: &str,
        method: Method,
        path: &[&str],
        query: &(impl Serialize + ?Sized),
        body: Option<Value>,
    ) -> Result<Value, CallError> {
        let (request, url) = self.request(method, path, body, false)?;
        let request = request.query(query);
        self.tap_request(name, &request);
        let sent = request.send().await;
        let response = sent.map_err(|e| CallError::unreachable(name, &url, &e))?;
        answer(name, response, path.len() > 1, &self.tap).await
    }

    fn request(
        &self,
        method: Method,
        path: &[&str],
        body: Option<Value>,
        stream: bool,
    ) -> Result<(reqwest::RequestBuilder, Url), CallError> {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .map_err(|()| CallError::Transport(format!("{} cannot take a path", self.base)))?
            .extend(path);
        let version = self.generation.header();
        let media = match self.generation {
            Generation::V1 => "application/a2a+json",
            Generation::V03 => "application/json",
        };
        let accept = match stream {
            true => "text/event-stream".to_owned(),
            false => format!("{media}, application/json"),
        };
        let mut request = self
            .http
            .request(method, url.clone())
            .header("A2A-Version", version)
            .header(ACCEPT, accept);
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, media).body(body.to_string());
        }
        Ok((self.placement.apply(request), url))
    }

    /// Shows a request to the wire tap as it will go (its final URL, with the query).
    fn tap_request(&self, name: &str, request: &reqwest::RequestBuilder) {
        if !Tap::enabled() {
            return;
        }
        let Some(built) = request.try_clone().and_then(|r| r.build().ok()) else {
            return;
        };
        let body = built
            .body()
            .and_then(reqwest::Body::as_bytes)
            .map(String::from_utf8_lossy);
        let url = built.url().as_str();
        self.tap
            .request(name, built.method().as_str(), url, body.as_deref());
    }

    /// Calls a streaming route: its events, or the error its answer carries instead.
    pub(super) async fn stream(
        &self,
        name: &'static str,
        (method, path): (Method, &[&str]),
        body: Option<Value>,
        last_event_id: Option<&str>,
    ) -> Result<EventStream, CallError> {
        let (mut request, url) = self.request(method, path, body, true)?;
        if let Some(id) = last_event_id {
            // 0.3 named the extensions header `X-A2A-Extensions`.
            let extensions = match self.generation {
                Generation::V1 => "a2a-extensions",
                Generation::V03 => "x-a2a-extensions",
            };
            request = request
                .header("last-event-id", id)
                .header(extensions, sb_protocol::card::RESUME_EXTENSION);
        }
        self.tap_request(name, &request);
        let sent = request.send().await;
        let response = sent.map_err(|e| CallError::unreachable(name, &url, &e))?;
        if !sse::is_event_stream(&response) {
            let reply = answer(name, response, path.len() > 1, &self.tap).await?;
            return Err(match error_in(&reply) {
                Some(refused) => CallError::A2A(refused),
                None => CallError::Transport(format!("{name}: a result instead of a stream")),
            });
        }
        let generation = self.generation;
        Ok(sse::events(
            response,
            name.to_owned(),
            self.tap.clone(),
            move |data| {
                let event: Value = serde_json::from_str(data).map_err(|e| {
                    CallError::Transport(format!("{name}: an unreadable event: {e}"))
                })?;
                if let Some(refused) = error_in(&event) {
                    return Err(CallError::A2A(refused));
                }
                read_in::<StreamResponse>(generation, name, event, v03::stream_event_from_v03)
            },
        ))
    }
}

/// Refuses an empty id before it goes into a route, where it would name another one:
/// `GET tasks/` is ListTasks (even under @a2a-js/sdk's 0.3 `/v1`), `GET
/// tasks/{id}/pushNotificationConfigs/` the list of configs.
pub(super) fn segment(id: &str, field: &str) -> Result<(), CallError> {
    require_id(id, field).map_err(CallError::A2A)
}
