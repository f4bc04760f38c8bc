//! The whole run: every scenario against every server, one server at a time; then B1
//! again with the single-process servers taking turns, for ratios the machine's drift
//! does not skew; then the scaling runs of the split deployment and `redis-benchmark`
//! on its Redis.

use std::process::Command;
use std::time::Duration;

use crate::a2a;
use crate::scenarios::{self, Load, Unary};
use crate::servers::{Server, Setup, Topology};
use crate::stats::Outcome;

/// How big a run is.
#[derive(Debug, Clone)]
pub struct Plan {
    pub warmup: Duration,
    pub duration: Duration,
    pub idle_steps: Vec<usize>,
    pub ticks: scenarios::Ticks,
    pub webhook_rate: f64,
    pub redis_requests: u32,
    /// Servers whose B7 scaling runs happen (split deployment).
    pub scaling: bool,
    /// Most connections any scenario opens (its own figure, 256, is kept in its name).
    pub max_concurrency: usize,
    /// Rounds of the interleaved B1, and each turn's measured time.
    pub interleaved_rounds: usize,
    pub interleaved_turn: Duration,
}

impl Plan {
    pub fn full() -> Plan {
        Plan {
            warmup: Duration::from_secs(2),
            duration: Duration::from_secs(10),
            idle_steps: vec![1000, 5000, 10_000],
            ticks: scenarios::Ticks {
                subscribers: 1000,
                count: 300,
                interval: Duration::from_millis(10),
                delay: Duration::from_secs(8),
            },
            webhook_rate: 100.0,
            redis_requests: 200_000,
            scaling: true,
            max_concurrency: usize::MAX,
            interleaved_rounds: 5,
            interleaved_turn: Duration::from_secs(4),
        }
    }

    /// A few seconds per scenario: proves the harness works, measures nothing. Few
    /// connections, so that even the slowest server completes requests in the window
    /// (at 256 connections a request to the Python peer or the split takes over 1 s).
    pub fn smoke() -> Plan {
        Plan {
            warmup: Duration::from_millis(300),
            duration: Duration::from_secs(2),
            idle_steps: vec![50],
            ticks: scenarios::Ticks {
                subscribers: 20,
                count: 20,
                interval: Duration::from_millis(10),
                delay: Duration::from_secs(1),
            },
            webhook_rate: 20.0,
            redis_requests: 2000,
            scaling: true,
            max_concurrency: 16,
            interleaved_rounds: 1,
            interleaved_turn: Duration::from_secs(1),
        }
    }
}

fn load(server: &Server, plan: &Plan, concurrency: usize) -> Load {
    Load {
        server: server.name.clone(),
        targets: server.targets.clone(),
        pids: server.pids.clone(),
        concurrency: concurrency.min(plan.max_concurrency),
        warmup: plan.warmup,
        duration: plan.duration,
    }
}

fn report(outcome: Outcome, results: &mut Vec<Outcome>) {
    println!("{}", outcome.line());
    results.push(outcome);
}

/// A task to read in B3.
async fn existing_task(server: &Server) -> anyhow::Result<String> {
    let reply = a2a::send_hello(&server.targets[0], "b3").await?;
    a2a::task_id(&reply.body).ok_or_else(|| anyhow::anyhow!("no task id in the answer"))
}

/// Waits until the turns the acknowledgment scenarios queued have run. A non-blocking
/// send is acknowledged faster than a split deployment's worker completes tasks, so
/// turns are left queued, and the next scenario's (B2's streams) would wait behind them
/// and measure the backlog. A blocking send returns once its own turn, queued behind
/// them, is over.
async fn drain_backlog(server: &Server) {
    let began = std::time::Instant::now();
    let drained = tokio::time::timeout(
        Duration::from_secs(600),
        a2a::send_hello(&server.targets[0], "drain"),
    )
    .await;
    match drained {
        Ok(Ok(reply)) if a2a::is_completed(&reply.body) => {}
        other => eprintln!("{}: the queued turns did not drain: {other:?}", server.name),
    }
    let waited = began.elapsed();
    if waited > Duration::from_secs(1) {
        eprintln!(
            "{}: waited {waited:.1?} for queued turns to run",
            server.name
        );
    }
}

