//! The checks the types cannot make of a definition. Each error names the field (as a
//! path: `skills[1].id`) and says what it must be, so `PUT /registry/agents/{name}`
//! answers 400 with something a person can fix, and a configuration file fails to load
//! the same way.

use std::collections::BTreeSet;

use crate::auth_config::AuthConfig;
use crate::definition::{AgentDefinition, AgentKind};

/// One invalid field of a definition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[error("{field}: {reason}")]
pub struct FieldError {
    /// Where, e.g. `name`, `skills[0].id`, `auth.jwt`.
    pub field: String,
    pub reason: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Longest agent name: it is a path segment, a metric label and a Redis key part.
pub const MAX_NAME_LEN: usize = 64;

/// Whether `name` can name an agent: 1 to 64 letters, digits, `-` and `_`.
pub fn check_name(name: &str) -> Result<(), FieldError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    match valid {
        true => Ok(()),
        false => Err(FieldError::new(
            "name",
            format!(
                "\"{name}\" must be 1 to {MAX_NAME_LEN} characters of letters, digits, '-' and '_'"
            ),
        )),
    }
}

impl AgentDefinition {
    /// Every check that needs only the definition.
    pub fn validate(&self) -> Result<(), FieldError> {
        check_name(&self.name)?;
        optional_text("description", self.description.as_deref())?;
        optional_text("version", self.version.as_deref())?;
        if let Some(provider) = &self.provider {
            text("provider.organization", &provider.organization)?;
            web_url("provider.url", &provider.url)?;
        }
        if let Some(url) = &self.documentation_url {
            web_url("documentation_url", url)?;
        }
        if let Some(url) = &self.icon_url {
            web_url("icon_url", url)?;
        }
        modes("default_input_modes", self.default_input_modes.as_deref())?;
        modes("default_output_modes", self.default_output_modes.as_deref())?;
        let mut ids = BTreeSet::new();
        for (i, skill) in self.skills.iter().flatten().enumerate() {
            let at = |field: &str| format!("skills[{i}].{field}");
            if skill.id.trim().is_empty() {
                return Err(FieldError::new(at("id"), "every skill needs an id"));
            }
            if !ids.insert(skill.id.as_str()) {
                return Err(FieldError::new(
                    at("id"),
                    format!("\"{}\" names two skills; ids must be unique", skill.id),
                ));
            }
            optional_text(&at("name"), skill.name.as_deref())?;
            for (j, tag) in skill.tags.iter().enumerate() {
                text(&format!("skills[{i}].tags[{j}]"), tag)?;
            }
            modes(&at("input_modes"), Some(&skill.input_modes))?;
            modes(&at("output_modes"), Some(&skill.output_modes))?;
        }
        let mut uris = BTreeSet::new();
        for (i, extension) in self.extensions.iter().enumerate() {
            let field = format!("extensions[{i}].uri");
            uri(&field, &extension.uri)?;
            if !uris.insert(extension.uri.as_str()) {
                return Err(FieldError::new(
                    field,
                    format!("\"{}\" is declared twice", extension.uri),
                ));
            }
        }
        if let Some(auth) = &self.auth {
            check_auth(auth)?;
        }
        check_api_keys(&self.api_keys)?;
        if self.max_queued == 0 {
            return Err(FieldError::new("max_queued", "must be positive"));
        }
        self.check_upstream()
    }

    /// `url` and `upstream` belong to bridged agents, and a bridged agent needs a URL.
    fn check_upstream(&self) -> Result<(), FieldError> {
        if self.kind != AgentKind::A2a {
            for (field, set) in [
                ("url", self.url.is_some()),
                ("upstream", self.upstream.is_some()),
            ] {
                if set {
                    return Err(FieldError::new(
                        field,
                        "is only for kind = \"a2a\" (a bridged A2A server)",
                    ));
                }
            }
            return Ok(());
        }
        match &self.url {
            Some(url) => web_url("url", url)?,
            None => {
                return Err(FieldError::new(
                    "url",
                    "a bridged agent (kind = \"a2a\") needs the upstream's base or card URL",
                ));
            }
        }
        let problems = self.upstream.iter().flat_map(|u| u.problems());
        match problems.into_iter().next() {
            Some((field, reason)) => Err(FieldError::new(field, reason)),
            None => Ok(()),
        }
    }
}

fn check_auth(auth: &AuthConfig) -> Result<(), FieldError> {
    for (principal, secret) in auth.credentials() {
        if principal.trim().is_empty()
            || secret.trim().is_empty()
            || secret.contains(char::is_whitespace)
        {
            return Err(FieldError::new(
                "auth",
                "every credential needs a principal and a secret without spaces",
            ));
        }
    }
    if let Some(jwt) = &auth.jwt
        && jwt.jwks_file.is_some() == jwt.jwks_url.is_some()
    {
        return Err(FieldError::new(
            "auth.jwt",
            "needs exactly one of jwks_file and jwks_url",
        ));
    }
    if let Some(oauth) = auth.jwt.as_ref().and_then(|j| j.oauth.as_ref()) {
        let urls = std::iter::once(&oauth.token_url).chain(&oauth.device_authorization_url);
        for url in urls {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(FieldError::new(
                    "auth.jwt.oauth",
                    format!("\"{url}\" is not an http(s) URL"),
                ));
            }
        }
    }
    if let Some(api) = &auth.api_keys
        && http::HeaderName::from_bytes(api.header.as_bytes()).is_err()
    {
        return Err(FieldError::new(
            "auth.api_keys.header",
            format!("\"{}\" is not a valid header name", api.header),
        ));
    }
    Ok(())
}

