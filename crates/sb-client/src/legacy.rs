//! A 0.3 card in the 1.0 model. A 0.3 card names its interfaces with `url` and
//! `preferredTransport` (JSON-RPC when absent) plus `additionalInterfaces`, flags the
//! extended card at the top level, and lists its security requirements as
//! `[{scheme: [scopes]}]` with OpenAPI-style schemes; the 1.0 model has
//! `supportedInterfaces`, `capabilities.extendedAgentCard` and oneof schemes.

use std::collections::BTreeMap;

use sb_protocol::card::{AgentCard, AgentInterface, SecurityScheme};
use serde_json::{Map, Value, json};

/// Whether `card` is a 0.3 card only (no `supportedInterfaces` of 1.0).
pub fn is_v03_only(card: &Value) -> bool {
    card.get("supportedInterfaces").is_none() && card.get("url").is_some()
}

/// The 0.3 `card` in the 1.0 model; `Err` says what it lacks.
pub fn from_v03(card: &Value) -> Result<AgentCard, String> {
    let Value::Object(fields) = card else {
        return Err("a card must be a JSON object".into());
    };
    let text = |key: &str| fields.get(key).and_then(Value::as_str);
    let url = text("url").ok_or("a 0.3 card needs `url`")?;
    let version = text("protocolVersion").unwrap_or("0.3.0");
    let version = version.split('.').take(2).collect::<Vec<_>>().join(".");
    let mut interfaces = vec![AgentInterface {
        url: url.to_owned(),
        protocol_binding: binding(text("preferredTransport").unwrap_or("JSONRPC")),
        protocol_version: version.clone(),
        tenant: None,
    }];
    for extra in fields
        .get("additionalInterfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(url), Some(transport)) = (
            extra.get("url").and_then(Value::as_str),
            extra.get("transport").and_then(Value::as_str),
        ) else {
            return Err("every additionalInterfaces entry needs `url` and `transport`".into());
        };
        let interface = AgentInterface {
            url: url.to_owned(),
            protocol_binding: binding(transport),
            protocol_version: version.clone(),
            tenant: None,
        };
        if !interfaces.contains(&interface) {
            interfaces.push(interface);
        }
    }
    let mut v1: Map<String, Value> = fields.clone();
    for key in [
        "url",
        "preferredTransport",
        "additionalInterfaces",
        "protocolVersion",
        "security",
        "securitySchemes",
        "supportsAuthenticatedExtendedCard",
    ] {
        v1.remove(key);
    }
    v1.insert("supportedInterfaces".into(), json!(interfaces));
    if let Some(Value::Object(capabilities)) = v1.get_mut("capabilities") {
        // 0.3 only: gone in 1.0.
        capabilities.remove("stateTransitionHistory");
        let extended = fields
            .get("supportsAuthenticatedExtendedCard")
            .and_then(Value::as_bool);
        if let Some(extended) = extended {
            capabilities.insert("extendedAgentCard".into(), json!(extended));
        }
    }
    let mut parsed: AgentCard =
        serde_json::from_value(Value::Object(v1)).map_err(|e| format!("not an agent card: {e}"))?;
    parsed.security_schemes = schemes(fields.get("securitySchemes"))?;
    parsed.security_requirements = requirements(fields.get("security"))?;
    Ok(parsed)
}

/// 0.3 transports are the 1.0 bindings' names, but for `HTTP+JSON`'s older spelling.
fn binding(transport: &str) -> String {
    match transport.to_ascii_uppercase().as_str() {
        "REST" | "HTTP+JSON" | "HTTP_JSON" => "HTTP+JSON".into(),
        "GRPC" => "GRPC".into(),
        "JSONRPC" | "JSON-RPC" => "JSONRPC".into(),
        _ => transport.to_owned(),
    }
}

