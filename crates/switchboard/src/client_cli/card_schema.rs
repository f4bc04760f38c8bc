//! `card get --validate` against the official A2A JSON Schemas (a2a-cli
//! `A2ACLI_CARD_GET_002`), beyond the checks `sb-client` makes before it uses a card.
//! The schemas are vendored in `crates/switchboard/schemas/` (sources, commits and
//! licence in its README): 0.3's `a2a.json` (draft-07) and the 1.0 bundle generated
//! from `a2a.proto` (2020-12), which names its definitions by title ("Agent Card") and
//! refers to them as files (`lf.a2a.v1.AgentCard.jsonschema.json`); its references are
//! pointed into the bundle here, once, before it is compiled.
//!
//! A card is checked against each generation it claims: 1.0 when it lists
//! `supportedInterfaces`, 0.3 when it has the 0.3 `url` or `protocolVersion` (a card
//! with neither is checked as 1.0). A card served for both (the merged card) is checked
//! whole against 0.3, and against 1.0 without the members only 0.3 defines, since the
//! 1.0 schema admits no member it does not know.

use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::{Map, Value, json};

const SCHEMA_1_0: &str = include_str!("../../schemas/a2a-1.0.json");
const SCHEMA_0_3: &str = include_str!("../../schemas/a2a-0.3.json");

/// The definition of an agent card in each bundle (the 1.0 one after renaming).
const CARD_1_0: &str = "AgentCard";
const CARD_0_3: &str = "AgentCard";

/// One way a card breaks a schema.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Violation {
    /// The A2A version whose schema it breaks.
    pub version: &'static str,
    /// A JSON pointer into the card (`""` for the card itself).
    pub pointer: String,
    pub message: String,
}

/// The versions `card` was checked against, and every violation found.
pub(crate) fn validate(card: &Value) -> Result<(Vec<&'static str>, Vec<Violation>), String> {
    let claims_1_0 = card.get("supportedInterfaces").is_some();
    let claims_0_3 = card.get("url").is_some() || card.get("protocolVersion").is_some();
    let mut versions = Vec::new();
    let mut violations = Vec::new();
    if claims_1_0 || !claims_0_3 {
        let schemas = schemas()?;
        let card = match claims_0_3 {
            true => without_0_3_members(card, &schemas.bundle_1_0),
            false => card.clone(),
        };
        collect("1.0", &schemas.card_1_0, &card, &mut violations);
        versions.push("1.0");
    }
    if claims_0_3 {
        collect("0.3", &schemas()?.card_0_3, card, &mut violations);
        versions.push("0.3");
    }
    Ok((versions, violations))
}

fn collect(version: &'static str, validator: &Validator, card: &Value, into: &mut Vec<Violation>) {
    for error in validator.iter_errors(card) {
        into.push(Violation {
            version,
            pointer: error.instance_path().to_string(),
            message: error.to_string(),
        });
    }
}

/// The compiled schemas, made once.
struct Schemas {
    card_1_0: Validator,
    card_0_3: Validator,
    /// The 1.0 bundle's definitions, by their new names.
    bundle_1_0: Map<String, Value>,
}

fn schemas() -> Result<&'static Schemas, String> {
    static SCHEMAS: OnceLock<Result<Schemas, String>> = OnceLock::new();
    SCHEMAS.get_or_init(compile).as_ref().map_err(Clone::clone)
}

fn compile() -> Result<Schemas, String> {
    let parse = |text: &str, name: &str| -> Result<Value, String> {
        serde_json::from_str(text).map_err(|e| format!("the vendored {name} schema: {e}"))
    };
    let bundle_1_0 = definitions_1_0(parse(SCHEMA_1_0, "1.0")?)?;
    let root_1_0 = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": bundle_1_0,
        "$ref": format!("#/$defs/{CARD_1_0}"),
    });
    let bundle_0_3 = parse(SCHEMA_0_3, "0.3")?;
    let root_0_3 = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": bundle_0_3.get("definitions").cloned().unwrap_or_default(),
        "$ref": format!("#/definitions/{CARD_0_3}"),
    });
    let build = |root: &Value, name: &str| {
        jsonschema::validator_for(root).map_err(|e| format!("the {name} schema: {e}"))
    };
    Ok(Schemas {
        card_1_0: build(&root_1_0, "1.0")?,
        card_0_3: build(&root_0_3, "0.3")?,
        bundle_1_0,
    })
}

