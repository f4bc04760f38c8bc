//! Building a call: the endpoint of a card's address, the metadata every call carries
//! (`a2a-version` and the credentials), a stream's resume extension and cursor, the
//! interface's tenant in its messages, and a model value as a request message.

use std::time::Duration;

use sb_a2a_grpc::convert;
use sb_protocol::card::RESUME_EXTENSION;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tonic::transport::Endpoint;

use crate::auth::Placement;
use crate::transport::CallError;

use super::GrpcTransport;

/// How long connecting may take, before any call can.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

impl GrpcTransport {
    pub(super) fn request<M>(&self, message: M) -> tonic::Request<M> {
        let mut request = tonic::Request::new(message);
        *request.metadata_mut() = self.metadata.clone();
        request
    }

    /// A stream's request: the resume extension, and the cursor to resume after.
    pub(super) fn stream_request<M>(
        &self,
        message: M,
        last_event_id: Option<&str>,
    ) -> Result<tonic::Request<M>, CallError> {
        let mut request = self.request(message);
        let metadata = request.metadata_mut();
        metadata.append(
            "a2a-extensions",
            MetadataValue::from_static(RESUME_EXTENSION),
        );
        if let Some(id) = last_event_id {
            let id = MetadataValue::try_from(id).map_err(|_| {
                CallError::Transport(format!("the event id {id:?} cannot be sent as metadata"))
            })?;
            metadata.insert("last-event-id", id);
        }
        Ok(request)
    }

    /// The interface's tenant (spec §5.3), empty for none.
    pub(super) fn tenant(&self) -> String {
        self.chosen.tenant.clone().unwrap_or_default()
    }

    /// The interface's tenant in place of the one a request carries, when it names one.
    pub(super) fn set_tenant(&self, tenant: &mut String) {
        if let Some(ours) = &self.chosen.tenant {
            tenant.clone_from(ours);
        }
    }
}

/// The endpoint of a card's `host:port` (or `http://host:port`).
pub(super) fn endpoint(url: &str) -> Result<Endpoint, CallError> {
    let address = url.trim().trim_end_matches('/');
    let address = match address.split_once("://") {
        None => address,
        Some(("http" | "grpc", rest)) => rest,
        Some(("https" | "grpcs", _)) => {
            return Err(CallError::Transport(format!(
                "{url}: gRPC over TLS is not built into this client (tonic's TLS features \
                 are off); call the agent's JSON-RPC or HTTP+JSON interface over HTTPS"
            )));
        }
        Some((scheme, _)) => {
            return Err(CallError::Transport(format!(
                "{url}: a gRPC address is host:port, not a {scheme}:// URL"
            )));
        }
    };
    Endpoint::from_shared(format!("http://{address}"))
        .map(|endpoint| endpoint.connect_timeout(CONNECT_TIMEOUT))
        .map_err(|e| CallError::Transport(format!("{url} is no gRPC address: {e}")))
}

/// `a2a-version` and the credentials, as metadata.
pub(super) fn metadata(placement: &Placement) -> Result<MetadataMap, CallError> {
    let mut metadata = MetadataMap::new();
    metadata.insert("a2a-version", MetadataValue::from_static("1.0"));
    for (name, value) in placement.headers.iter().chain(&placement.query) {
        let key = MetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes()).map_err(|_| {
            CallError::Transport(format!("{name:?} cannot be sent as gRPC metadata"))
        })?;
        let mut value = MetadataValue::try_from(value.as_str()).map_err(|_| {
            CallError::Transport(format!(
                "the value of {name} cannot be sent as gRPC metadata"
            ))
        })?;
        value.set_sensitive(true);
        metadata.append(key, value);
    }
    Ok(metadata)
}

/// A model value as a request message. Unset options go (ProtoJSON leaves them out, and
/// a proto string field takes no null).
pub(super) fn to_proto<T: Serialize, M: DeserializeOwned>(
    method: &str,
    value: &T,
) -> Result<M, CallError> {
    let mut json =
        serde_json::to_value(value).map_err(|e| CallError::Transport(format!("{method}: {e}")))?;
    if let Some(fields) = json.as_object_mut() {
        fields.retain(|_, value| !value.is_null());
    }
    convert::from_json(json).map_err(|e| CallError::Transport(format!("{method}: {}", e.message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_go_as_lowercase_metadata_and_stay_out_of_debug() -> Result<(), CallError> {
        let placement = Placement {
            headers: vec![("Authorization".into(), "Bearer s3cr3t".into())],
            query: vec![("api_key".into(), "k".into())],
        };
        let metadata = metadata(&placement)?;
        let has = |name: &str, value: &str| metadata.get(name).is_some_and(|v| v == value);
        assert!(has("authorization", "Bearer s3cr3t"));
        assert!(has("api_key", "k"));
        assert!(has("a2a-version", "1.0"));
        assert!(!format!("{metadata:?}").contains("s3cr3t"));
        let bad = Placement {
            headers: vec![("bad header".into(), "x".into())],
            query: Vec::new(),
        };
        assert!(super::metadata(&bad).is_err());
        Ok(())
    }
}
