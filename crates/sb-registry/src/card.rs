//! An agent's card, made from its definition: what the definition says, else what its
//! kind brings ([`CardDefaults`]), the security schemes its authentication checks, the
//! extensions Switchboard adds, and the interfaces of the deployment serving it.

use std::collections::BTreeMap;

use sb_protocol::card::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    OAuthFlow, OAuthFlows, SecurityScheme,
};
use sha2::{Digest, Sha256};

use crate::auth_config::AuthConfig;
use crate::definition::AgentDefinition;

/// What a kind of agent brings to its cards where the definition says nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CardDefaults {
    pub description: String,
    pub skills: Vec<AgentSkill>,
    pub input_modes: Vec<String>,
    pub output_modes: Vec<String>,
    pub provider: Option<AgentProvider>,
}

/// What every card a deployment serves has in common.
#[derive(Clone, Debug, Default)]
pub struct CardSettings {
    /// The externally visible base URL (no trailing slash needed).
    pub public_url: String,
    /// Bearer tokens accepted by every agent (`--auth-token`) are configured.
    pub shared_bearer: bool,
    /// Extensions on every card (Switchboard's own, e.g. stream resume).
    pub extensions: Vec<AgentExtension>,
}

/// The media type an agent takes and gives when nothing says otherwise.
const TEXT: &str = "text/plain";

/// The card of `definition` without its interfaces (they depend on where it is served:
/// [`at`]); its version is the definition's, or a digest of the card's content.
pub fn describe(
    definition: &AgentDefinition,
    defaults: &CardDefaults,
    settings: &CardSettings,
) -> AgentCard {
    let (security_schemes, security_requirements) =
        card_security(definition.auth.as_ref(), settings.shared_bearer);
    let skills = match &definition.skills {
        Some(skills) => skills.iter().map(skill).collect(),
        None => defaults.skills.clone(),
    };
    let modes = |given: &Option<Vec<String>>, default: &[String]| {
        given
            .clone()
            .or_else(|| (!default.is_empty()).then(|| default.to_vec()))
            .unwrap_or_else(|| vec![TEXT.to_owned()])
    };
    let mut extensions: Vec<AgentExtension> = definition
        .extensions
        .iter()
        .map(|e| AgentExtension {
            uri: e.uri.clone(),
            description: e.description.clone(),
            required: e.required,
            params: e.params.clone(),
        })
        .collect();
    extensions.extend(settings.extensions.iter().cloned());
    let mut card = AgentCard {
        name: definition.name.clone(),
        description: definition
            .description
            .clone()
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| match defaults.description.is_empty() {
                true => format!("The {} agent", definition.name),
                false => defaults.description.clone(),
            }),
        supported_interfaces: Vec::new(),
        provider: definition
            .provider
            .as_ref()
            .map(|p| AgentProvider {
                organization: p.organization.clone(),
                url: p.url.clone(),
            })
            .or_else(|| defaults.provider.clone()),
        version: String::new(),
        documentation_url: definition.documentation_url.clone(),
        capabilities: AgentCapabilities {
            // Switchboard streams and pushes for every agent, whatever its code.
            streaming: Some(true),
            push_notifications: Some(true),
            extended_agent_card: Some(!security_schemes.is_empty()),
            extensions,
        },
        security_schemes,
        security_requirements,
        default_input_modes: modes(&definition.default_input_modes, &defaults.input_modes),
        default_output_modes: modes(&definition.default_output_modes, &defaults.output_modes),
        skills,
        icon_url: definition.icon_url.clone(),
        signatures: Vec::new(),
    };
    card.version = match &definition.version {
        Some(version) => version.clone(),
        None => content_version(&card),
    };
    card
}

/// A digest of what the card says (interfaces, version and signatures aside): a change
/// of the definition that changes the card changes it, and nothing else does.
fn content_version(card: &AgentCard) -> String {
    format!("0.0.0+{}", &content_hash(card)[..12])
}

