//! B8, the bridge's cost: B1 at c=32 against an upstream on its own and through a
//! Switchboard whose `bench` agent bridges it (`kind = "a2a"`), the upstream alone on
//! the servers' core and the bridge beside the load generator. The two take turns,
//! round after round, and each figure is the median of its turns: measured one after the
//! other, the host's drift between the two runs moved the ratio more than the bridge did.
//! Two upstreams: the Python SDK peer (is Switchboard ever the bottleneck? the bridged
//! throughput against the upstream's own, and the latency it adds) and Switchboard's own
//! all-in-one (the fastest upstream there is, so the bridge's CPU per task shows).

use crate::servers::{Setup, Topology};
use crate::stats::Outcome;
use crate::suite::{Plan, median_of, taking_turns};

/// B1 against the upstream alone.
pub const ALONE: &str = "B8 upstream alone B1 c=32";
/// B1 through the bridge; its `cpu_us` is the bridge's alone.
pub const THROUGH: &str = "B8 bridged B1 c=32";

/// The upstreams bridged, each with the name its bridge's figures go under.
pub const UPSTREAMS: [(&str, &str); 2] = [
    ("python", "bridge→python"),
    ("switchboard", "bridge→switchboard"),
];

/// Runs B8 for each upstream.
pub async fn bridged(setup: &Setup, plan: &Plan, results: &mut Vec<Outcome>) {
    for (upstream, bridge) in UPSTREAMS {
        eprintln!("== B8: {bridge}");
        if let Err(e) = measure(setup, plan, upstream, bridge, results).await {
            let outcome = Outcome::skipped(THROUGH, bridge, &format!("did not start: {e}"));
            println!("{}", outcome.line());
            results.push(outcome);
        }
    }
}

async fn measure(
    setup: &Setup,
    plan: &Plan,
    upstream_name: &str,
    bridge_name: &str,
    results: &mut Vec<Outcome>,
) -> anyhow::Result<()> {
    let topology = Topology {
        gateways: 1,
        fanouts: 1,
    };
    let upstream = setup.start(upstream_name, topology).await?;
    let bridge = match setup.start_bridge(&upstream.targets[0], bridge_name).await {
        Ok(bridge) => bridge,
        Err(e) => {
            upstream.stop();
            return Err(e);
        }
    };
    let mut turns = taking_turns(&[(ALONE, &upstream), (THROUGH, &bridge)], plan).await;
    let through_turns = turns.pop().unwrap_or_default();
    let alone_turns = turns.pop().unwrap_or_default();
    let alone = median_of(ALONE, &upstream.name, alone_turns);
    println!("{}", alone.line());
    let mut through = median_of(THROUGH, &bridge.name, through_turns);
    if alone.rps > 0.0 {
        let of_upstream = through.rps / alone.rps;
        through = through.with("of_upstream", of_upstream);
    }
    if let (Some(bridged), Some(direct)) = (through.p50_ms, alone.p50_ms) {
        through = through.with("added_p50_ms", bridged - direct);
    }
    println!("{}", through.line());
    results.push(alone);
    results.push(through);
    bridge.stop();
    upstream.stop();
    Ok(())
}
