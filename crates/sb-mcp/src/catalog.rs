//! The agents as tools: `A2A_<agent>` (characters MCP clients refuse replaced by `_`),
//! described from the card (what the agent does, its skills and their examples), all
//! taking the same arguments. A [`CatalogFeed`] keeps the current catalog: from the
//! registry followed in process (a gateway's `/mcp`), or from the registry's HTTP API
//! polled (`switchboard mcp --url`). Each change is a new catalog on the feed, which
//! the server announces to its clients (`notifications/tools/list_changed`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{JsonObject, Tool};
use sb_client::Credentials;
use sb_protocol::card::AgentCard;
use sb_registry::LiveRegistry;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The prefix of every agent's tool, as the guide for LLMs names them.
pub const TOOL_PREFIX: &str = "A2A_";
/// Longest tool name MCP clients take.
const MAX_TOOL_NAME: usize = 128;

/// One agent as a tool.
#[derive(Clone, Debug)]
pub struct AgentTool {
    pub tool: Tool,
    /// The agent's name in the registry.
    pub agent: String,
    pub card: AgentCard,
}

/// Every agent of the fleet as a tool, by tool name.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    pub tools: BTreeMap<String, AgentTool>,
}

/// `A2A_<agent>`, with only the characters MCP allows in a tool name.
pub fn tool_name(agent: &str) -> String {
    let safe: String = agent
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .collect();
    let mut name = format!("{TOOL_PREFIX}{safe}");
    name.truncate(MAX_TOOL_NAME);
    name
}

/// What the LLM reads about an agent: the card's description, its skills with their
/// examples, and how to call it.
fn description(card: &AgentCard) -> String {
    let mut text = card.description.trim().to_owned();
    if !card.skills.is_empty() {
        text.push_str("\n\nSkills:");
        for skill in &card.skills {
            text.push_str(&format!("\n- {} ({})", skill.name, skill.id));
            if !skill.description.trim().is_empty() {
                text.push_str(&format!(": {}", skill.description.trim()));
            }
            if !skill.examples.is_empty() {
                let examples: Vec<String> =
                    skill.examples.iter().map(|e| format!("\"{e}\"")).collect();
                text.push_str(&format!(" Examples: {}.", examples.join("; ")));
            }
        }
    }
    text.push_str(
        "\n\nA remote A2A agent. Send `text` (and/or `data`). The answer's `kind` is `message` \
         (complete: read `contents`) or `task` (read `status.state`: on `input-required` answer \
         the `question` with the same `taskId` and `contextId`; on `completed` read `artifacts`). \
         Never invent `taskId` or `contextId`: omit them for a new request, reuse them from an answer.",
    );
    text
}

/// The arguments every agent's tool takes.
fn input_schema() -> JsonObject {
    let schema = json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "The message to the agent."},
            "data": {"type": "object", "description": "Structured input, sent as a data part beside the text."},
            "taskId": {"type": "string", "description": "Only to continue a task that asked for input: its taskId from the earlier answer. Omit to start a new request. Never invent one."},
            "contextId": {"type": "string", "description": "The contextId of an earlier answer from this agent, to continue that conversation. Omit on your first message to it. Never invent one."},
            "referenceTaskIds": {"type": "array", "items": {"type": "string"}, "description": "taskIds of earlier tasks this request builds on."}
        },
        "additionalProperties": false
    });
    match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

impl Catalog {
    /// The catalog of `agents` (registry name and card).
    pub fn of(agents: impl IntoIterator<Item = (String, AgentCard)>) -> Catalog {
        let schema = Arc::new(input_schema());
        let tools = agents
            .into_iter()
            .map(|(agent, card)| {
                let name = tool_name(&agent);
                let mut tool = Tool::new(name.clone(), description(&card), schema.clone());
                tool.title = Some(card.name.clone());
                (name, AgentTool { tool, agent, card })
            })
            .collect();
        Catalog { tools }
    }

    /// The tools, in name order.
    pub fn tools(&self) -> Vec<Tool> {
        self.tools.values().map(|t| t.tool.clone()).collect()
    }

    /// Whether the two list the same tools, described the same.
    fn same_as(&self, other: &Catalog) -> bool {
        self.tools.len() == other.tools.len()
            && self
                .tools
                .iter()
                .zip(&other.tools)
                .all(|((a, x), (b, y))| a == b && x.tool == y.tool)
    }
}