/// SHA-256 (hex) of a card's canonical form (RFC 8785, as signed, signatures aside):
/// the same content written in another key order, e.g. a reordered TOML table of
/// extension params, has the same hash.
pub fn content_hash(card: &AgentCard) -> String {
    let json = serde_json::to_value(card).unwrap_or_default();
    let bytes = crate::signing::canonical_payload(&json)
        .unwrap_or_else(|_| serde_json::to_vec(card).unwrap_or_default());
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn skill(definition: &crate::definition::SkillDefinition) -> AgentSkill {
    let name = definition
        .name
        .clone()
        .unwrap_or_else(|| definition.id.clone());
    AgentSkill {
        id: definition.id.clone(),
        // The card requires a description; a skill without one is described by its name.
        description: match definition.description.trim().is_empty() {
            true => name.clone(),
            false => definition.description.clone(),
        },
        name,
        tags: definition.tags.clone(),
        examples: definition.examples.clone(),
        input_modes: definition.input_modes.clone(),
        output_modes: definition.output_modes.clone(),
    }
}

/// `card` served at `base`: JSON-RPC at `{base}/a2a`, HTTP+JSON at `{base}` (1.0 paths)
/// and `{base}/v1/…` (0.3 paths), both versions, and `grpc` (1.0 only); 1.0 preferred.
pub fn at(mut card: AgentCard, base: &str, grpc: AgentInterface) -> AgentCard {
    card.supported_interfaces = vec![
        interface(format!("{base}/a2a"), "JSONRPC", "1.0"),
        interface(base.to_owned(), "HTTP+JSON", "1.0"),
        grpc,
        interface(format!("{base}/a2a"), "JSONRPC", "0.3"),
        interface(base.to_owned(), "HTTP+JSON", "0.3"),
    ];
    card
}

/// The gRPC interface of an agent: every agent shares the origin's address, and the
/// interface's `tenant` names the agent (`None` for the root's default agent).
pub fn grpc_interface(public_url: &str, tenant: Option<&str>) -> AgentInterface {
    AgentInterface {
        tenant: tenant.map(str::to_owned),
        ..interface(grpc_address(public_url), "GRPC", "1.0")
    }
}

fn interface(url: String, binding: &str, version: &str) -> AgentInterface {
    AgentInterface {
        url,
        protocol_binding: binding.into(),
        protocol_version: version.into(),
        tenant: None,
    }
}

/// The gRPC target (`host:port`, spec §5.3) of the public URL: gRPC paths are fixed
/// (`/lf.a2a.v1.A2AService/…`), so every agent shares the origin's address.
pub fn grpc_address(public_url: &str) -> String {
    let (default_port, rest) = match public_url.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (443, rest),
        Some((_, rest)) => (80, rest),
        None => (80, public_url),
    };
    let authority = rest.split('/').next().unwrap_or_default();
    // An IPv6 literal has colons of its own: only one after `]` is a port.
    let has_port = match authority.rsplit_once(']') {
        Some((_, after)) => after.starts_with(':'),
        None => authority.contains(':'),
    };
    match has_port {
        true => authority.to_owned(),
        false => format!("{authority}:{default_port}"),
    }
}

/// Security schemes by name, as the card lists them.
pub type SecuritySchemes = BTreeMap<String, SecurityScheme>;
/// Scheme names (each with its scopes) that together satisfy a requirement.
pub type SecurityRequirement = BTreeMap<String, Vec<String>>;

/// Names of the schemes on the card, as the gateway's authenticator checks them.
pub const BEARER_SCHEME: &str = "bearer";
pub const API_KEY_SCHEME: &str = "apiKey";
pub const JWT_SCHEME: &str = "jwt";
/// The JWT issuer's client-credentials flow (`auth.jwt.oauth`).
pub const OAUTH2_SCHEME: &str = "oauth2";
/// The JWT issuer's device-code flow (`auth.jwt.oauth.device_authorization_url`).
pub const OAUTH2_DEVICE_SCHEME: &str = "oauth2Device";

