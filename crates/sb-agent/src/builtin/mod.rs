//! The agents Switchboard hosts out of the box.

mod bench;
mod conformance;
mod consolidate;
mod echo;

pub use bench::BenchAgent;
pub use conformance::ConformanceAgent;
pub use consolidate::ConsolidateAgent;
pub use echo::EchoAgent;

use sb_protocol::card::AgentSkill;

fn skill(id: &str, name: &str, description: &str, tags: &[&str], examples: &[&str]) -> AgentSkill {
    AgentSkill {
        id: id.into(),
        name: name.into(),
        description: description.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        examples: examples.iter().map(|e| (*e).to_owned()).collect(),
        input_modes: Vec::new(),
        output_modes: Vec::new(),
    }
}

fn text_modes() -> Vec<String> {
    vec!["text/plain".to_owned()]
}
