//! The all-in-one `switchboard serve` with the `echo` and `conformance` agents, for the
//! CLI tests of the tier 2 commands, and card files for agents that are not there.

#![allow(dead_code)] // each test binary uses its part
use std::process::Child;

use serde_json::{Value, json};

use super::process;

pub(crate) struct Server {
    pub base: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub(crate) fn agent(&self, name: &str) -> String {
        format!("{}/agents/{name}", self.base)
    }
}

/// The all-in-one with the `echo` and `conformance` agents.
pub(crate) async fn start() -> Server {
    start_with(&[]).await
}

/// The same, with `args`.
pub(crate) async fn start_with(args: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("switchboard.toml");
    std::fs::write(
        &config,
        "[[agents]]\nname = \"echo\"\nkind = \"echo\"\n\n\
         [[agents]]\nname = \"conformance\"\nkind = \"conformance\"\n",
    )
    .unwrap();
    let port = process::free_port();
    let config = config.to_string_lossy().into_owned();
    let mut all = vec!["--config", config.as_str(), "--memory"];
    all.extend_from_slice(args);
    let child = process::serve(port, &all).await;
    Server {
        base: format!("http://127.0.0.1:{port}"),
        child,
        _dir: dir,
    }
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
