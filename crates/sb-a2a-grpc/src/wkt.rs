//! The `google.protobuf` well-known types the messages use. `Struct`, `Value` and
//! `ListValue` are our own: pbjson-types keeps a `Struct`'s fields in a `HashMap`, so two
//! encodings of the same metadata put its entries on the wire in different orders, and a
//! client comparing events by their bytes (the A2A TCK does) sees two events where there
//! is one. Ours keep the fields in a `BTreeMap`, so entries go out in key order at every
//! level of nesting. They are the official types on the wire and follow the ProtoJSON
//! mapping as pbjson-types does (Struct ↔ object, ListValue ↔ array, Value ↔ any JSON
//! value); the rest (`Empty`, `Timestamp`, `NullValue`) are pbjson-types' own.

use std::collections::BTreeMap;

pub use pbjson_types::{Empty, NullValue, Timestamp};
use serde::de::Error as _;
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value as Json;

use self::value::Kind;

/// `google.protobuf.Struct`: a JSON object.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Struct {
    #[prost(btree_map = "string, message", tag = "1")]
    pub fields: BTreeMap<String, Value>,
}

/// `google.protobuf.Value`: any JSON value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    #[prost(oneof = "value::Kind", tags = "1, 2, 3, 4, 5, 6")]
    pub kind: Option<Kind>,
}

/// `google.protobuf.ListValue`: a JSON array.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ListValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<Value>,
}

/// The oneof of [`Value`], where prost puts it.
pub mod value {
    use super::{ListValue, Struct};

    /// Which JSON value a [`Value`](super::Value) is.
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Kind {
        #[prost(enumeration = "pbjson_types::NullValue", tag = "1")]
        NullValue(i32),
        #[prost(double, tag = "2")]
        NumberValue(f64),
        #[prost(string, tag = "3")]
        StringValue(String),
        #[prost(bool, tag = "4")]
        BoolValue(bool),
        #[prost(message, tag = "5")]
        StructValue(Struct),
        #[prost(message, tag = "6")]
        ListValue(ListValue),
    }
}

impl Serialize for Struct {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        self.fields.serialize(ser)
    }
}

impl<'de> Deserialize<'de> for Struct {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let fields = BTreeMap::deserialize(de)?;
        Ok(Self { fields })
    }
}

impl Serialize for ListValue {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        self.values.serialize(ser)
    }
}

impl<'de> Deserialize<'de> for ListValue {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let values = Vec::deserialize(de)?;
        Ok(Self { values })
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match &self.kind {
            None => ser.serialize_none(),
            Some(Kind::NullValue(_)) => ser.serialize_unit(),
            // JSON has no NaN or infinity, and the strings ProtoJSON would use for them
            // read back as strings: refused, as pbjson-types does.
            Some(Kind::NumberValue(n)) if !n.is_finite() => Err(S::Error::custom(format!(
                "cannot serialize {n} as google.protobuf.Value.number_value"
            ))),
            Some(Kind::NumberValue(n)) => ser.serialize_f64(*n),
            Some(Kind::StringValue(s)) => ser.serialize_str(s),
            Some(Kind::BoolValue(b)) => ser.serialize_bool(*b),
            Some(Kind::StructValue(s)) => s.serialize(ser),
            Some(Kind::ListValue(l)) => l.serialize(ser),
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        from_json(Json::deserialize(de)?).map_err(D::Error::custom)
    }
}

/// A JSON value as a [`Value`]. An integer a double cannot hold exactly is refused, as
/// pbjson-types refuses it.
fn from_json(json: Json) -> Result<Value, &'static str> {
    let kind = match json {
        Json::Null => Kind::NullValue(NullValue::NullValue as i32),
        Json::Bool(b) => Kind::BoolValue(b),
        Json::Number(n) => Kind::NumberValue(number(&n)?),
        Json::String(s) => Kind::StringValue(s),
        Json::Array(items) => Kind::ListValue(ListValue {
            values: items.into_iter().map(from_json).collect::<Result<_, _>>()?,
        }),
        Json::Object(map) => Kind::StructValue(Struct {
            fields: map
                .into_iter()
                .map(|(key, value)| from_json(value).map(|value| (key, value)))
                .collect::<Result<_, _>>()?,
        }),
    };
    Ok(Value { kind: Some(kind) })
}

