//! The checks the types cannot make: names, limits, credentials and the split
//! deployment's topology. Each error names the setting and what it must be.

use std::collections::BTreeSet;

use super::{AgentKind, Config, Service};

/// The checks of every deployment (the embedding program runs them again after adding
/// its agents).
pub(crate) fn validate(config: &Config) -> Result<(), String> {
    if config.agents.is_empty() {
        return Err("no agents configured: add at least one [[agents]] entry".into());
    }
    let mut seen = BTreeSet::new();
    for agent in &config.agents {
        agent
            .validate()
            .map_err(|e| format!("agent \"{}\": {e}", agent.name))?;
        if !seen.insert(agent.name.as_str()) {
            return Err(format!("agent \"{}\" is configured twice", agent.name));
        }
    }
    if let Some(default) = &config.default_agent
        && !seen.contains(default.as_str())
    {
        return Err(format!(
            "default_agent \"{default}\" is not one of the configured agents"
        ));
    }
    sb_webhooks::AddressPolicy::parse(&config.webhook_allow.join(","))?;
    for entry in &config.auth_tokens {
        parse_token(entry)?;
    }
    for agent in &config.agents {
        if let Some(secret) = &agent.webhook_secret {
            sb_webhooks::signing::parse_secret(secret)
                .map_err(|e| format!("agent \"{}\": {e}", agent.name))?;
        }
    }
    for (name, value) in [
        ("task_ttl_secs", config.task_ttl_secs),
        ("input_timeout_secs", config.input_timeout_secs),
        ("stall_timeout_secs", config.stall_timeout_secs),
        (
            "max_streams_per_principal",
            config.max_streams_per_principal as u64,
        ),
        (
            "max_tasks_in_flight_per_principal",
            config.max_tasks_in_flight_per_principal as u64,
        ),
        ("max_delegation_depth", config.max_delegation_depth),
    ] {
        if value == 0 {
            return Err(format!("{name} must be positive"));
        }
    }
    if let Some(token) = &config.admin_token
        && (token.len() < 16 || token.contains(char::is_whitespace))
    {
        return Err("admin_token needs at least 16 characters and no spaces".into());
    }
    config.fleet.validate()?;
    if config.mcp.wait_secs == 0 {
        return Err("mcp.wait_secs must be positive".into());
    }
    let router = &config.fleet.router;
    let routers = config.agents.iter().any(|a| a.kind == AgentKind::Router);
    if router.enabled && !routers {
        if let Some(taken) = config.agents.iter().find(|a| a.name == router.name) {
            return Err(format!(
                "agent \"{}\" has the routing agent's name: set [fleet.router] name to another (or enabled = false)",
                taken.name
            ));
        }
        sb_registry::validate::check_name(&router.name)
            .map_err(|e| format!("fleet.router.name: {e}"))?;
    }
    if config.webhook_timeout_ms == 0 {
        return Err("webhook_timeout_ms must be positive".into());
    }
    if config.max_header_bytes < 8192 {
        return Err(format!(
            "max_header_bytes must be at least 8192, the smallest buffer hyper reads into (got {})",
            config.max_header_bytes
        ));
    }
    if config.max_body_bytes < 1024 {
        return Err(format!(
            "max_body_bytes must be at least 1024 (got {})",
            config.max_body_bytes
        ));
    }
    if let Some(url) = &config.public_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(format!(
            "public_url must start with http:// or https:// (got \"{url}\")"
        ));
    }
    Ok(())
}

