//! `conformance AGENT` (a2a-cli `A2ACLI_CONFORM_001`): a smoke check of a live agent
//! against the mandatory behaviours of the A2A TCK that any client can verify
//! (`conformance_checks`): the card (found, usable, valid against the A2A JSON Schema),
//! then, on each interface the card declares at the version asked for (or those
//! `--transport` names), the calls and the errors they must give. Not the TCK itself:
//! it needs no agent made for it, and says what passed, failed or was skipped, and why.
//! Exit 0 only when no check failed (skipped ones do not fail).

use std::time::Duration;

use clap::Args;
use sb_client::interface::{Binding, Preferences};
use sb_protocol::card::AgentCard;
use serde_json::json;

use super::agent;
use super::card_schema;
use super::conformance_capabilities;
use super::conformance_checks::{self as checks, Check, Probe, Verdict};
use super::error::{CliError, exit};
use super::opts::{AgentOpts, FormatOpts, parse_duration};
use super::output::Out;

#[derive(Debug, Args)]
pub(crate) struct ConformanceArgs {
    /// The agent (unless -a names it).
    #[arg(value_name = "AGENT")]
    pub agent_ref: Option<String>,
    /// The longest one call (or one stream) may take before its check fails.
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub timeout: Duration,
    /// The webhook URL of the push-config check (the agent may resolve it or refuse
    /// addresses it deems private; nothing is delivered to it for an ended task).
    #[arg(
        long,
        default_value = "https://example.com/a2a-cli-conformance-webhook"
    )]
    pub webhook_url: String,
    #[command(flatten)]
    pub agent: AgentOpts,
    #[command(flatten)]
    pub output: FormatOpts,
}

pub(crate) async fn run(args: ConformanceArgs) -> Result<u8, CliError> {
    let reference = args
        .agent
        .card
        .reference(args.agent_ref.as_ref(), "`conformance AGENT`")?;
    let out = Out::plain(&args.output, false);
    let http = agent::http_client(&args.agent.card)?;
    let mut results = Vec::new();
    // A card that cannot be had or used ends the check as any command would end.
    let found = agent::card(&http, &reference).await?;
    results.push(card_check(&found.json));
    let bindings = bindings(&found.card, &args.agent)?;
    if bindings.is_empty() {
        return Err(CliError::card_invalid(format!(
            "the card offers no interface this client speaks at A2A {}",
            args.agent.a2a_version
        )));
    }
    let placement = agent::credentials(&args.agent)?.placed_for(Some(&found.card));
    for binding in bindings {
        let preferences = Preferences {
            versions: vec![args.agent.a2a_version.trim().to_owned()],
            bindings: vec![binding],
        };
        let Some(chosen) = sb_client::interface::choose(&found.card, &preferences) else {
            // Named by --transport (or declared at another version only): said, not hidden.
            results.push(Check {
                name: "interface",
                interface: Some(format!(
                    "{} {}",
                    binding.card_name(),
                    args.agent.a2a_version
                )),
                requirement: "CARD-PROTO-002",
                verdict: Verdict::Skip,
                reason: "the card declares no such interface at this version".into(),
            });
            continue;
        };
        let transport = match sb_client::connect(http.clone(), &chosen, placement.clone()) {
            Ok(transport) => transport,
            Err(e) => {
                results.push(Check {
                    name: "interface",
                    interface: Some(format!("{} {}", binding.card_name(), chosen.version)),
                    requirement: "CARD-PROTO-002",
                    verdict: Verdict::Fail,
                    reason: e.to_string(),
                });
                continue;
            }
        };
        let probe = Probe {
            card: &found.card,
            chosen,
            transport,
            http: http.clone(),
            placement: placement.clone(),
            timeout: args.timeout,
            webhook_url: args.webhook_url.clone(),
        };
        results.extend(interface_checks(&probe).await);
    }
    report(&out, &found.url, &results)?;
    Ok(match results.iter().any(|c| c.verdict == Verdict::Fail) {
        true => exit::FAILURE,
        false => 0,
    })
}

