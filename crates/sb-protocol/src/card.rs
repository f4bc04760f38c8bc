//! The Agent Card (spec §8, digest §3.10) in its 1.0 form, and the merged form that also
//! carries the 0.3 fields so one document serves both client generations.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// One way to reach the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    pub url: String,
    pub protocol_binding: String,
    pub protocol_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    pub url: String,
    pub organization: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    pub uri: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "crate::model::is_false")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
}

/// The URI of Switchboard's stream-resume extension (docs/extensions.md): a card that
/// lists it resumes a stream after `Last-Event-ID`.
pub const RESUME_EXTENSION: &str = "urn:switchboard:a2a:extension:stream-resume:v1";

/// A 1.0 security scheme: exactly one member set, as the proto oneof requires.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SecurityScheme {
    ApiKeySecurityScheme {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        location: String,
        name: String,
    },
    HttpAuthSecurityScheme {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        scheme: String,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            rename = "bearerFormat"
        )]
        bearer_format: Option<String>,
    },
    /// OAuth 2 (spec §4.5.4): where tokens come from, one flow per scheme in 1.0 (the
    /// proto's oneof); an agent offering two flows declares two schemes.
    Oauth2SecurityScheme {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Boxed: the largest member by far, and the rarest.
        flows: Box<OAuthFlows>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            rename = "oauth2MetadataUrl"
        )]
        oauth2_metadata_url: Option<String>,
    },
    /// OpenID Connect: the provider's discovery document names its endpoints.
    OpenIdConnectSecurityScheme {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        #[serde(rename = "openIdConnectUrl")]
        open_id_connect_url: String,
    },
}

/// The flows of an OAuth 2 scheme. The 1.0 proto sets exactly one; 0.3 cards (OpenAPI's
/// form, the same member names) may set several, so each is optional here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthFlows {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_code: Option<OAuthFlow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_credentials: Option<OAuthFlow>,
    /// RFC 8628, for clients without a browser (a CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_code: Option<OAuthFlow>,
}

/// One OAuth 2 flow: its endpoints and the scopes it grants (name → description).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuthFlow {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_authorization_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_url: Option<String>,
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
}

impl SecurityScheme {
    /// The OpenAPI-style 0.3 form of the same scheme.
    pub fn to_v03(&self) -> Value {
        match self {
            Self::ApiKeySecurityScheme {
                description,
                location,
                name,
            } => {
                let mut v = json!({"type": "apiKey", "in": location, "name": name});
                if let Some(d) = description {
                    v["description"] = json!(d);
                }
                v
            }
            Self::HttpAuthSecurityScheme {
                description,
                scheme,
                bearer_format,
            } => {
                let mut v = json!({"type": "http", "scheme": scheme});
                if let Some(d) = description {
                    v["description"] = json!(d);
                }
                if let Some(f) = bearer_format {
                    v["bearerFormat"] = json!(f);
                }
                v
            }
            Self::Oauth2SecurityScheme {
                description,
                flows,
                oauth2_metadata_url,
            } => {
                // OpenAPI's flow objects have the same members as 1.0's.
                let mut v = json!({"type": "oauth2", "flows": flows});
                if let Some(d) = description {
                    v["description"] = json!(d);
                }
                if let Some(url) = oauth2_metadata_url {
                    v["oauth2MetadataUrl"] = json!(url);
                }
                v
            }
            Self::OpenIdConnectSecurityScheme {
                description,
                open_id_connect_url,
            } => {
                let mut v =
                    json!({"type": "openIdConnect", "openIdConnectUrl": open_id_connect_url});
                if let Some(d) = description {
                    v["description"] = json!(d);
                }
                v
            }
        }
    }
}

/// The 1.0 Agent Card.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    pub name: String,
    pub description: String,
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    pub capabilities: AgentCapabilities,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Each entry is an alternative (OR); each maps scheme names to scopes (AND).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "ser_requirements",
        deserialize_with = "de_requirements"
    )]
    pub security_requirements: Vec<BTreeMap<String, Vec<String>>>,
    pub default_input_modes: Vec<String>,
    pub default_output_modes: Vec<String>,
    pub skills: Vec<AgentSkill>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
    /// JWS signatures over the card's canonical form (spec §8.4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
}

/// One JWS over the card (spec §8.4): the flattened JSON serialization with a detached
/// payload, which is the JCS form of the card without `signatures`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCardSignature {
    /// base64url of the protected JWS header.
    pub protected: String,
    /// base64url of the signature.
    pub signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Map<String, Value>>,
}