/// The split-deployment settings: shared state, where the others are, queue limits.
pub(super) fn validate_topology(config: &Config) -> Result<(), String> {
    if let Some(url) = &config.backend
        && !(url.starts_with("redis://") || url.starts_with("rediss://"))
    {
        return Err("backend must be a redis:// or rediss:// URL".into());
    }
    if config.is_split() {
        let stateful = config.services.iter().any(|s| s.needs_backend());
        if stateful && config.backend.is_none() {
            return Err(
                "the tasks, fanout and dispatcher services share state through Redis: set --backend redis://…"
                    .into(),
            );
        }
        if config.runs(Service::Gateway) {
            for (needed, url, flag) in [
                (Service::Tasks, &config.tasks_url, "--tasks-url"),
                (Service::Fanout, &config.fanout_url, "--fanout-url"),
                (Service::Registry, &config.registry_url, "--registry-url"),
            ] {
                if !config.runs(needed) && url.is_none() {
                    return Err(format!(
                        "the gateway needs the {needed} service: run it here (--services) or give {flag}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Parses a `PRINCIPAL=TOKEN` entry.
pub fn parse_token(entry: &str) -> Result<(String, String), String> {
    match entry.split_once('=') {
        Some((principal, token))
            if !principal.trim().is_empty()
                && !token.trim().is_empty()
                && !token.contains(char::is_whitespace) =>
        {
            Ok((principal.trim().to_owned(), token.to_owned()))
        }
        _ => Err(
            "an auth token must look like PRINCIPAL=TOKEN (both non-empty, no spaces in the token)"
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Overrides, load};

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(
            load(Some("listen = 5"), Overrides::default())
                .unwrap_err()
                .contains("invalid config file")
        );
        assert!(
            load(Some("bogus = 1"), Overrides::default())
                .unwrap_err()
                .contains("unknown field")
        );
        let dup = "[[agents]]\nname='a'\nkind='echo'\n[[agents]]\nname='a'\nkind='echo'\n";
        assert!(
            load(Some(dup), Overrides::default())
                .unwrap_err()
                .contains("twice")
        );
        let bad_token = Overrides {
            auth_tokens: vec!["no-equals-sign".into()],
            ..Default::default()
        };
        assert!(
            load(None, bad_token)
                .unwrap_err()
                .contains("PRINCIPAL=TOKEN")
        );
        let bad_allow = Overrides {
            webhook_allow: vec!["10.0.0.0/33".into()],
            ..Default::default()
        };
        assert!(load(None, bad_allow).unwrap_err().contains("10.0.0.0/33"));
        let missing = Overrides {
            default_agent: Some("ghost".into()),
            ..Default::default()
        };
        assert!(load(None, missing).unwrap_err().contains("ghost"));
        let small_head = load(Some("max_header_bytes = 4096"), Overrides::default());
        assert!(small_head.unwrap_err().contains("at least 8192"));
        let no_queue = "default_agent='a'\n[[agents]]\nname='a'\nkind='echo'\nmax_queued=0\n";
        let error = load(Some(no_queue), Overrides::default()).unwrap_err();
        assert!(
            error.contains("agent \"a\": max_queued: must be positive"),
            "{error}"
        );
    }

    /// A value outside a closed set is refused by serde, which points at the setting
    /// (the file's line, or the key of a flag) and lists the values allowed.
    fn refused(file: &str, overrides: Overrides, setting: &str, allowed: &str) {
        let error = load(Some(file), overrides).unwrap_err();
        assert!(error.contains(setting), "{error}");
        assert!(error.contains(allowed), "{error}");
    }

    #[test]
    fn an_unknown_kind_names_the_kinds() {
        refused(
            "default_agent='a'\n[[agents]]\nname='a'\nkind='robot'\n",
            Overrides::default(),
            "kind='robot'",
            "unknown variant `robot`, expected one of `echo`, `consolidate`, `conformance`, `bench`, `embedded`, `worker`",
        );
    }

    #[test]
    fn an_unknown_card_form_names_the_forms() {
        refused(
            "default_agent='a'\n[[agents]]\nname='a'\nkind='echo'\ncard='0.3'\n",
            Overrides::default(),
            "card='0.3'",
            "unknown variant `0.3`, expected `merged` or `1.0`",
        );
    }

    #[test]
    fn an_unknown_worker_loss_policy_names_the_policies() {
        refused(
            "default_agent='a'\n[[agents]]\nname='a'\nkind='echo'\non_worker_lost='retry'\n",
            Overrides::default(),
            "on_worker_lost='retry'",
            "unknown variant `retry`, expected `fail` or `reassign`",
        );
    }

    #[test]
    fn an_unknown_service_names_the_services() {
        let services = "unknown variant `worker`, expected one of `gateway`, `tasks`, `fanout`, `dispatcher`, `registry`";
        refused(
            "services = ['fanout', 'worker']\n",
            Overrides::default(),
            "services = ['fanout', 'worker']",
            services,
        );
        let flag = Overrides {
            services: vec!["fanout".into(), "worker".into()],
            ..Default::default()
        };
        refused("", flag, "in `services`", services);
    }
}
