//! `docs/performance.md` from one run's outcomes: machine and versions, the headline
//! table with ratios to each peer, the targets, every figure, and the profile notes.

mod context;
mod targets;

use std::fmt::Write as _;

pub use context::Context;
use targets::targets;

use crate::stats::Outcome;
use crate::suite::B1_INTERLEAVED;

fn find<'a>(results: &'a [Outcome], name: &str, server: &str) -> Option<&'a Outcome> {
    results
        .iter()
        .find(|o| o.name == name && o.server == server && o.skipped.is_none())
}

fn figure(results: &[Outcome], name: &str, server: &str, key: &str) -> Option<f64> {
    find(results, name, server).and_then(|o| o.get(key))
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "–".to_owned(),
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) if v >= 10.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.2}"),
    }
}

/// The servers in the run, peers first.
fn servers(results: &[Outcome]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for server in crate::servers::ALL {
        if results.iter().any(|o| o.server == server) {
            seen.push(server.to_owned());
        }
    }
    seen
}

const HEADLINE: [(&str, &str, &str, bool); 8] = [
    ("B1 c=32 rps", "B1 c=32", "rps", true),
    ("B1 c=32 p99 ms", "B1 c=32", "p99_ms", false),
    ("server CPU per request µs", "B1 c=32", "cpu_us", false),
    ("B1 c=32 rps, interleaved", B1_INTERLEAVED, "rps", true),
    (
        "CPU per request µs, interleaved",
        B1_INTERLEAVED,
        "cpu_us",
        false,
    ),
    ("B2 streams/s", "B2 c=32", "rps", true),
    ("B3 GetTask rps", "B3 c=32", "rps", true),
    ("B4 RSS per idle stream KB", "", "rss_kb_per_stream", false),
];

