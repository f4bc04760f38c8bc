//! Which agents may take a routed task, and which of them does. The agents that
//! declare the skill, that the routing agent may call for its caller (they take no
//! credentials, or the same as the routing agent: the caller proved to it what they
//! would ask), not tried already for this task, and healthy by the fleet's health
//! policy over the last hour (an agent marked down is skipped). Among them the pick is
//! random, weighted by recent success and speed, so most tasks go to the agent that
//! does best while the others keep getting enough to show when they recover.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use sb_fleet::HealthPolicy;
use sb_fleet::health::tally::Tally;
use sb_registry::{AgentKind, Fleet};

/// The outcomes of the last hour by agent and skill.
pub type Tallies = BTreeMap<(String, String), Tally>;

/// An agent that may take the task, and its share of the picks.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub agent: String,
    pub weight: f64,
}

/// How strongly success counts against speed: a 50 % agent gets 1/16 of the picks of
/// a 100 % one of the same speed.
const SUCCESS_POWER: i32 = 4;

/// The agents of `fleet` that may take a task for `skill` from `router` (by name), not
/// in `tried`; or why there are none, in words for the caller.
pub fn candidates(
    fleet: &Fleet,
    router: &str,
    skill: &str,
    tried: &BTreeSet<String>,
    tallies: &Tallies,
    policy: &HealthPolicy,
) -> Result<Vec<Candidate>, String> {
    let declaring: Vec<&str> = fleet
        .agents
        .iter()
        .filter(|(_, a)| a.registration.definition.kind != AgentKind::Router)
        .filter(|(_, a)| a.entry.card.skills.iter().any(|s| s.id == skill))
        .map(|(name, _)| name.as_str())
        .collect();
    if declaring.is_empty() {
        let known: BTreeSet<&str> = fleet
            .agents
            .values()
            .filter(|a| a.registration.definition.kind != AgentKind::Router)
            .flat_map(|a| a.entry.card.skills.iter().map(|s| s.id.as_str()))
            .collect();
        let known: Vec<&str> = known.into_iter().collect();
        return Err(format!(
            "no agent of the fleet declares skill \"{skill}\"; the fleet's skills: {}",
            listed(&known)
        ));
    }
    let own_auth = fleet
        .agent(router)
        .and_then(|a| a.registration.definition.auth.clone());
    let reachable: Vec<&str> = declaring
        .iter()
        .copied()
        .filter(|name| {
            fleet.agent(name).is_some_and(|a| {
                let auth = &a.registration.definition.auth;
                auth.is_none() || *auth == own_auth
            })
        })
        .collect();
    if reachable.is_empty() {
        return Err(format!(
            "the agents with skill \"{skill}\" ({}) take other credentials than this routing agent; call one of them directly",
            listed(&declaring)
        ));
    }
    let untried: Vec<&str> = reachable
        .iter()
        .copied()
        .filter(|name| !tried.contains(*name))
        .collect();
    if untried.is_empty() {
        return Err(format!(
            "every agent with skill \"{skill}\" was tried: {}",
            listed(&reachable)
        ));
    }
    let mut down = Vec::new();
    let mut healthy = Vec::new();
    for agent in untried {
        let whole = agent_tally(tallies, agent);
        if !policy.healthy(&whole) {
            down.push(format!(
                "{agent} ({} of {} completed in the last hour)",
                whole.of_state(sb_protocol::TaskState::Completed),
                whole.count()
            ));
            continue;
        }
        let for_skill = tallies
            .get(&(agent.to_owned(), skill.to_owned()))
            .filter(|t| t.count() > 0)
            .unwrap_or(&whole);
        healthy.push(Candidate {
            agent: agent.to_owned(),
            weight: weight(for_skill),
        });
    }
    if healthy.is_empty() {
        return Err(format!(
            "no agent with skill \"{skill}\" is healthy now: {}",
            down.join(", ")
        ));
    }
    Ok(healthy)
}

