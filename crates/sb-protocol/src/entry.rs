//! A typed record Switchboard keeps under one key of a metadata map (a bridged task's
//! link to its upstream, a routed task's routing): read back, and written as the entry
//! to merge.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Metadata;

/// The record under `key`, if there is one of that type.
pub fn read<T: DeserializeOwned>(metadata: &Metadata, key: &str) -> Option<T> {
    serde_json::from_value(metadata.get(key)?.clone()).ok()
}

/// A metadata map holding `value` under `key`.
pub fn entry<T: Serialize>(key: &str, value: &T) -> Metadata {
    let mut metadata = Metadata::new();
    metadata.insert(
        key.to_owned(),
        serde_json::to_value(value).unwrap_or(Value::Null),
    );
    metadata
}