/// The security schemes and requirements (any one scheme suffices) of an agent that
/// authenticates as `auth` says, plus the shared bearer tokens when there are any.
pub fn card_security(
    auth: Option<&AuthConfig>,
    shared_bearer: bool,
) -> (SecuritySchemes, Vec<SecurityRequirement>) {
    let mut schemes = BTreeMap::new();
    let mut requirements = Vec::new();
    let mut declare = |name: &str, scheme: SecurityScheme| {
        schemes.insert(name.to_owned(), scheme);
        requirements.push(BTreeMap::from([(name.to_owned(), Vec::new())]));
    };
    if shared_bearer || auth.is_some_and(|a| !a.bearer.is_empty()) {
        declare(
            BEARER_SCHEME,
            SecurityScheme::HttpAuthSecurityScheme {
                description: Some("a bearer token issued by the operator".into()),
                scheme: "Bearer".into(),
                bearer_format: None,
            },
        );
    }
    if auth.is_some_and(|a| a.jwt.is_some()) {
        declare(
            JWT_SCHEME,
            SecurityScheme::HttpAuthSecurityScheme {
                description: Some("a JWT signed by a key of the operator's key set".into()),
                scheme: "Bearer".into(),
                bearer_format: Some("JWT".into()),
            },
        );
    }
    if let Some(oauth) = auth
        .and_then(|a| a.jwt.as_ref())
        .and_then(|j| j.oauth.as_ref())
    {
        let flow = |device_authorization_url: Option<String>| OAuthFlow {
            device_authorization_url,
            token_url: Some(oauth.token_url.clone()),
            scopes: oauth.scopes.clone(),
            ..OAuthFlow::default()
        };
        let scheme = |description: &str, flows: OAuthFlows| SecurityScheme::Oauth2SecurityScheme {
            description: Some(description.into()),
            flows: Box::new(flows),
            oauth2_metadata_url: None,
        };
        if oauth.client_credentials {
            declare(
                OAUTH2_SCHEME,
                scheme(
                    "a JWT from the operator's authorization server, for a client with its own credentials",
                    OAuthFlows {
                        client_credentials: Some(flow(None)),
                        ..OAuthFlows::default()
                    },
                ),
            );
        }
        if let Some(url) = &oauth.device_authorization_url {
            declare(
                OAUTH2_DEVICE_SCHEME,
                scheme(
                    "a JWT from the operator's authorization server, for a person at a terminal",
                    OAuthFlows {
                        device_code: Some(flow(Some(url.clone()))),
                        ..OAuthFlows::default()
                    },
                ),
            );
        }
    }
    if let Some(api) = auth.and_then(|a| a.api_keys.as_ref()) {
        declare(
            API_KEY_SCHEME,
            SecurityScheme::ApiKeySecurityScheme {
                description: Some("an API key issued by the operator".into()),
                location: "header".into(),
                name: api.header.clone(),
            },
        );
    }
    (schemes, requirements)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{AgentKind, ExtensionDefinition, SkillDefinition};

    #[test]
    fn an_issuer_of_jwts_is_advertised_as_oauth2_schemes() {
        let auth: AuthConfig = serde_json::from_value(serde_json::json!({"jwt": {
            "jwks_url": "https://as/jwks",
            "oauth": {"token_url": "https://as/token",
                      "device_authorization_url": "https://as/device",
                      "scopes": {"a2a": "call the agent"}}
        }}))
        .unwrap();
        let (schemes, requirements) = card_security(Some(&auth), false);
        let Some(SecurityScheme::Oauth2SecurityScheme { flows, .. }) = schemes.get(OAUTH2_SCHEME)
        else {
            panic!("no client-credentials scheme: {schemes:?}");
        };
        let machine = flows.client_credentials.as_ref().unwrap();
        assert_eq!(machine.token_url.as_deref(), Some("https://as/token"));
        let Some(SecurityScheme::Oauth2SecurityScheme { flows, .. }) =
            schemes.get(OAUTH2_DEVICE_SCHEME)
        else {
            panic!("no device scheme: {schemes:?}");
        };
        let device = flows.device_code.as_ref().unwrap();
        assert_eq!(
            device.device_authorization_url.as_deref(),
            Some("https://as/device")
        );
        assert!(device.scopes.contains_key("a2a"));
        assert_eq!(
            requirements.len(),
            3,
            "jwt, oauth2, oauth2Device: any one suffices"
        );
    }

    #[test]
    fn grpc_address_is_host_and_port() {
        assert_eq!(grpc_address("http://127.0.0.1:28932"), "127.0.0.1:28932");
        assert_eq!(
            grpc_address("https://a2a.example.com/base"),
            "a2a.example.com:443"
        );
        assert_eq!(grpc_address("http://example.com"), "example.com:80");
        assert_eq!(grpc_address("http://[::1]:8080/x"), "[::1]:8080");
        assert_eq!(grpc_address("https://[::1]"), "[::1]:443");
    }

    fn defaults() -> CardDefaults {
        CardDefaults {
            description: "Echoes".into(),
            skills: vec![AgentSkill {
                id: "echo".into(),
                name: "Echo".into(),
                description: "echoes".into(),
                tags: vec!["echo".into()],
                examples: vec![],
                input_modes: vec![],
                output_modes: vec![],
            }],
            input_modes: vec!["text/plain".into()],
            output_modes: vec!["text/plain".into()],
            provider: Some(AgentProvider {
                organization: "Switchboard".into(),
                url: "https://example.com".into(),
            }),
        }
    }

    #[test]
    fn a_definition_overrides_its_kinds_defaults_field_by_field() {
        let settings = CardSettings::default();
        let plain = describe(
            &AgentDefinition::new("e", AgentKind::Echo),
            &defaults(),
            &settings,
        );
        assert_eq!(plain.description, "Echoes");
        assert_eq!(plain.skills[0].id, "echo");
        assert_eq!(plain.provider.as_ref().unwrap().organization, "Switchboard");
        let mut own = AgentDefinition::new("e", AgentKind::Echo);
        own.description = Some("Mine".into());
        own.skills = Some(vec![SkillDefinition {
            id: "s".into(),
            name: None,
            description: String::new(),
            tags: vec!["t".into()],
            examples: vec!["ex".into()],
            input_modes: vec![],
            output_modes: vec![],
        }]);
        own.extensions = vec![ExtensionDefinition {
            uri: "https://example.com/cost-v1".into(),
            description: String::new(),
            required: false,
            params: None,
        }];
        let card = describe(&own, &defaults(), &settings);
        assert_eq!(card.description, "Mine");
        assert_eq!(card.skills.len(), 1);
        assert_eq!(
            (
                card.skills[0].name.as_str(),
                card.skills[0].description.as_str()
            ),
            ("s", "s"),
            "a skill without a name or description is named and described by its id"
        );
        assert_eq!(
            card.capabilities.extensions[0].uri,
            "https://example.com/cost-v1"
        );
        assert_eq!(card.default_input_modes, ["text/plain"]);
    }

    #[test]
    fn the_version_follows_the_content_unless_set() {
        let settings = CardSettings::default();
        let base = AgentDefinition::new("e", AgentKind::Worker);
        let first = describe(&base, &CardDefaults::default(), &settings).version;
        let again = describe(&base, &CardDefaults::default(), &settings).version;
        assert_eq!(first, again);
        let mut changed = base.clone();
        changed.description = Some("new".into());
        let second = describe(&changed, &CardDefaults::default(), &settings).version;
        assert_ne!(first, second);
        let mut queue_only = base;
        queue_only.max_queued = 5;
        assert_eq!(
            describe(&queue_only, &CardDefaults::default(), &settings).version,
            first,
            "what is not on the card does not make a new version"
        );
        changed.version = Some("2.1.0".into());
        assert_eq!(
            describe(&changed, &CardDefaults::default(), &settings).version,
            "2.1.0"
        );
    }
}