/// Everything `agent` did in the window, whatever the skill.
fn agent_tally(tallies: &Tallies, agent: &str) -> Tally {
    let mut whole = Tally::default();
    for ((name, _), tally) in tallies {
        if name == agent {
            whole.merge(tally);
        }
    }
    whole
}

/// An agent's share: its success rate (with one success and one failure assumed, so a
/// newcomer or a short record neither wins nor loses everything), to the
/// [`SUCCESS_POWER`], over one plus its median completion in seconds.
fn weight(tally: &Tally) -> f64 {
    let completed = tally.of_state(sb_protocol::TaskState::Completed) as f64;
    let success = (completed + 1.0) / (tally.count() as f64 + 2.0);
    let median_secs = tally.quantile_ms(0.5).unwrap_or(0.0) / 1000.0;
    success.powi(SUCCESS_POWER) / (1.0 + median_secs)
}

/// The candidate `seed` picks, each with a chance in proportion to its weight.
pub fn pick<'a>(candidates: &'a [Candidate], seed: &(impl Hash + ?Sized)) -> Option<&'a Candidate> {
    let total: f64 = candidates.iter().map(|c| c.weight).sum();
    let mut hasher = DefaultHasher::new();
    seed.hash(&mut hasher);
    // 53 random bits as a fraction of the total.
    let mut point = (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64 * total;
    for candidate in candidates {
        if point < candidate.weight {
            return Some(candidate);
        }
        point -= candidate.weight;
    }
    candidates.last()
}

