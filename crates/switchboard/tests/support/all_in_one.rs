//! The all-in-one `switchboard serve` with the `echo` and `conformance` agents, for the
//! CLI tests of the tier 2 commands, and card files for agents that are not there.

#![allow(dead_code)] // each test binary uses its part
use serde_json::{Value, json};

use super::process::{self, Served};

/// The all-in-one with the `echo` and `conformance` agents.
pub(crate) async fn start() -> Served {
    start_with(&[]).await
}

/// The same, with `args`.
pub(crate) async fn start_with(args: &[&str]) -> Served {
    let mut all = vec!["--memory"];
    all.extend_from_slice(args);
    process::serve_config(
        "[[agents]]\nname = \"echo\"\nkind = \"echo\"\n\n\
         [[agents]]\nname = \"conformance\"\nkind = \"conformance\"\n",
        &all,
    )
    .await
}

/// A card file for an agent whose only interface is `url` (JSON-RPC 1.0), with
/// `capabilities`.
pub(crate) fn card_file(dir: &std::path::Path, url: &str, capabilities: Value) -> String {
    let card = json!({
        "name": "stub", "description": "a stub agent", "version": "1.0.0",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": capabilities,
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "d", "tags": ["t"]}]
    });
    let path = dir.join("card.json");
    std::fs::write(&path, card.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}
