//! Lenient ProtoJSON input rules shared by the wire types: int32 as number or numeric
//! string, timestamps with 0-9 fractional digits, `bytes` in either base64 alphabet.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serializer};
use serde_json::Value;

use crate::rfc3339::{self, Fraction};

/// Reads an optional int32 given as a JSON number or a numeric string (ProtoJSON).
pub(crate) fn opt_i32<'de, D: Deserializer<'de>>(de: D) -> Result<Option<i32>, D::Error> {
    let value = Option::<Value>::deserialize(de)?;
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|v| i32::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("{n} is not a 32-bit integer"))),
        Some(Value::String(s)) => s
            .trim()
            .parse::<i32>()
            .map(Some)
            .map_err(|_| D::Error::custom(format!("\"{s}\" is not a 32-bit integer"))),
        Some(other) => Err(D::Error::custom(format!(
            "expected an integer, found {}",
            json_kind(&other)
        ))),
    }
}

/// Reads a bool that may also be given as the string "true"/"false".
pub(crate) fn lenient_bool<'de, D: Deserializer<'de>>(de: D) -> Result<bool, D::Error> {
    match Option::<Value>::deserialize(de)? {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(b),
        Some(Value::String(s)) if s == "true" => Ok(true),
        Some(Value::String(s)) if s == "false" => Ok(false),
        Some(other) => Err(D::Error::custom(format!(
            "expected a boolean, found {}",
            json_kind(&other)
        ))),
    }
}

/// Names the JSON type of a value for error messages.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Formats a timestamp the way the spec recommends: UTC, `Z`, millisecond precision.
pub fn format_timestamp(ts: &DateTime<Utc>) -> String {
    rfc3339::with_text(ts, Fraction::Millis, str::to_owned)
}

/// Parses an RFC 3339 timestamp with any number of fractional digits.
pub fn parse_timestamp(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text.trim())
        .map(|ts| ts.with_timezone(&Utc))
        .map_err(|e| format!("\"{text}\" is not an RFC 3339 timestamp: {e}"))
}

pub(crate) mod opt_timestamp {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        ts: &Option<DateTime<Utc>>,
        ser: S,
    ) -> Result<S::Ok, S::Error> {
        match ts {
            Some(ts) => rfc3339::with_text(ts, Fraction::Millis, |text| ser.serialize_str(text)),
            None => ser.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        de: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        match Option::<String>::deserialize(de)? {
            None => Ok(None),
            Some(text) => parse_timestamp(&text).map(Some).map_err(D::Error::custom),
        }
    }
}

/// Decodes base64 in the standard or URL-safe alphabet, padded or not.
pub fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let trimmed = text.trim();
    for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        if let Ok(bytes) = engine.decode(trimmed) {
            return Ok(bytes);
        }
    }
    Err("not valid base64".to_owned())
}

/// Encodes bytes as standard padded base64 (the ProtoJSON output form).
pub fn encode_base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_accept_micro_and_emit_millis() {
        let ts = parse_timestamp("2026-01-02T03:04:05.750150Z").unwrap();
        assert_eq!(format_timestamp(&ts), "2026-01-02T03:04:05.750Z");
        assert!(parse_timestamp("yesterday").is_err());
    }

    #[test]
    fn base64_accepts_both_alphabets() {
        assert_eq!(decode_base64("-_8").unwrap(), vec![0xfb, 0xff]);
        assert_eq!(decode_base64("+/8=").unwrap(), vec![0xfb, 0xff]);
        assert!(decode_base64("***").is_err());
    }
}