/// The checks of one interface, in the order a client would make the calls.
async fn interface_checks(probe: &Probe<'_>) -> Vec<Check> {
    let (sent, task) = checks::send(probe).await;
    vec![
        sent,
        checks::get_task(probe, task.as_ref()).await,
        checks::get_unknown(probe).await,
        checks::cancel_unknown(probe).await,
        checks::unknown_method(probe).await,
        conformance_capabilities::streaming(probe).await,
        checks::list_tasks(probe).await,
        conformance_capabilities::push_configs(probe, task.as_ref()).await,
    ]
}

/// CARD-DISC-001, CARD-STRUCT-001: the card was found and read (else the command
/// failed already) and is valid against the A2A JSON Schema of each version it claims.
fn card_check(card: &serde_json::Value) -> Check {
    let (verdict, reason) = match card_schema::validate(card) {
        Err(reason) => (Verdict::Fail, reason),
        Ok((versions, violations)) if violations.is_empty() => {
            let schemas = match versions.len() {
                1 => "schema",
                _ => "schemas",
            };
            let versions = versions.join(" and ");
            (
                Verdict::Pass,
                format!("valid against the A2A {versions} {schemas}"),
            )
        }
        Ok((_, violations)) => {
            let first: Vec<String> = violations
                .iter()
                .take(3)
                .map(|v| format!("[{}] {}: {}", v.version, v.pointer, v.message))
                .collect();
            let reason = format!(
                "{} schema violations: {}",
                violations.len(),
                first.join("; ")
            );
            (Verdict::Fail, reason)
        }
    };
    Check {
        name: "agent card",
        interface: None,
        requirement: "CARD-DISC-001, CARD-STRUCT-001",
        verdict,
        reason,
    }
}

/// The bindings to check: those `--transport` names, else every one the card declares.
fn bindings(card: &AgentCard, opts: &AgentOpts) -> Result<Vec<Binding>, CliError> {
    let named: Vec<String> = match opts.transports.is_empty() {
        true => card
            .supported_interfaces
            .iter()
            .map(|i| i.protocol_binding.clone())
            .collect(),
        false => opts.transports.clone(),
    };
    let mut bindings = Vec::new();
    for name in named {
        let binding = match agent::binding(&name) {
            Some(binding) => binding,
            // A binding of the card's this client does not speak is not checked.
            None if opts.transports.is_empty() => continue,
            None => {
                return Err(CliError::usage(format!(
                    "--transport {name:?}: expected JSONRPC, HTTP+JSON or GRPC"
                )));
            }
        };
        if !bindings.contains(&binding) {
            bindings.push(binding);
        }
    }
    Ok(bindings)
}

fn report(out: &Out, card_url: &str, results: &[Check]) -> Result<(), CliError> {
    let count = |verdict| results.iter().filter(|c| c.verdict == verdict).count();
    let (passed, failed, skipped) = (
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Skip),
    );
    if out.is_json() {
        return out.json(&json!({
            "agentCard": card_url,
            "checks": results,
            "summary": {"passed": passed, "failed": failed, "skipped": skipped},
        }));
    }
    let mut text = format!("Agent Card: {card_url}\n");
    for check in results {
        let verdict = match check.verdict {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
        };
        let interface = check
            .interface
            .as_deref()
            .map(|i| format!("[{i}] "))
            .unwrap_or_default();
        let reason = check.reason.replace(['\r', '\n'], " ");
        let reason: String = reason.chars().filter(|c| !c.is_control()).collect();
        text.push_str(&format!(
            "{verdict} {interface}{} ({}): {reason}\n",
            check.name, check.requirement
        ));
    }
    text.push_str(&format!(
        "Passed: {passed}\nFailed: {failed}\nSkipped: {skipped}\n"
    ));
    out.write(&text)
}