fn schemes(value: Option<&Value>) -> Result<BTreeMap<String, SecurityScheme>, String> {
    let mut schemes = BTreeMap::new();
    for (name, scheme) in value.and_then(Value::as_object).into_iter().flatten() {
        let field = |key: &str| scheme.get(key).and_then(Value::as_str).map(str::to_owned);
        let description = field("description");
        let converted = match field("type").as_deref() {
            Some("apiKey") => SecurityScheme::ApiKeySecurityScheme {
                description,
                location: field("in").unwrap_or_else(|| "header".into()),
                name: field("name")
                    .ok_or(format!("securitySchemes.{name}: apiKey needs `name`"))?,
            },
            Some("http") => SecurityScheme::HttpAuthSecurityScheme {
                description,
                scheme: field("scheme")
                    .ok_or(format!("securitySchemes.{name}: http needs `scheme`"))?,
                bearer_format: field("bearerFormat"),
            },
            Some("oauth2") => SecurityScheme::Oauth2SecurityScheme {
                description,
                // OpenAPI's flow objects have the members of 1.0's.
                flows: serde_json::from_value(scheme.get("flows").cloned().unwrap_or_default())
                    .map_err(|e| format!("securitySchemes.{name}: unreadable flows: {e}"))?,
                oauth2_metadata_url: field("oauth2MetadataUrl"),
            },
            Some("openIdConnect") => SecurityScheme::OpenIdConnectSecurityScheme {
                description,
                open_id_connect_url: field("openIdConnectUrl").ok_or(format!(
                    "securitySchemes.{name}: openIdConnect needs `openIdConnectUrl`"
                ))?,
            },
            other => {
                return Err(format!(
                    "securitySchemes.{name}: scheme type {other:?} is not supported yet (apiKey, http, oauth2 and openIdConnect are)"
                ));
            }
        };
        schemes.insert(name.clone(), converted);
    }
    Ok(schemes)
}

fn requirements(value: Option<&Value>) -> Result<Vec<BTreeMap<String, Vec<String>>>, String> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    serde_json::from_value(value.clone()).map_err(|e| format!("security: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_03_card_becomes_the_10_model() {
        let card = json!({
            "protocolVersion": "0.3.0", "name": "js-agent", "description": "d", "version": "1.2",
            "url": "http://h/a2a", "preferredTransport": "JSONRPC",
            "additionalInterfaces": [{"url": "http://h/a2a", "transport": "JSONRPC"},
                                     {"url": "http://h", "transport": "HTTP+JSON"}],
            "capabilities": {"streaming": true, "stateTransitionHistory": true},
            "supportsAuthenticatedExtendedCard": true,
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "S", "description": "d", "tags": []}],
            "securitySchemes": {"bearer": {"type": "http", "scheme": "Bearer"}},
            "security": [{"bearer": []}]
        });
        assert!(is_v03_only(&card));
        let v1 = from_v03(&card).unwrap();
        let interfaces: Vec<(&str, &str, &str)> = v1
            .supported_interfaces
            .iter()
            .map(|i| {
                (
                    i.url.as_str(),
                    i.protocol_binding.as_str(),
                    i.protocol_version.as_str(),
                )
            })
            .collect();
        assert_eq!(
            interfaces,
            [
                ("http://h/a2a", "JSONRPC", "0.3"),
                ("http://h", "HTTP+JSON", "0.3")
            ]
        );
        assert_eq!(v1.capabilities.extended_agent_card, Some(true));
        assert!(matches!(
            v1.security_schemes["bearer"],
            SecurityScheme::HttpAuthSecurityScheme { .. }
        ));
        assert_eq!(v1.security_requirements[0]["bearer"], Vec::<String>::new());
    }

    #[test]
    fn what_cannot_be_read_is_said() {
        let no_url = json!({"name": "a"});
        assert!(from_v03(&no_url).unwrap_err().contains("`url`"));
        let oauth = json!({"name": "a", "description": "d", "version": "1", "url": "http://h",
            "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
            "securitySchemes": {"o": {"type": "mutualTLS"}}});
        assert!(from_v03(&oauth).unwrap_err().contains("mutualTLS"));
    }
}