/// B1–B3, B5 and B6 against one running server.
pub async fn scenarios_for(server: &Server, plan: &Plan, results: &mut Vec<Outcome>) {
    let name = server.name.as_str();
    for c in [32, 256] {
        let outcome = scenarios::unary(
            &format!("B1 c={c}"),
            &load(server, plan, c),
            Unary::SendBlocking,
            None,
        )
        .await;
        report(outcome, results);
    }
    // Acknowledgment latency of a non-blocking send at half the maximum rate.
    let max = scenarios::unary(
        "B1 ack max c=32",
        &load(server, plan, 32),
        Unary::SendAck,
        None,
    )
    .await;
    let half = max.rps / 2.0;
    report(max, results);
    if half > 0.0 {
        let outcome = scenarios::unary(
            "B1 ack at half load",
            &load(server, plan, 64),
            Unary::SendAck,
            Some(half),
        )
        .await
        .with("offered_rps", half);
        report(outcome, results);
    }
    drain_backlog(server).await;
    report(
        scenarios::stream("B2 c=32", &load(server, plan, 32)).await,
        results,
    );
    match existing_task(server).await {
        Ok(task_id) => {
            let outcome = scenarios::unary(
                "B3 c=32",
                &load(server, plan, 32),
                Unary::Get { task_id },
                None,
            )
            .await;
            report(outcome, results);
        }
        Err(e) => report(Outcome::skipped("B3 c=32", name, &e.to_string()), results),
    }
    let b5 = format!("B5 subscribers={}", plan.ticks.subscribers);
    let b6 = "B6 webhooks max c=32";
    let b6_paced = format!("B6 webhooks tasks/s={}", plan.webhook_rate);
    if name == "ceiling" {
        let why = "the ceiling has no tasks";
        for scenario in [b5.as_str(), b6, b6_paced.as_str()] {
            report(Outcome::not_applicable(scenario, name, why), results);
        }
    } else {
        report(
            scenarios::fanout(&b5, &load(server, plan, 1), plan.ticks).await,
            results,
        );
        report(
            scenarios::webhooks(b6, &load(server, plan, 32), None).await,
            results,
        );
        let outcome =
            scenarios::webhooks(&b6_paced, &load(server, plan, 16), Some(plan.webhook_rate)).await;
        report(outcome, results);
    }
}

/// The servers the interleaved B1 compares (the split deployment's seven processes are
/// measured on their own).
pub const INTERLEAVED: [&str; 4] = ["python", "js", "ceiling", "switchboard"];

/// The interleaved B1's name: its figures are medians over rounds.
pub const B1_INTERLEAVED: &str = "B1 c=32 interleaved";

/// B1 at c=32 with every server running at once, each loaded in turn for a few seconds,
/// round after round: each figure is the median of its rounds. On a shared machine the
/// host's speed drifts over minutes (a server measured early and one measured late could
/// differ by a fifth for that alone); servers taking turns see the same drift.
pub async fn interleaved(servers: &[Server], plan: &Plan, results: &mut Vec<Outcome>) {
    let entries: Vec<(&str, &Server)> = servers.iter().map(|s| (B1_INTERLEAVED, s)).collect();
    let rounds = taking_turns(&entries, plan).await;
    for (server, outcomes) in servers.iter().zip(rounds) {
        report(median_of(B1_INTERLEAVED, &server.name, outcomes), results);
    }
}

/// B1 at c=32 against each of `entries` (a figure's name and its server) in turn, for
/// the plan's rounds of short turns: each entry's outcomes, in the order given.
pub(crate) async fn taking_turns(entries: &[(&str, &Server)], plan: &Plan) -> Vec<Vec<Outcome>> {
    let mut rounds: Vec<Vec<Outcome>> = vec![Vec::new(); entries.len()];
    for round in 1..=plan.interleaved_rounds {
        for ((name, server), outcomes) in entries.iter().zip(&mut rounds) {
            let turn = Load {
                duration: plan.interleaved_turn,
                ..load(server, plan, 32)
            };
            let outcome = scenarios::unary(name, &turn, Unary::SendBlocking, None).await;
            // Not a figure line (`name server=…`): a report made from the log keeps the
            // medians only.
            let shown = outcome.line().replacen(" server=", " on ", 1);
            eprintln!("   round {round}: {shown}");
            outcomes.push(outcome);
        }
    }
    rounds
}