/// The largest idle step every server reached.
fn idle_name(results: &[Outcome]) -> String {
    let max = results
        .iter()
        .filter_map(|o| o.name.strip_prefix("B4 idle n="))
        .filter_map(|n| n.parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    format!("B4 idle n={max}")
}

pub fn render(results: &[Outcome], context: &Context) -> String {
    let mut md = String::new();
    let servers = servers(results);
    let idle = idle_name(results);
    let _ = writeln!(md, "# Performance\n");
    let _ = writeln!(
        md,
        "Written by `{}` on {}; do not edit by hand, run it again. Every figure below comes \
         from that one run, each server measured the same way: the server pinned to one core \
         (`taskset`), the load generator (`sb-bench`, on hyper, one connection per worker) on \
         the other, loopback only. Ratios, not absolute numbers, are what carries over between \
         runs on a shared machine.\n",
        context.command, context.date
    );
    let _ = writeln!(md, "Machine: {}.\n", context.machine);
    let _ = writeln!(md, "Host speed: {}.\n", context.host_speed.sentence());
    for (what, version) in &context.versions {
        let _ = writeln!(md, "- {what}: {version}");
    }
    let _ = writeln!(md, "\n## Headline\n");
    let _ = writeln!(md, "| server | {} |", HEADLINE.map(|h| h.0).join(" | "));
    let _ = writeln!(md, "|---|{}", "---|".repeat(HEADLINE.len()));
    for server in &servers {
        let cells: Vec<String> = HEADLINE
            .iter()
            .map(|(_, name, key, _)| {
                let name = if name.is_empty() { idle.as_str() } else { name };
                num(figure(results, name, server, key))
            })
            .collect();
        let _ = writeln!(md, "| {server} | {} |", cells.join(" | "));
    }
    let _ = writeln!(
        md,
        "\nB4 is at {}, on a server started for B4 alone (so streams cannot reuse heap that \
         earlier scenarios left behind); CPU per request is server CPU time (user + system, from \
         `/proc/PID/stat`, all of the server's processes) over the measured window divided by \
         the requests completed in it. *Interleaved*: B1 at c=32 again, with the single-process \
         servers running at once and loaded in turn, a few seconds each, round after round; the \
         figures are each server's medians. The host's speed drifts over the minutes between \
         one server's scenarios and the next one's; servers taking turns see the same drift, \
         so the targets' ratios and CPU use these medians where the run has them.\n",
        idle.trim_start_matches("B4 idle ")
    );
    for ours in ["switchboard", "split"] {
        if !servers.iter().any(|s| s == ours) {
            continue;
        }
        let _ = writeln!(md, "### Ratios: {ours} against each peer\n");
        let _ = writeln!(
            md,
            "Above 1 means {ours} does better: throughput is ours ÷ theirs; latency, CPU and \
             memory are theirs ÷ ours.\n"
        );
        let peers: Vec<&String> = servers
            .iter()
            .filter(|s| !["switchboard", "split"].contains(&s.as_str()))
            .collect();
        let header: Vec<String> = peers.iter().map(|p| format!("vs {p}")).collect();
        let _ = writeln!(md, "| figure | {ours} | {} |", header.join(" | "));
        let _ = writeln!(md, "|---|---|{}", "---|".repeat(peers.len()));
        for (label, name, key, higher_is_better) in HEADLINE {
            let name = if name.is_empty() { idle.as_str() } else { name };
            let mine = figure(results, name, ours, key);
            let cells: Vec<String> = peers
                .iter()
                .map(|peer| {
                    let theirs = figure(results, name, peer, key);
                    match (mine, theirs) {
                        (Some(m), Some(t)) if m > 0.0 && t > 0.0 => {
                            let ratio = if higher_is_better { m / t } else { t / m };
                            format!("{ratio:.2}×")
                        }
                        _ => "–".to_owned(),
                    }
                })
                .collect();
            let _ = writeln!(md, "| {label} | {} | {} |", num(mine), cells.join(" | "));
        }
        let _ = writeln!(md);
    }
    bridge_section(&mut md, results);
    let _ = writeln!(md, "## Targets\n");
    let _ = writeln!(md, "| target | measured | met |");
    let _ = writeln!(md, "|---|---|---|");
    for (target, measured, met) in targets(results, &idle) {
        let verdict = match met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "not measured",
        };
        let _ = writeln!(md, "| {target} | {measured} | {verdict} |");
    }
    let _ = writeln!(md, "\n## Every figure\n");
    let _ = writeln!(
        md,
        "One line per scenario and server, as the harness printed it. `rps`: operations per \
         second (requests, streams, stream openings, deliveries); `p50_ms`/`p99_ms`: their \
         latency; `cpu_us`: server CPU per operation; `first_*`: time to the first event; \
         `rss_kb_per_stream`: server memory growth per open stream.\n"
    );
    let _ = writeln!(md, "```");
    for outcome in results {
        let _ = writeln!(md, "{}", outcome.line());
    }
    let _ = writeln!(md, "```\n");
    if !context.profile.trim().is_empty() {
        let _ = writeln!(md, "{}", context.profile.trim());
    }
    md
}

/// B8: each bridged upstream alone and through the bridge.
fn bridge_section(md: &mut String, results: &[Outcome]) {
    use crate::bridged::{ALONE, THROUGH, UPSTREAMS};
    if !UPSTREAMS
        .iter()
        .any(|(_, bridge)| results.iter().any(|o| o.server == *bridge))
    {
        return;
    }
    let _ = writeln!(md, "### B8: bridged agents\n");
    let _ = writeln!(
        md,
        "B1 at c=32 against the upstream alone (on the servers' core) and through a \
         Switchboard all-in-one whose `bench` agent bridges it (`kind = \"a2a\"`; beside the \
         load generator, so the upstream keeps its core), taking turns as the interleaved B1 \
         does; each figure is the median of its turns. *Of upstream*: bridged throughput ÷ \
         the upstream's own; *added p50*: the latency the bridge adds; *bridge CPU*: the \
         bridging process's CPU per task (the upstream's not counted).\n"
    );
    let _ = writeln!(
        md,
        "| upstream | alone rps | bridged rps | of upstream | alone p50 ms | added p50 ms | bridge CPU µs/task |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for (upstream, bridge) in UPSTREAMS {
        let alone = |key| figure(results, ALONE, upstream, key);
        let through = |key| figure(results, THROUGH, bridge, key);
        let _ = writeln!(
            md,
            "| {upstream} | {} | {} | {} | {} | {} | {} |",
            num(alone("rps")),
            num(through("rps")),
            through("of_upstream").map_or_else(|| "–".to_owned(), |r| format!("{r:.2}×")),
            num(alone("p50_ms")),
            num(through("added_p50_ms")),
            num(through("cpu_us")),
        );
    }
    let _ = writeln!(md);
}
