//! What a client checks of a card before it sends anything: the fields the spec requires,
//! interfaces it can call, and (for a caller that needs them) capabilities and skills.

use sb_protocol::card::AgentCard;

/// Every problem of `card`, or `Ok` when it can be used.
pub fn check(card: &AgentCard) -> Result<(), String> {
    let mut problems = Vec::new();
    for (field, value) in [
        ("name", &card.name),
        ("description", &card.description),
        ("version", &card.version),
    ] {
        if value.trim().is_empty() {
            problems.push(format!("`{field}` is empty"));
        }
    }
    if card.default_input_modes.is_empty() || card.default_output_modes.is_empty() {
        problems.push("`defaultInputModes` and `defaultOutputModes` are required".to_owned());
    }
    if card.supported_interfaces.is_empty() {
        problems.push("it lists no interface".to_owned());
    }
    for (i, interface) in card.supported_interfaces.iter().enumerate() {
        let at = format!("supportedInterfaces[{i}]");
        let version = interface.protocol_version.split('.').collect::<Vec<_>>();
        if version.len() < 2 || version.iter().any(|p| p.parse::<u32>().is_err()) {
            problems.push(format!(
                "{at}.protocolVersion {:?} is not MAJOR.MINOR",
                interface.protocol_version
            ));
        }
        let url = interface.url.as_str();
        let web = url.starts_with("http://") || url.starts_with("https://");
        match interface.protocol_binding.as_str() {
            "JSONRPC" | "HTTP+JSON" if !web => {
                problems.push(format!("{at}.url {url:?} is not an http(s) URL"));
            }
            "GRPC" if web || !url.contains(':') => {
                problems.push(format!("{at}.url {url:?} is not host:port"));
            }
            _ => {}
        }
    }
    for (i, skill) in card.skills.iter().enumerate() {
        if skill.id.trim().is_empty() || skill.name.trim().is_empty() {
            problems.push(format!("skills[{i}] needs an id and a name"));
        }
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("; ")),
    }
}

/// What a caller needs of an agent, checked before its first submission.
#[derive(Clone, Debug, Default)]
pub struct Required {
    pub streaming: bool,
    pub push_notifications: bool,
    /// Skill ids the agent must declare.
    pub skills: Vec<String>,
}

/// Whether `card` offers what `required` names; `Err` lists what it lacks.
pub fn meets(card: &AgentCard, required: &Required) -> Result<(), String> {
    let mut missing = Vec::new();
    if required.streaming && card.capabilities.streaming != Some(true) {
        missing.push("streaming".to_owned());
    }
    if required.push_notifications && card.capabilities.push_notifications != Some(true) {
        missing.push("push notifications".to_owned());
    }
    for skill in &required.skills {
        if !card.skills.iter().any(|s| &s.id == skill) {
            missing.push(format!("skill {skill:?}"));
        }
    }
    match missing.is_empty() {
        true => Ok(()),
        false => Err(format!("the agent does not offer {}", missing.join(", "))),
    }
}