/// Reads what [`ser_requirements`] writes (ProtoJSON: `{"schemes": {name: {"list":
/// [scopes]}}}`), and the plain `{name: [scopes]}` of earlier drafts.
fn de_requirements<'de, D: serde::Deserializer<'de>>(
    de: D,
) -> Result<Vec<BTreeMap<String, Vec<String>>>, D::Error> {
    let wire: Vec<Map<String, Value>> = Vec::deserialize(de)?;
    wire.into_iter()
        .map(|requirement| {
            let schemes = match requirement.get("schemes") {
                Some(Value::Object(schemes)) if requirement.len() == 1 => schemes
                    .iter()
                    .map(|(name, scopes)| {
                        let list = scopes.get("list").cloned().unwrap_or(Value::Array(vec![]));
                        (name.clone(), list)
                    })
                    .collect(),
                _ => requirement,
            };
            schemes
                .into_iter()
                .map(|(name, scopes)| {
                    let scopes =
                        Vec::<String>::deserialize(scopes).map_err(serde::de::Error::custom)?;
                    Ok((name, scopes))
                })
                .collect()
        })
        .collect()
}

fn ser_requirements<S: serde::Serializer>(
    reqs: &[BTreeMap<String, Vec<String>>],
    ser: S,
) -> Result<S::Ok, S::Error> {
    let wire: Vec<Value> = reqs
        .iter()
        .map(|req| {
            let schemes: Map<String, Value> = req
                .iter()
                .map(|(name, scopes)| {
                    let list = if scopes.is_empty() {
                        json!({})
                    } else {
                        json!({"list": scopes})
                    };
                    (name.clone(), list)
                })
                .collect();
            json!({"schemes": schemes})
        })
        .collect();
    wire.serialize(ser)
}

/// The members of a 1.0 security scheme (a oneof: exactly one is set).
const SECURITY_SCHEME_MEMBERS: [&str; 5] = [
    "apiKeySecurityScheme",
    "httpAuthSecurityScheme",
    "oauth2SecurityScheme",
    "openIdConnectSecurityScheme",
    "mtlsSecurityScheme",
];

impl AgentCard {
    /// A card as a server serves it, strict 1.0 or merged with the 0.3 fields (which
    /// the model does not have and ignores): a merged card's security schemes carry the
    /// 0.3 members (`type`, `scheme`, …) beside the 1.0 oneof member, which are dropped
    /// before the model reads the oneof.
    pub fn from_served_json(card: &Value) -> Result<AgentCard, serde_json::Error> {
        let mut card = card.clone();
        if let Some(Value::Object(schemes)) = card.get_mut("securitySchemes") {
            for scheme in schemes.values_mut() {
                if let Value::Object(members) = scheme
                    && members
                        .keys()
                        .any(|k| SECURITY_SCHEME_MEMBERS.contains(&k.as_str()))
                {
                    members.retain(|k, _| SECURITY_SCHEME_MEMBERS.contains(&k.as_str()));
                }
            }
        }
        serde_json::from_value(card)
    }