fn number(n: &serde_json::Number) -> Result<f64, &'static str> {
    const OUT_OF_RANGE: &str = "out of range integral type conversion attempted";
    // Integers of magnitude below 2^53 are exact as doubles.
    const EXACT: u64 = 1 << f64::MANTISSA_DIGITS;
    if let Some(u) = n.as_u64() {
        return if u < EXACT {
            Ok(u as f64)
        } else {
            Err(OUT_OF_RANGE)
        };
    }
    if let Some(i) = n.as_i64() {
        return if i.unsigned_abs() < EXACT {
            Ok(i as f64)
        } else {
            Err(OUT_OF_RANGE)
        };
    }
    n.as_f64().ok_or("not a number")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{convert, pb};
    use prost::Message;
    use serde_json::json;

    /// Twenty keys at the top and twenty in a nested object, inserted in ascending or
    /// descending order (the JSON map keeps insertion order).
    fn metadata(reversed: bool) -> Json {
        let mut keys: Vec<usize> = (0..20).collect();
        if reversed {
            keys.reverse();
        }
        let inner: serde_json::Map<String, Json> = keys
            .iter()
            .map(|i| (format!("inner-{i}"), json!({"n": i, "s": format!("v{i}")})))
            .collect();
        let mut outer: serde_json::Map<String, Json> = keys
            .iter()
            .map(|i| (format!("key-{i}"), json!(i)))
            .collect();
        outer.insert("nested".into(), Json::Object(inner));
        Json::Object(outer)
    }

    /// The event bytes the server sends for a status update carrying `metadata`, through
    /// the same conversion the gateway streams events with.
    fn encoded_event(metadata: Json) -> Vec<u8> {
        let event: sb_protocol::StreamResponse = serde_json::from_value(json!({
            "statusUpdate": {
                "taskId": "t1", "contextId": "c1",
                "status": {"state": "TASK_STATE_WORKING"},
                "metadata": metadata
            }
        }))
        .unwrap();
        let message: pb::StreamResponse = convert::response(&event).unwrap();
        message.encode_to_vec()
    }

    #[test]
    fn the_same_metadata_encodes_to_the_same_bytes() {
        let first = encoded_event(metadata(false));
        for _ in 0..8 {
            assert_eq!(encoded_event(metadata(false)), first);
        }
        // Whatever order the keys came in.
        assert_eq!(encoded_event(metadata(true)), first);

        // And the entries are on the wire in key order, nested ones too.
        let decoded = pb::StreamResponse::decode(first.as_slice()).unwrap();
        let Some(pb::stream_response::Payload::StatusUpdate(update)) = decoded.payload else {
            panic!("a status update: {decoded:?}");
        };
        let fields = update.metadata.unwrap().fields;
        let keys: Vec<&String> = fields.keys().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), 21);
        let Some(Kind::StructValue(nested)) = &fields["nested"].kind else {
            panic!("an object: {:?}", fields["nested"]);
        };
        assert_eq!(nested.fields.len(), 20);
    }

    #[test]
    fn struct_survives_json_to_proto_to_json() {
        let original = json!({
            // Numbers are doubles in a Value, so whole ones are written 3.0: JSON tells 3
            // and 3.0 apart (convert::whole_numbers turns them back for the model).
            "null": null, "yes": true, "no": false, "whole": 3.0, "float": -1.5,
            "string": "text", "empty": {}, "none": [],
            "list": [1.0, "two", null, [false], {"deep": {"x": 0.25}}],
            "object": {"a": [], "b": {"c": "d"}, "e": 1e300}
        });
        let parsed: Struct = serde_json::from_value(original.clone()).unwrap();
        let bytes = parsed.encode_to_vec();
        let decoded = Struct::decode(bytes.as_slice()).unwrap();
        assert_eq!(decoded, parsed);
        assert_eq!(serde_json::to_value(&decoded).unwrap(), original);
    }

    #[test]
    fn the_wire_is_the_official_one() {
        // Bytes written by pbjson-types (prost-build's rendering of struct.proto) read
        // back the same, and ours read back there.
        let theirs: pbjson_types::Struct =
            serde_json::from_value(json!({"a": [1, null, {"b": true}], "c": "d"})).unwrap();
        let ours = Struct::decode(theirs.encode_to_vec().as_slice()).unwrap();
        assert_eq!(
            serde_json::to_value(&ours).unwrap(),
            serde_json::to_value(&theirs).unwrap()
        );
        let again = pbjson_types::Struct::decode(ours.encode_to_vec().as_slice()).unwrap();
        assert_eq!(again, theirs);
    }

    #[test]
    fn refuses_what_pbjson_types_refuses() {
        let nan = Value {
            kind: Some(Kind::NumberValue(f64::NAN)),
        };
        assert!(serde_json::to_value(&nan).is_err());
        let inf = Value {
            kind: Some(Kind::NumberValue(f64::NEG_INFINITY)),
        };
        assert!(serde_json::to_value(&inf).is_err());
        let max_exact = json!(9_007_199_254_740_991_i64);
        assert!(serde_json::from_value::<Value>(max_exact).is_ok());
        assert!(serde_json::from_value::<Value>(json!(9_007_199_254_740_992_u64)).is_err());
        assert!(serde_json::from_value::<Value>(json!(-9_007_199_254_740_992_i64)).is_err());
        assert!(serde_json::from_value::<Struct>(json!([1])).is_err());
        assert!(serde_json::from_value::<ListValue>(json!({"a": 1})).is_err());
        assert_eq!(
            serde_json::to_value(Value::default()).unwrap(),
            Json::Null,
            "an unset kind"
        );
    }
}