/// The current catalog, and each new one.
#[derive(Clone, Debug)]
pub struct CatalogFeed(watch::Receiver<Arc<Catalog>>);

/// How often the registry's HTTP API is read for changes.
const POLL_EVERY: Duration = Duration::from_secs(2);

impl CatalogFeed {
    /// The catalog now.
    pub fn current(&self) -> Arc<Catalog> {
        self.0.borrow().clone()
    }

    /// A receiver that wakes on each new catalog.
    pub fn changes(&self) -> watch::Receiver<Arc<Catalog>> {
        self.0.clone()
    }

    /// A catalog that never changes.
    #[cfg(test)]
    pub(crate) fn fixed(catalog: Catalog) -> CatalogFeed {
        CatalogFeed(watch::channel(Arc::new(catalog)).1)
    }

    /// The registry of this process, followed until `stop`.
    pub fn following(registry: &LiveRegistry, stop: CancellationToken) -> CatalogFeed {
        let mut fleet = registry.follow();
        let of_fleet = |fleet: &sb_registry::Fleet| {
            Catalog::of(
                fleet
                    .agents
                    .iter()
                    .map(|(name, agent)| (name.clone(), agent.entry.card.clone())),
            )
        };
        let first = of_fleet(&fleet.borrow_and_update());
        let (sender, receiver) = watch::channel(Arc::new(first));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    changed = fleet.changed() => if changed.is_err() { return },
                    () = stop.cancelled() => return,
                }
                let next = of_fleet(&fleet.borrow_and_update());
                publish(&sender, next);
            }
        });
        CatalogFeed(receiver)
    }

    /// The registry of the Switchboard at `base`, read now and every few seconds until
    /// `stop`; an error when it cannot be read now.
    pub async fn polling(
        http: reqwest::Client,
        base: String,
        credentials: Credentials,
        stop: CancellationToken,
    ) -> Result<CatalogFeed, String> {
        let first = read_registry(&http, &base, &credentials).await?;
        let (sender, receiver) = watch::channel(Arc::new(first));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(POLL_EVERY) => {}
                    () = stop.cancelled() => return,
                }
                match read_registry(&http, &base, &credentials).await {
                    Ok(next) => publish(&sender, next),
                    Err(e) => {
                        tracing::warn!(error = %e, "the registry could not be read; the tools stay as they were")
                    }
                }
            }
        });
        Ok(CatalogFeed(receiver))
    }
}

/// Sends `next` unless it lists what the current catalog does.
fn publish(sender: &watch::Sender<Arc<Catalog>>, next: Catalog) {
    sender.send_if_modified(|current| {
        let changed = !current.same_as(&next);
        if changed {
            *current = Arc::new(next);
        }
        changed
    });
}

/// The fleet's agents as `GET {base}/registry/agents` lists them.
async fn read_registry(
    http: &reqwest::Client,
    base: &str,
    credentials: &Credentials,
) -> Result<Catalog, String> {
    let url = format!("{}/registry/agents", base.trim_end_matches('/'));
    let request = credentials.placed_for(None).apply(http.get(&url));
    let response = request
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("GET {url}: {status}"));
    }
    let listing: Value = response
        .json()
        .await
        .map_err(|e| format!("GET {url}: not JSON: {e}"))?;
    let agents = listing["agents"]
        .as_array()
        .ok_or_else(|| format!("GET {url}: no \"agents\" list; is this a Switchboard?"))?;
    let mut found = Vec::new();
    for agent in agents {
        let (Some(name), Some(card)) = (agent["name"].as_str(), agent.get("card")) else {
            continue;
        };
        match serde_json::from_value::<AgentCard>(card.clone()) {
            Ok(card) => found.push((name.to_owned(), card)),
            Err(e) => {
                tracing::warn!(agent = name, error = %e, "an agent's card cannot be read; left out")
            }
        }
    }
    Ok(Catalog::of(found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_keep_to_what_mcp_clients_accept() {
        assert_eq!(tool_name("memory-consolidator"), "A2A_memory-consolidator");
        assert_eq!(tool_name("a.b c/d"), "A2A_a_b_c_d");
        assert_eq!(tool_name(&"x".repeat(300)).len(), MAX_TOOL_NAME);
    }
}