    /// The card as one JSON document for both generations: every 1.0 field, plus the 0.3
    /// fields derived from the first 0.3 interface (the merged card of digest §3.10).
    pub fn to_merged_json(&self) -> Value {
        let mut card = serde_json::to_value(self).unwrap_or_else(|_| json!({}));
        let Value::Object(obj) = &mut card else {
            return card;
        };
        let v03: Vec<&AgentInterface> = self
            .supported_interfaces
            .iter()
            .filter(|i| i.protocol_version.starts_with("0.3"))
            .collect();
        if let Some(first) = v03.first() {
            obj.insert("protocolVersion".into(), json!("0.3.0"));
            obj.insert("url".into(), json!(first.url));
            obj.insert("preferredTransport".into(), json!(first.protocol_binding));
            let additional: Vec<Value> = v03
                .iter()
                .map(|i| json!({"url": i.url, "transport": i.protocol_binding}))
                .collect();
            obj.insert("additionalInterfaces".into(), Value::Array(additional));
        }
        obj.insert(
            "supportsAuthenticatedExtendedCard".into(),
            json!(self.capabilities.extended_agent_card.unwrap_or(false)),
        );
        if !self.security_requirements.is_empty() {
            let security: Vec<Value> = self
                .security_requirements
                .iter()
                .map(|req| json!(req))
                .collect();
            obj.insert("security".into(), Value::Array(security));
        }
        if let Some(Value::Object(schemes)) = obj.get_mut("securitySchemes") {
            for (name, scheme) in &self.security_schemes {
                if let (Some(Value::Object(wire)), Value::Object(v03)) =
                    (schemes.get_mut(name), scheme.to_v03())
                {
                    wire.extend(v03);
                }
            }
        }
        card
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_card_has_both_generations() {
        let card = AgentCard {
            name: "echo".into(),
            description: "d".into(),
            supported_interfaces: vec![
                AgentInterface {
                    url: "http://h/a2a".into(),
                    protocol_binding: "JSONRPC".into(),
                    protocol_version: "1.0".into(),
                    tenant: None,
                },
                AgentInterface {
                    url: "http://h/a2a".into(),
                    protocol_binding: "JSONRPC".into(),
                    protocol_version: "0.3".into(),
                    tenant: None,
                },
                AgentInterface {
                    url: "http://h".into(),
                    protocol_binding: "HTTP+JSON".into(),
                    protocol_version: "0.3".into(),
                    tenant: None,
                },
            ],
            provider: None,
            version: "1".into(),
            documentation_url: None,
            capabilities: AgentCapabilities {
                streaming: Some(true),
                ..Default::default()
            },
            security_schemes: BTreeMap::from([(
                "bearer".into(),
                SecurityScheme::HttpAuthSecurityScheme {
                    description: None,
                    scheme: "Bearer".into(),
                    bearer_format: None,
                },
            )]),
            security_requirements: vec![BTreeMap::from([("bearer".into(), vec![])])],
            default_input_modes: vec!["text/plain".into()],
            default_output_modes: vec!["text/plain".into()],
            skills: vec![],
            icon_url: None,
            signatures: vec![],
        };
        let v = card.to_merged_json();
        assert_eq!(v["url"], "http://h/a2a");
        assert_eq!(v["preferredTransport"], "JSONRPC");
        assert_eq!(v["additionalInterfaces"][1]["transport"], "HTTP+JSON");
        assert_eq!(
            v["securityRequirements"][0],
            json!({"schemes": {"bearer": {}}})
        );
        assert_eq!(v["security"][0], json!({"bearer": []}));
        assert_eq!(v["securitySchemes"]["bearer"]["type"], "http");
        assert_eq!(
            v["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
            "Bearer"
        );
    }

    #[test]
    fn oauth2_and_openid_schemes_read_and_write_as_the_proto_says() {
        let schemes = json!({
            "device": {"oauth2SecurityScheme": {"flows": {"deviceCode": {
                "deviceAuthorizationUrl": "https://as/device", "tokenUrl": "https://as/token",
                "scopes": {"a2a": "call the agent"}}}}},
            "oidc": {"openIdConnectSecurityScheme": {
                "openIdConnectUrl": "https://as/.well-known/openid-configuration"}}
        });
        let read: BTreeMap<String, SecurityScheme> =
            serde_json::from_value(schemes.clone()).unwrap();
        let SecurityScheme::Oauth2SecurityScheme { flows, .. } = &read["device"] else {
            panic!("not OAuth 2: {:?}", read["device"]);
        };
        let device = flows.device_code.as_ref().unwrap();
        assert_eq!(device.token_url.as_deref(), Some("https://as/token"));
        assert_eq!(serde_json::to_value(&read).unwrap(), schemes);
        assert_eq!(read["device"].to_v03()["type"], "oauth2");
        assert_eq!(
            read["device"].to_v03()["flows"]["deviceCode"]["tokenUrl"],
            "https://as/token"
        );
        assert_eq!(read["oidc"].to_v03()["type"], "openIdConnect");
    }

    #[test]
    fn a_card_reads_back_what_it_writes() {
        let card: AgentCard = serde_json::from_value(json!({
            "name": "a", "description": "d", "supportedInterfaces": [], "version": "1",
            "capabilities": {}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": [],
            "securityRequirements": [{"bearer": []}, {"oauth": ["read", "write"]}]
        }))
        .unwrap();
        assert_eq!(card.security_requirements[1]["oauth"], ["read", "write"]);
        let written = serde_json::to_value(&card).unwrap();
        assert_eq!(
            written["securityRequirements"],
            json!([{"schemes": {"bearer": {}}}, {"schemes": {"oauth": {"list": ["read", "write"]}}}])
        );
        let again: AgentCard = serde_json::from_value(written).unwrap();
        assert_eq!(again, card);
    }

    #[test]
    fn a_merged_card_reads_back_as_the_card() {
        let card: AgentCard = serde_json::from_value(json!({
            "name": "a", "description": "d", "version": "1", "capabilities": {},
            "supportedInterfaces": [{"url": "http://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}],
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": [],
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            "securityRequirements": [{"schemes": {"bearer": {}}}]
        }))
        .unwrap();
        let merged = card.to_merged_json();
        assert_eq!(merged["securitySchemes"]["bearer"]["type"], "http");
        assert!(serde_json::from_value::<AgentCard>(merged.clone()).is_err());
        assert_eq!(AgentCard::from_served_json(&merged).unwrap(), card);
    }
}
