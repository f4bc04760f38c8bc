//! Which of a card's interfaces a client calls: the newest protocol version it speaks,
//! then the binding it prefers, then the agent's own order among equals.

use sb_protocol::card::AgentCard;

/// Which generation of its binding an interface speaks: the HTTP bindings differ
/// between A2A 1.0 and 0.3 in method names, shapes and headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Generation {
    V1,
    V03,
}

impl Generation {
    /// The generation of a card's `protocolVersion`, when this client speaks it.
    pub(crate) fn of(version: &str) -> Option<Generation> {
        match version {
            "1.0" => Some(Generation::V1),
            "0.3" => Some(Generation::V03),
            _ => None,
        }
    }

    /// The `A2A-Version` header it is asked for with.
    pub(crate) fn header(self) -> &'static str {
        match self {
            Generation::V1 => "1.0",
            Generation::V03 => "0.3",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    HttpJson,
    Grpc,
}

impl Binding {
    pub fn card_name(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSONRPC",
            Binding::HttpJson => "HTTP+JSON",
            Binding::Grpc => "GRPC",
        }
    }
}

/// A client's preferences, most wanted first.
#[derive(Clone, Debug)]
pub struct Preferences {
    /// `MAJOR.MINOR` versions the client speaks.
    pub versions: Vec<String>,
    pub bindings: Vec<Binding>,
}

impl Default for Preferences {
    fn default() -> Self {
        Preferences {
            versions: vec!["1.0".into(), "0.3".into()],
            bindings: vec![Binding::JsonRpc, Binding::HttpJson, Binding::Grpc],
        }
    }
}

/// The interface to call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub binding: Binding,
    /// `MAJOR.MINOR`.
    pub version: String,
    pub url: String,
    /// Copied into every request when set (spec §5.3).
    pub tenant: Option<String>,
}

fn major_minor(version: &str) -> String {
    version.split('.').take(2).collect::<Vec<_>>().join(".")
}

/// Whether this client speaks `binding` at `version` (gRPC only at 1.0: the 0.3 gRPC
/// API is another proto package nobody serves beside 1.0).
fn speaks(binding: Binding, version: &str) -> bool {
    matches!(
        (binding, version),
        (_, "1.0") | (Binding::JsonRpc | Binding::HttpJson, "0.3")
    )
}

/// The best interface of `card` for `preferences`, if any suits them.
pub fn choose(card: &AgentCard, preferences: &Preferences) -> Option<Chosen> {
    for version in &preferences.versions {
        for binding in &preferences.bindings {
            if !speaks(*binding, version) {
                continue;
            }
            let found = card.supported_interfaces.iter().find(|i| {
                i.protocol_binding == binding.card_name()
                    && &major_minor(&i.protocol_version) == version
            });
            if let Some(interface) = found {
                return Some(Chosen {
                    binding: *binding,
                    version: version.clone(),
                    url: interface.url.clone(),
                    tenant: interface.tenant.clone().filter(|t| !t.is_empty()),
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn card(interfaces: serde_json::Value) -> AgentCard {
        serde_json::from_value(serde_json::json!({
            "name": "a", "description": "d", "version": "1", "capabilities": {},
            "supportedInterfaces": interfaces,
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []
        }))
        .unwrap()
    }

    #[test]
    fn the_newest_version_then_the_preferred_binding() {
        let offered = card(serde_json::json!([
            {"url": "http://h/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"},
            {"url": "h:1", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "a"},
            {"url": "http://h", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}
        ]));
        let chosen = choose(&offered, &Preferences::default()).unwrap();
        assert_eq!(
            (chosen.binding, chosen.url.as_str()),
            (Binding::HttpJson, "http://h")
        );
        let grpc_first = Preferences {
            bindings: vec![Binding::Grpc, Binding::JsonRpc],
            ..Preferences::default()
        };
        let chosen = choose(&offered, &grpc_first).unwrap();
        assert_eq!(chosen.tenant.as_deref(), Some("a"));
        let old_only = Preferences {
            versions: vec!["0.3".into()],
            ..Preferences::default()
        };
        let chosen = choose(&offered, &old_only).unwrap();
        assert_eq!(
            (chosen.version.as_str(), chosen.url.as_str()),
            ("0.3", "http://h/v03")
        );
        let nothing = Preferences {
            versions: vec!["2.0".into()],
            ..Preferences::default()
        };
        assert!(choose(&offered, &nothing).is_none());
    }
}