fn listed(names: &[&str]) -> String {
    match names.is_empty() {
        true => "none".into(),
        false => names.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use sb_fleet::Outcome;
    use sb_protocol::TaskState;
    use sb_registry::{
        Admission, AgentDefinition, CardDefaults, CardMaker, CardSettings, FieldError,
        LocalRegistry, RegistryService,
    };
    use sb_store::MemoryStore;
    use serde_json::json;

    use super::*;

    fn tally(completed: u64, failed: u64) -> Tally {
        let mut tally = Tally::default();
        for n in 0..completed + failed {
            let state = match n < completed {
                true => TaskState::Completed,
                false => TaskState::Failed,
            };
            tally.add(&Outcome {
                agent: "x".into(),
                skill: "s".into(),
                state,
                reason: None,
                duration_ms: 40,
                cost_usd: None,
            });
        }
        tally
    }

    #[derive(Debug)]
    struct Anything;

    impl Admission for Anything {
        fn admit(&self, _: &AgentDefinition) -> Result<CardDefaults, FieldError> {
            Ok(CardDefaults::default())
        }
    }

    /// A fleet: the router (with bearer auth when `router_auth`), two open
    /// summarizers, one behind the router's credentials, one behind others.
    async fn fleet(router_auth: bool) -> Arc<Fleet> {
        let auth = |token: &str| json!({"bearer": [{"principal": "alice", "token": token}]});
        let mut router = json!({"name": "fleet", "kind": "router"});
        if router_auth {
            router["auth"] = auth("router-token-0123456789");
        }
        let summarizer = |name: &str| json!({"name": name, "kind": "worker", "skills": [{"id": "summarize"}, {"id": "tidy"}]});
        let mut same = summarizer("same-auth");
        same["auth"] = auth("router-token-0123456789");
        let mut other = summarizer("other-auth");
        other["auth"] = auth("another-token-0123456789");
        let definitions: Vec<AgentDefinition> =
            [router, summarizer("a"), summarizer("b"), same, other]
                .into_iter()
                .map(|d| serde_json::from_value(d).unwrap())
                .collect();
        let maker = CardMaker {
            settings: CardSettings {
                public_url: "http://sb.test".into(),
                ..Default::default()
            },
            admission: Arc::new(Anything),
            signer: None,
        };
        let store = Arc::new(MemoryStore::new());
        let registry = LocalRegistry::open(store, maker, &definitions, None)
            .await
            .unwrap();
        registry.fleet()
    }

    fn names(candidates: &[Candidate]) -> Vec<&str> {
        candidates.iter().map(|c| c.agent.as_str()).collect()
    }

    #[tokio::test]
    async fn only_agents_the_callers_credentials_reach_are_candidates() {
        let policy = HealthPolicy::default();
        let none = BTreeSet::new();
        let open = fleet(false).await;
        let found = candidates(&open, "fleet", "summarize", &none, &Tallies::new(), &policy);
        assert_eq!(
            names(&found.unwrap()),
            ["a", "b"],
            "an open router reaches open agents"
        );
        let guarded = fleet(true).await;
        let found = candidates(
            &guarded,
            "fleet",
            "summarize",
            &none,
            &Tallies::new(),
            &policy,
        );
        assert_eq!(
            names(&found.unwrap()),
            ["a", "b", "same-auth"],
            "and the agents taking the credentials it took"
        );
    }

    #[tokio::test]
    async fn tried_and_unhealthy_agents_are_skipped_and_the_reason_says_why() {
        let policy = HealthPolicy::default();
        let fleet = fleet(false).await;
        let unknown = candidates(
            &fleet,
            "fleet",
            "juggle",
            &BTreeSet::new(),
            &Tallies::new(),
            &policy,
        );
        let reason = unknown.unwrap_err();
        assert!(
            reason.contains("declares skill \"juggle\"") && reason.contains("summarize, tidy"),
            "{reason}"
        );

        let tried = BTreeSet::from(["a".to_owned()]);
        let left = candidates(
            &fleet,
            "fleet",
            "summarize",
            &tried,
            &Tallies::new(),
            &policy,
        );
        assert_eq!(names(&left.unwrap()), ["b"]);
        let both = BTreeSet::from(["a".to_owned(), "b".to_owned()]);
        let none = candidates(
            &fleet,
            "fleet",
            "summarize",
            &both,
            &Tallies::new(),
            &policy,
        );
        assert!(none.unwrap_err().contains("was tried: a, b"));

        // b fails most of its tasks (on another skill: health is the agent's).
        let tallies = Tallies::from([(("b".to_owned(), "tidy".to_owned()), tally(1, 9))]);
        let healthy = candidates(
            &fleet,
            "fleet",
            "summarize",
            &BTreeSet::new(),
            &tallies,
            &policy,
        );
        assert_eq!(
            names(&healthy.unwrap()),
            ["a"],
            "an agent marked down is skipped"
        );
        let down = candidates(&fleet, "fleet", "summarize", &tried, &tallies, &policy);
        let reason = down.unwrap_err();
        assert!(
            reason.contains("no agent with skill \"summarize\" is healthy now: b (1 of 10"),
            "{reason}"
        );
    }

    #[test]
    fn the_pick_follows_the_weights() {
        let candidates = [
            Candidate {
                agent: "good".into(),
                weight: weight(&tally(20, 0)),
            },
            Candidate {
                agent: "flaky".into(),
                weight: weight(&tally(10, 10)),
            },
        ];
        let picks: Vec<&str> = (0..1000)
            .filter_map(|n| pick(&candidates, &format!("task-{n}")))
            .map(|c| c.agent.as_str())
            .collect();
        let good = picks.iter().filter(|a| **a == "good").count();
        assert_eq!(picks.len(), 1000);
        assert!(
            (850..=970).contains(&good),
            "the healthy agent gets most picks, the flaky some: {good}"
        );
        assert_eq!(
            pick(&candidates, "same"),
            pick(&candidates, "same"),
            "a seed picks the same"
        );
        assert!(pick(&[], "none").is_none());
    }

    #[test]
    fn a_newcomer_weighs_as_much_as_a_half_good_record() {
        assert_eq!(weight(&Tally::default()), weight(&tally(0, 0)));
        assert!(weight(&Tally::default()) < weight(&tally(5, 0)));
        assert!(weight(&Tally::default()) > weight(&tally(1, 9)));
    }
}