/// The 1.0 bundle's definitions keyed by their proto names (`Agent Card` →
/// `AgentCard`), every reference pointed at them, and the `$schema` each carries
/// dropped (only a schema's root may say which draft it is).
fn definitions_1_0(bundle: Value) -> Result<Map<String, Value>, String> {
    let Some(Value::Object(definitions)) = bundle.get("definitions").cloned() else {
        return Err("the vendored 1.0 schema has no definitions".into());
    };
    Ok(definitions
        .into_iter()
        .map(|(title, mut schema)| {
            rewrite(&mut schema);
            (title.replace(' ', ""), schema)
        })
        .collect())
}

fn rewrite(schema: &mut Value) {
    match schema {
        Value::Object(members) => {
            members.remove("$schema");
            if let Some(Value::String(target)) = members.get_mut("$ref") {
                // `lf.a2a.v1.AgentCard.jsonschema.json`, `google.protobuf.Struct.jsonschema.json`.
                let name = target.trim_end_matches(".jsonschema.json");
                let name = name.rsplit('.').next().unwrap_or(name);
                *target = format!("#/$defs/{name}");
            }
            members.values_mut().for_each(rewrite);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite),
        _ => {}
    }
}

/// A merged card as 1.0 sees it: the members the 1.0 card does not define left out at
/// its top and in its security schemes.
fn without_0_3_members(card: &Value, bundle: &Map<String, Value>) -> Value {
    let known = |definition: &str| -> Vec<String> {
        bundle
            .get(definition)
            .and_then(|d| d.get("properties"))
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    };
    let card_members = known(CARD_1_0);
    let scheme_members = known("SecurityScheme");
    let mut card = card.clone();
    if let Value::Object(members) = &mut card {
        members.retain(|name, _| card_members.contains(name));
        if let Some(Value::Object(schemes)) = members.get_mut("securitySchemes") {
            for scheme in schemes.values_mut() {
                if let Value::Object(scheme) = scheme {
                    scheme.retain(|name, _| scheme_members.contains(name));
                }
            }
        }
    }
    card
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn card_1_0() -> Value {
        json!({
            "name": "a", "description": "d", "version": "1",
            "supportedInterfaces": [{"url": "http://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": true},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "s", "description": "d", "tags": []}]
        })
    }

    #[test]
    fn both_vendored_schemas_compile() {
        assert!(schemas().is_ok(), "{:?}", schemas().err());
    }

    #[test]
    fn a_valid_1_0_card_passes_and_a_broken_one_is_pointed_at() {
        assert_eq!(validate(&card_1_0()).unwrap(), (vec!["1.0"], vec![]));
        let mut broken = card_1_0();
        broken["capabilities"]["streaming"] = json!("yes");
        broken["supportedInterfaces"][0]["bogus"] = json!(1);
        let (_, violations) = validate(&broken).unwrap();
        let pointers: Vec<&str> = violations.iter().map(|v| v.pointer.as_str()).collect();
        assert!(
            pointers.contains(&"/capabilities/streaming"),
            "{violations:?}"
        );
        assert!(
            pointers.contains(&"/supportedInterfaces/0"),
            "{violations:?}"
        );
    }

    #[test]
    fn a_0_3_card_is_checked_against_the_0_3_schema() {
        let card = json!({
            "name": "a", "description": "d", "version": "1", "protocolVersion": "0.3.0",
            "url": "http://h/a2a", "capabilities": {},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "s", "description": "d", "tags": []}]
        });
        assert_eq!(validate(&card).unwrap(), (vec!["0.3"], vec![]));
        let mut broken = card;
        broken.as_object_mut().unwrap().remove("skills");
        broken["capabilities"]["pushNotifications"] = json!(3);
        let (_, violations) = validate(&broken).unwrap();
        let pointers: Vec<&str> = violations.iter().map(|v| v.pointer.as_str()).collect();
        assert!(pointers.contains(&""), "{violations:?}");
        assert!(
            pointers.contains(&"/capabilities/pushNotifications"),
            "{violations:?}"
        );
    }
}