/// One outcome named `name` whose figures are the medians of `rounds` (errors summed),
/// with the spread of its throughput.
pub(crate) fn median_of(name: &str, server: &str, rounds: Vec<Outcome>) -> Outcome {
    if let Some(skipped) = rounds.iter().find(|o| o.skipped.is_some()) {
        return skipped.clone();
    }
    let median = |mut values: Vec<f64>| -> Option<f64> {
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied()
    };
    let of = |key: &str| median(rounds.iter().filter_map(|o| o.get(key)).collect());
    let rps: Vec<f64> = rounds.iter().map(|o| o.rps).collect();
    let mut outcome = Outcome {
        name: name.to_owned(),
        server: server.to_owned(),
        rps: median(rps.clone()).unwrap_or_default(),
        p50_ms: median(rounds.iter().filter_map(|o| o.p50_ms).collect()),
        p99_ms: median(rounds.iter().filter_map(|o| o.p99_ms).collect()),
        errors: rounds.iter().map(|o| o.errors).sum(),
        ..Outcome::default()
    };
    if let Some(cpu) = of("cpu_us") {
        outcome = outcome.with("cpu_us", cpu);
    }
    let (low, high) = rps
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), r| (l.min(*r), h.max(*r)));
    outcome
        .with("rounds", rounds.len() as f64)
        .with("rps_min", low)
        .with("rps_max", high)
}

/// B4 on a server started for it alone: what earlier scenarios left in its heap would
/// otherwise be reused by the streams and hide their cost. The held streams stay open
/// until the server is stopped.
pub async fn idle_for(server: &Server, plan: &Plan, results: &mut Vec<Outcome>) {
    let (outcomes, streams) = scenarios::idle(&load(server, plan, 1), &plan.idle_steps).await;
    for outcome in outcomes {
        report(outcome, results);
    }
    drop(streams);
}

/// B7: the split deployment with more gateways and fan-outs, and the Redis beneath it.
pub async fn scaling(setup: &Setup, plan: &Plan, results: &mut Vec<Outcome>) {
    for (gateways, fanouts) in [(1, 1), (2, 1), (2, 2)] {
        let label = format!("B7 gateways={gateways} fanouts={fanouts}");
        let server = match setup.start("split", Topology { gateways, fanouts }).await {
            Ok(server) => server,
            Err(e) => {
                report(Outcome::skipped(&label, "split", &e.to_string()), results);
                continue;
            }
        };
        report(
            gateway_b1(&format!("{label} B1 c=256"), &server, plan).await,
            results,
        );
        let stream = scenarios::stream(&format!("{label} B2 c=32"), &load(&server, plan, 32)).await;
        report(stream, results);
        if gateways == 1 && fanouts == 1 {
            report(redis_benchmark(&server, plan), results);
            if let Some(outcome) = gateway_alone(setup, &server, plan).await {
                report(outcome, results);
            }
        }
        server.stop();
    }
}

