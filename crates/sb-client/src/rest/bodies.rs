//! The bodies of the binding in each version: what SendMessage and
//! CreateTaskPushNotificationConfig send (ProtoJSON of the 1.0 model, or of the 0.3
//! proto), and a result read into the 1.0 model (from 0.3 by `sb_protocol::v03` first).

use sb_protocol::TaskPushNotificationConfig;
use sb_protocol::requests::SendMessageRequest;
use sb_protocol::v03::{self, Dialect03};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::interface::Generation;
use crate::transport::CallError;

use super::RestTransport;

impl RestTransport {
    /// The body of SendMessage.
    pub(super) fn send_body(&self, request: &SendMessageRequest) -> Result<Value, CallError> {
        match self.generation {
            Generation::V1 => {
                let mut body = serde_json::to_value(request)
                    .map_err(|e| CallError::Transport(format!("SendMessage: {e}")))?;
                // ProtoJSON leaves unset fields out.
                if let Some(fields) = body.as_object_mut() {
                    fields.retain(|_, value| !value.is_null());
                }
                Ok(body)
            }
            // `blocking` is always written: a proto3 bool left out reads as non-blocking.
            Generation::V03 => Ok(v03::send_params_to_v03(request, Dialect03::ProtoJson)),
        }
    }

    /// The body of CreateTaskPushNotificationConfig.
    pub(super) fn push_config_body(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<Value, CallError> {
        let name = "CreateTaskPushNotificationConfig";
        Ok(match self.generation {
            Generation::V1 => serde_json::to_value(config)
                .map_err(|e| CallError::Transport(format!("{name}: {e}")))?,
            Generation::V03 => {
                // The proto request `{parent, configId, config}` (Python SDK, 0.3 spec) with
                // the config's own fields beside it (the JS SDK reads the bare config).
                let v03 = v03::push_config_to_v03(config, Dialect03::ProtoJson);
                let mut body = json!({"parent": format!("tasks/{}", config.task_id)});
                if let Some(id) = &config.id {
                    body["configId"] = json!(id);
                }
                if let (Some(body), Value::Object(fields)) = (body.as_object_mut(), &v03) {
                    body.extend(fields.clone());
                }
                body["config"] = v03;
                body
            }
        })
    }
}

/// `result` read as a `T`, from 0.3 into the 1.0 shape by `from_v03` first.
pub(super) fn read_in<T: DeserializeOwned>(
    generation: Generation,
    name: &str,
    result: Value,
    from_v03: impl FnOnce(Value, Dialect03) -> Result<Value, String>,
) -> Result<T, CallError> {
    let result = match generation {
        Generation::V1 => result,
        Generation::V03 => {
            from_v03(result, Dialect03::ProtoJson).map_err(|e| CallError::unreadable(name, e))?
        }
    };
    serde_json::from_value(result).map_err(|e| CallError::unreadable(name, e.to_string()))
}

pub(super) fn push_config_from_v03(config: Value, _: Dialect03) -> Result<Value, String> {
    v03::push_config_from_v03(config)
}