/// Shortest API key: a guessable key would let anyone act as the agent.
pub const MIN_API_KEY_LEN: usize = 16;

fn check_api_keys(keys: &[String]) -> Result<(), FieldError> {
    for (i, key) in keys.iter().enumerate() {
        if key.chars().count() < MIN_API_KEY_LEN || key.contains(char::is_whitespace) {
            return Err(FieldError::new(
                format!("api_keys[{i}]"),
                format!("an API key needs at least {MIN_API_KEY_LEN} characters and no spaces"),
            ));
        }
    }
    Ok(())
}

fn text(field: &str, value: &str) -> Result<(), FieldError> {
    match value.trim().is_empty() {
        true => Err(FieldError::new(field, "must not be empty")),
        false => Ok(()),
    }
}

fn optional_text(field: &str, value: Option<&str>) -> Result<(), FieldError> {
    value.map_or(Ok(()), |v| text(field, v))
}

fn web_url(field: &str, value: &str) -> Result<(), FieldError> {
    let has_host = ["http://", "https://"]
        .iter()
        .filter_map(|scheme| value.strip_prefix(scheme))
        .any(|rest| !rest.is_empty() && !rest.starts_with('/'));
    match has_host && !value.contains(char::is_whitespace) {
        true => Ok(()),
        false => Err(FieldError::new(
            field,
            format!("\"{value}\" must be an http:// or https:// URL"),
        )),
    }
}

/// An absolute URI: a scheme (RFC 3986: a letter, then letters, digits, `+-.`), a colon
/// and something after it.
fn uri(field: &str, value: &str) -> Result<(), FieldError> {
    let valid = value.split_once(':').is_some_and(|(scheme, rest)| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && !rest.is_empty()
    }) && !value.contains(char::is_whitespace);
    match valid {
        true => Ok(()),
        false => Err(FieldError::new(
            field,
            format!("\"{value}\" must be an absolute URI (e.g. https://example.com/ext/v1)"),
        )),
    }
}

/// Media types: `type/subtype` each.
fn modes(field: &str, values: Option<&[String]>) -> Result<(), FieldError> {
    for (i, mode) in values.unwrap_or_default().iter().enumerate() {
        let valid = mode
            .split_once('/')
            .is_some_and(|(kind, sub)| !kind.is_empty() && !sub.is_empty())
            && !mode.contains(char::is_whitespace);
        if !valid {
            return Err(FieldError::new(
                format!("{field}[{i}]"),
                format!("\"{mode}\" is not a media type (type/subtype, e.g. text/plain)"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::{AgentKind, ExtensionDefinition, SkillDefinition};

    fn skill(id: &str) -> SkillDefinition {
        SkillDefinition {
            id: id.into(),
            name: None,
            description: "d".into(),
            tags: vec![],
            examples: vec![],
            input_modes: vec![],
            output_modes: vec![],
        }
    }

    fn refused(change: impl FnOnce(&mut AgentDefinition), field: &str) -> FieldError {
        let mut definition = AgentDefinition::new("a", AgentKind::Worker);
        change(&mut definition);
        let error = definition.validate().unwrap_err();
        assert_eq!(error.field, field, "{error}");
        error
    }

    #[test]
    fn each_error_names_its_field() {
        AgentDefinition::new("a-b_9", AgentKind::Echo)
            .validate()
            .unwrap();
        refused(|d| d.name = "a b".into(), "name");
        refused(|d| d.name = "x".repeat(65), "name");
        refused(
            |d| d.skills = Some(vec![skill("s"), skill(" ")]),
            "skills[1].id",
        );
        let error = refused(
            |d| d.skills = Some(vec![skill("s"), skill("s")]),
            "skills[1].id",
        );
        assert!(error.reason.contains("unique"), "{error}");
        refused(
            |d| d.default_input_modes = Some(vec!["text".into()]),
            "default_input_modes[0]",
        );
        refused(|d| d.icon_url = Some("ftp://x".into()), "icon_url");
        let short = refused(
            |d| d.api_keys = vec!["long-enough-key-0123".into(), "short".into()],
            "api_keys[1]",
        );
        assert!(short.reason.contains("16 characters"), "{short}");
        refused(
            |d| d.documentation_url = Some("https://".into()),
            "documentation_url",
        );
        refused(
            |d| {
                d.extensions = vec![ExtensionDefinition {
                    uri: "cost-v1".into(),
                    description: String::new(),
                    required: false,
                    params: None,
                }]
            },
            "extensions[0].uri",
        );
        refused(|d| d.max_queued = 0, "max_queued");
        refused(
            |d| {
                d.auth = Some(AuthConfig {
                    jwt: Some(crate::auth_config::JwtConfig {
                        jwks_file: None,
                        jwks_url: None,
                        issuer: None,
                        audience: None,
                        principal_claim: None,
                        oauth: None,
                    }),
                    ..Default::default()
                })
            },
            "auth.jwt",
        );
    }
}
