//! Messages between a user and an agent: who sent them ([`Role`]), their content
//! ([`Part`]), and the fresh identifiers they and tasks are given ([`new_id`]).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{Metadata, enum_from_value};
use crate::serde_util::{decode_base64, encode_base64};

/// Who sent a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Unspecified,
    User,
    Agent,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "ROLE_UNSPECIFIED",
            Self::User => "ROLE_USER",
            Self::Agent => "ROLE_AGENT",
        }
    }

    pub fn as_v03_str(self) -> &'static str {
        match self {
            Self::Unspecified => "unspecified",
            Self::User => "user",
            Self::Agent => "agent",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text.trim() {
            "ROLE_USER" | "user" | "1" => Some(Self::User),
            "ROLE_AGENT" | "agent" | "2" => Some(Self::Agent),
            "ROLE_UNSPECIFIED" | "0" => Some(Self::Unspecified),
            _ => None,
        }
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        enum_from_value(Value::deserialize(de)?, Role::parse, "role")
            .map_err(serde::de::Error::custom)
    }
}

/// The content of a part: exactly one of text, raw bytes, a URL or any JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum PartContent {
    Text(String),
    Raw(Vec<u8>),
    Url(String),
    Data(Value),
}

/// A media type without its parameters, lower-cased (`Text/Markdown; charset=utf-8` →
/// `text/markdown`), for comparing a part's `mediaType` or a `Content-Type` header.
pub fn media_type_essence(media_type: &str) -> String {
    media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// A piece of message or artifact content (1.0 `Part`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(try_from = "PartWire")]
pub struct Part {
    pub content: PartContent,
    pub metadata: Option<Metadata>,
    pub filename: Option<String>,
    pub media_type: Option<String>,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Part {
        Part {
            content: PartContent::Text(text.into()),
            metadata: None,
            filename: None,
            media_type: None,
        }
    }

    /// A DataPart: any JSON value.
    pub fn data(data: Value) -> Part {
        Part {
            content: PartContent::Data(data),
            metadata: None,
            filename: None,
            media_type: None,
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// A part as it arrives: any of its contents may be present, [`Part`] checks one is.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartWire {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default, deserialize_with = "present")]
    data: Option<Value>,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default, alias = "media_type")]
    media_type: Option<String>,
}

/// Keeps an explicit JSON `null` in `data` as a present value.
fn present<'de, D: Deserializer<'de>>(de: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(de).map(Some)
}

impl TryFrom<PartWire> for Part {
    type Error = String;

    fn try_from(wire: PartWire) -> Result<Part, String> {
        let mut contents = Vec::new();
        if let Some(text) = wire.text {
            contents.push(PartContent::Text(text));
        }
        if let Some(raw) = wire.raw {
            contents.push(PartContent::Raw(
                decode_base64(&raw).map_err(|e| format!("part.raw is {e}"))?,
            ));
        }
        if let Some(url) = wire.url {
            contents.push(PartContent::Url(url));
        }
        if let Some(data) = wire.data {
            contents.push(PartContent::Data(data));
        }
        if contents.len() != 1 {
            return Err(format!(
                "a part must have exactly one of text, raw, url or data (found {})",
                contents.len()
            ));
        }
        let content = contents.remove(0);
        Ok(Part {
            content,
            metadata: wire.metadata,
            filename: wire.filename,
            media_type: wire.media_type,
        })
    }
}

/// A part as serialised: [`PartWire`]'s fields, borrowed. Every stored event and task
/// serialises its parts, so this does not copy them first (serde's `into` would).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PartWireRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filename: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    media_type: Option<&'a str>,
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut wire = PartWireRef {
            text: None,
            raw: None,
            url: None,
            data: None,
            metadata: self.metadata.as_ref(),
            filename: self.filename.as_deref(),
            media_type: self.media_type.as_deref(),
        };
        match &self.content {
            PartContent::Text(t) => wire.text = Some(t),
            PartContent::Raw(bytes) => wire.raw = Some(encode_base64(bytes)),
            PartContent::Url(u) => wire.url = Some(u),
            PartContent::Data(d) => wire.data = Some(d),
        }
        wire.serialize(ser)
    }
}

/// One message between a user and an agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default, alias = "message_id")]
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "context_id")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "task_id")]
    pub task_id: Option<String>,
    #[serde(default = "unspecified_role")]
    pub role: Role,
    #[serde(default)]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "reference_task_ids"
    )]
    pub reference_task_ids: Vec<String>,
}

fn unspecified_role() -> Role {
    Role::Unspecified
}

impl Message {
    /// An agent message with one text part.
    pub fn agent_text(text: impl Into<String>) -> Message {
        Message {
            message_id: new_id(),
            context_id: None,
            task_id: None,
            role: Role::Agent,
            parts: vec![Part::text(text)],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// All text parts joined with newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self.parts.iter().filter_map(Part::as_text).collect();
        texts.join("\n")
    }
}

/// Generates a fresh identifier: a UUIDv7, time-ordered with 74 random bits, so ids
/// made together sort together and the store's B-trees write a few hot pages per commit
/// instead of one random page per task.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_media_types_essence_drops_its_parameters_and_case() {
        assert_eq!(
            super::media_type_essence(" Text/Markdown ; charset=utf-8"),
            "text/markdown"
        );
        assert_eq!(super::media_type_essence(""), "");
    }

    use serde_json::{Value, json};

    use super::{Part, PartContent, new_id};

    #[test]
    fn part_needs_exactly_one_content() {
        let two = serde_json::from_value::<Part>(json!({"text": "a", "url": "b"}));
        assert!(two.unwrap_err().to_string().contains("exactly one"));
        let none = serde_json::from_value::<Part>(json!({"metadata": {}}));
        assert!(none.is_err());
        let null_data: Part = serde_json::from_value(json!({"data": null})).unwrap();
        assert_eq!(null_data.content, PartContent::Data(Value::Null));
    }

    #[test]
    fn every_part_serialises_as_it_arrived() {
        let parts = [
            json!({"text": "hi \"you\""}),
            json!({"raw": "AAEC/w==", "filename": "a.bin", "mediaType": "application/octet-stream"}),
            json!({"url": "https://example.com/x", "metadata": {"k": [1, 2]}}),
            json!({"data": {"b": 1, "a": 2}}),
            json!({"data": null}),
        ];
        for wire in parts {
            let part: Part = serde_json::from_value(wire.clone()).unwrap();
            let text = serde_json::to_string(&part).unwrap();
            assert_eq!(
                serde_json::from_str::<Value>(&text).unwrap(),
                wire,
                "{text}"
            );
            // And reads back as the same part.
            assert_eq!(serde_json::from_str::<Part>(&text).unwrap(), part);
        }
        let snake: Part =
            serde_json::from_value(json!({"text": "x", "media_type": "text/plain"})).unwrap();
        let text = serde_json::to_string(&snake).unwrap();
        assert_eq!(text, r#"{"text":"x","mediaType":"text/plain"}"#);
    }

    #[test]
    fn ids_are_unique_time_ordered_v7() {
        let ids: Vec<String> = (0..1000).map(|_| new_id()).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "ids sort in creation order"
        );
        assert_eq!(ids[0].len(), 36);
        assert_eq!(&ids[0][14..15], "7");
    }
}