/// B1 c=256 with the gateway alone on the servers' core and the rest of the deployment
/// moved to the load generator's: what one gateway core serves when six other
/// processes do not preempt it on every arrival (with the whole deployment on one
/// core, its CPU per request is ~40% higher, mostly context switches). `None` where the
/// servers are not pinned apart from the load generator.
async fn gateway_alone(setup: &Setup, server: &Server, plan: &Plan) -> Option<Outcome> {
    let server_cpus = setup.server_cpus.as_deref()?;
    let own = std::fs::read_to_string("/proc/self/status").ok()?;
    let own_cpus = own
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim()
        .to_owned();
    if own_cpus == server_cpus {
        return None;
    }
    let gateways = server.pids_of("gateway");
    let others: Vec<u32> = server
        .pids
        .iter()
        .copied()
        .filter(|pid| !gateways.contains(pid))
        .collect();
    let repin = |pids: &[u32], cpus: &str| {
        pids.iter().all(|pid| {
            Command::new("taskset")
                .args(["-a", "-p", "-c", cpus, &pid.to_string()])
                .stdout(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    };
    if !repin(&others, &own_cpus) {
        repin(&others, server_cpus);
        return None;
    }
    let outcome = gateway_b1("B7 gateway alone B1 c=256", server, plan).await;
    repin(&others, server_cpus);
    outcome.get("gateway_cpu_us").map(|_| outcome)
}

/// B1 c=256 on a split deployment, with the CPU of its gateways alone: per request, and
/// as requests per gateway core.
async fn gateway_b1(name: &str, server: &Server, plan: &Plan) -> Outcome {
    let mut unary_load = load(server, plan, 256);
    unary_load.pids = server.pids_of("gateway");
    let mut outcome = scenarios::unary(name, &unary_load, Unary::SendBlocking, None).await;
    let gateway_cpu = outcome.get("cpu_us");
    outcome.extra.retain(|(k, _)| k != "cpu_us");
    match gateway_cpu.filter(|c| *c > 0.0) {
        Some(cpu) => outcome
            .with("gateway_cpu_us", cpu)
            .with("rps_per_gateway_core", 1e6 / cpu),
        None => outcome,
    }
}

/// `redis-benchmark` on the deployment's Redis, on the load generator's core.
fn redis_benchmark(server: &Server, plan: &Plan) -> Outcome {
    let name = "B7 redis-benchmark SET+GET+PUBLISH c=50";
    let Some(port) = server.port_of("redis") else {
        return Outcome::skipped(name, "redis", "no Redis in the deployment");
    };
    let (port, requests) = (port.to_string(), plan.redis_requests.to_string());
    let run = |what: &[&str]| {
        Command::new("redis-benchmark")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-q",
                "-c",
                "50",
                "-n",
                &requests,
            ])
            .args(what)
            .output()
    };
    let output = run(&["-t", "set,get"]);
    let publish = run(&["PUBLISH", "bench-channel", "hello"]);
    match (output, publish) {
        (Ok(sets), Ok(publishes)) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&sets.stdout),
                String::from_utf8_lossy(&publishes.stdout)
            );
            let figures = parse_redis_benchmark(&text);
            let mut outcome = Outcome {
                name: name.to_owned(),
                server: "redis".to_owned(),
                rps: figures.iter().map(|(_, rps)| *rps).sum::<f64>() / figures.len().max(1) as f64,
                ..Outcome::default()
            };
            for (command, rps) in figures {
                outcome = outcome.with(&format!("{}_rps", command.to_lowercase()), rps);
            }
            outcome
        }
        (Err(e), _) | (_, Err(e)) => {
            Outcome::skipped(name, "redis", &format!("redis-benchmark: {e}"))
        }
    }
}

/// `SET: 123456.79 requests per second, p50=0.231 msec` lines, by command.
fn parse_redis_benchmark(text: &str) -> Vec<(String, f64)> {
    text.split(['\n', '\r'])
        .filter_map(|line| {
            let (command, rest) = line.split_once(": ")?;
            let rps = rest.split_whitespace().next()?.parse().ok()?;
            let command = command.split_whitespace().next()?.to_owned();
            Some((command, rps))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::stats::Outcome;

    fn round(rps: f64, cpu: f64) -> Outcome {
        Outcome {
            name: "x".into(),
            server: "s".into(),
            rps,
            p50_ms: Some(rps / 100.0),
            p99_ms: Some(rps / 10.0),
            errors: 1,
            ..Outcome::default()
        }
        .with("cpu_us", cpu)
    }

    #[test]
    fn interleaved_rounds_give_their_medians() {
        let rounds = vec![round(300.0, 9.0), round(100.0, 7.0), round(200.0, 8.0)];
        let median = super::median_of(super::B1_INTERLEAVED, "s", rounds);
        assert_eq!(
            (median.rps, median.p99_ms, median.errors),
            (200.0, Some(20.0), 3)
        );
        assert_eq!(median.get("cpu_us"), Some(8.0));
        assert_eq!(median.get("rps_min"), Some(100.0));
        assert_eq!(median.get("rps_max"), Some(300.0));
        assert_eq!(median.get("rounds"), Some(3.0));
        assert_eq!(median.name, super::B1_INTERLEAVED);
    }

    #[test]
    fn a_skipped_round_skips_the_median() {
        let rounds = vec![round(1.0, 1.0), Outcome::skipped("x", "s", "down")];
        assert!(super::median_of("x", "s", rounds).skipped.is_some());
    }
    #[test]
    fn reads_redis_benchmark_output() {
        let text = "SET: rps=0.0 (overall: nan) avg_msec=nan\rSET: 98765.43 requests per second, p50=0.255 msec\nGET: 123456.79 requests per second, p50=0.207 msec\n";
        let figures = super::parse_redis_benchmark(text);
        assert_eq!(
            figures,
            vec![("SET".to_owned(), 98765.43), ("GET".to_owned(), 123456.79)]
        );
    }
}
