//! `docs/performance.md` from one run's outcomes: machine and versions, the headline
//! table with ratios to each peer, the targets, every figure, and the profile notes.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use crate::stats::Outcome;
use crate::suite::B1_INTERLEAVED;

/// Facts about the run that are not figures.
#[derive(Debug, Clone)]
pub struct Context {
    pub command: String,
    pub date: String,
    pub machine: String,
    pub versions: Vec<(String, String)>,
    /// Hand-written notes on where the time goes (`bench/profile.md`).
    pub profile: String,
}

fn first_line(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| {
            let text = if o.stdout.is_empty() {
                o.stderr
            } else {
                o.stdout
            };
            String::from_utf8_lossy(&text)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_owned()
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "not found".to_owned())
}

/// A pin from the peers' manifests: `package==1.2.3` in requirements.txt, or the
/// dependency's version in package.json.
fn pinned(repo: &Path, file: &str, package: &str) -> String {
    let text = std::fs::read_to_string(repo.join(file)).unwrap_or_default();
    let found = if file.ends_with(".json") {
        serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["dependencies"][package].as_str().map(str::to_owned))
            .map(|version| format!("{package} {version}"))
    } else {
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with(package) && l.contains("=="))
            .map(str::to_owned)
    };
    found.unwrap_or_else(|| format!("{package}: not pinned in {file}"))
}

impl Context {
    pub fn gather(repo: &Path, command: &str, switchboard_bin: &Path) -> Context {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or_else(
                || "?".to_owned(),
                |kb| format!("{:.1} GiB", kb as f64 / 1048576.0),
            );
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let model = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
            .unwrap_or_else(|| "unknown CPU".to_owned());
        // The machine's cores, not this process's: the load generator runs pinned to one.
        let cores = match cpuinfo
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count()
        {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let bin = switchboard_bin.to_string_lossy();
        Context {
            command: command.to_owned(),
            date: first_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
            machine: format!(
                "{cores} cores ({model}), {memory}, {}",
                first_line("uname", &["-sr"])
            ),
            versions: vec![
                (
                    "switchboard".into(),
                    format!(
                        "{} (commit {})",
                        first_line(&bin, &["--version"]),
                        first_line(
                            "git",
                            &[
                                "-C",
                                &repo.to_string_lossy(),
                                "rev-parse",
                                "--short",
                                "HEAD"
                            ]
                        )
                    ),
                ),
                (
                    "Python SDK".into(),
                    pinned(repo, "bench/peers/python/requirements.txt", "a2a-sdk"),
                ),
                (
                    "uvicorn".into(),
                    pinned(repo, "bench/peers/python/requirements.txt", "uvicorn"),
                ),
                (
                    "JS SDK".into(),
                    pinned(repo, "bench/peers/js/package.json", "@a2a-js/sdk"),
                ),
                (
                    "express".into(),
                    pinned(repo, "bench/peers/js/package.json", "express"),
                ),
                ("python".into(), first_line("python3", &["--version"])),
                ("node".into(), first_line("node", &["--version"])),
                ("redis".into(), first_line("redis-server", &["--version"])),
            ],
            profile: std::fs::read_to_string(repo.join("bench/profile.md")).unwrap_or_default(),
        }
    }
}

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
        "B1 at c=32 against the upstream alone (on the servers' core), then through a \
         Switchboard all-in-one whose `bench` agent bridges it (`kind = \"a2a\"`; beside the \
         load generator, so the upstream keeps its core). *Of upstream*: bridged throughput ÷ \
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

type Verdict = (String, String, Option<bool>);

fn targets(results: &[Outcome], idle: &str) -> Vec<Verdict> {
    let sb = |name: &str, key: &str| figure(results, name, "switchboard", key);
    // The interleaved medians where the run has them (see `render`).
    let (b1, basis) = if find(results, B1_INTERLEAVED, "switchboard").is_some() {
        (B1_INTERLEAVED, " (interleaved)")
    } else {
        ("B1 c=32", "")
    };
    let ratio = |peer: &str| {
        let mine = sb(b1, "rps")?;
        let theirs = figure(results, b1, peer, "rps")?;
        Some(mine / theirs)
    };
    let check = |target: &str, value: Option<f64>, shown: String, ok: fn(f64) -> bool| -> Verdict {
        (target.to_owned(), shown, value.map(ok))
    };
    let b5 = results
        .iter()
        .find(|o| o.server == "switchboard" && o.name.starts_with("B5"))
        .and_then(|o| o.p99_ms);
    let b6 = results
        .iter()
        .find(|o| o.server == "switchboard" && o.name.starts_with("B6 webhooks max"))
        .filter(|o| o.skipped.is_none())
        .map(|o| o.rps);
    let memory =
        sb(idle, "rss_kb_per_stream").zip(figure(results, idle, "ceiling", "rss_kb_per_stream"));
    let per_core_of = |prefix: &str| {
        results
            .iter()
            .find(|o| o.name.starts_with(prefix))
            .and_then(|o| o.get("rps_per_gateway_core"))
    };
    // The gateway on a core of its own where the run has it; sharing one core with the
    // whole deployment otherwise (and shown beside it).
    let shared_core = per_core_of("B7 gateways=1 fanouts=1 B1");
    let own_core = per_core_of("B7 gateway alone");
    let per_core = own_core.or(shared_core);
    let per_core_shown = match own_core {
        Some(own) => format!(
            "{} rps (the gateway on a core of its own; {} rps sharing one core with the whole deployment)",
            num(Some(own)),
            num(shared_core)
        ),
        None => format!("{} rps", num(shared_core)),
    };
    let bridged_python = figure(
        results,
        crate::bridged::THROUGH,
        "bridge→python",
        "of_upstream",
    );
    vec![
        check(
            "all-in-one unary ≥ 20× the Python SDK",
            ratio("python"),
            format!("{}×{basis}", num(ratio("python"))),
            |r| r >= 20.0,
        ),
        check(
            "all-in-one unary ≥ 5× the JS SDK",
            ratio("js"),
            format!("{}×{basis}", num(ratio("js"))),
            |r| r >= 5.0,
        ),
        check(
            "server CPU per completed task ≤ 100 µs",
            sb(b1, "cpu_us"),
            // One decimal: this figure sits at its threshold, where "100 µs, not met" reads
            // as a contradiction.
            sb(b1, "cpu_us").map_or_else(|| "–".to_owned(), |v| format!("{v:.1} µs{basis}")),
            |v| v <= 100.0,
        ),
        check(
            "split: ≥ 5k rps per gateway core",
            per_core,
            per_core_shown,
            |v| v >= 5000.0,
        ),
        check(
            "p99 non-blocking SendMessage ack ≤ 5 ms at half the maximum load",
            sb("B1 ack at half load", "p99_ms"),
            format!("{} ms", num(sb("B1 ack at half load", "p99_ms"))),
            |v| v <= 5.0,
        ),
        check(
            &format!(
                "{} idle subscribers at ≤ 1.25× the ceiling's memory per stream",
                idle.trim_start_matches("B4 idle n=")
            ),
            memory.map(|(m, c)| m / c),
            memory.map_or_else(
                || "–".to_owned(),
                |(m, c)| format!("{} KB vs {} KB ({:.2}×)", num(Some(m)), num(Some(c)), m / c),
            ),
            |r| r <= 1.25,
        ),
        check(
            "transition → subscriber p99 ≤ 10 ms with 1k subscribers",
            b5,
            format!("{} ms", num(b5)),
            |v| v <= 10.0,
        ),
        check(
            "bridged Python SDK echo: B1 ≥ 0.9× the upstream's own",
            bridged_python,
            bridged_python.map_or_else(|| "–".to_owned(), |r| format!("{r:.2}×")),
            |r| r >= 0.9,
        ),
        check(
            "≥ 5k webhook deliveries/s per dispatcher",
            b6,
            format!("{}/s", num(b6)),
            |v| v >= 5000.0,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU figure just over the target shows its decimal, so the verdict is readable.
    #[test]
    fn cpu_at_the_threshold_shows_why_it_is_missed() {
        let b1 = Outcome {
            name: "B1 c=32".to_owned(),
            server: "switchboard".to_owned(),
            rps: 8000.0,
            extra: vec![("cpu_us".to_owned(), 100.46)],
            ..Outcome::default()
        };
        let verdicts = targets(&[b1], "B4 idle n=10000");
        let cpu = verdicts
            .iter()
            .find(|(target, _, _)| target.starts_with("server CPU"))
            .expect("the CPU target is listed");
        assert_eq!((cpu.1.as_str(), cpu.2), ("100.5 µs", Some(false)));
    }

    /// The per-gateway-core target reads the gateway on a core of its own where the run
    /// has it, and shows the figure with the whole deployment on one core beside it.
    #[test]
    fn per_gateway_core_prefers_the_gateway_alone() {
        let line = |name: &str, per_core: f64| Outcome {
            name: name.to_owned(),
            server: "split".to_owned(),
            extra: vec![("rps_per_gateway_core".to_owned(), per_core)],
            ..Outcome::default()
        };
        let shared = line("B7 gateways=1 fanouts=1 B1 c=256", 3500.0);
        let alone = line("B7 gateway alone B1 c=256", 9000.0);
        let verdict = |results: &[Outcome]| {
            targets(results, "B4 idle n=10000")
                .into_iter()
                .find(|(target, _, _)| target.contains("per gateway core"))
                .expect("the per-core target is listed")
        };
        let both = verdict(&[shared.clone(), alone]);
        assert_eq!(both.2, Some(true));
        assert!(both.1.starts_with("9000 rps"), "{}", both.1);
        assert!(both.1.contains("3500 rps sharing"), "{}", both.1);
        let only_shared = verdict(&[shared]);
        assert_eq!(
            (only_shared.1.as_str(), only_shared.2),
            ("3500 rps", Some(false))
        );
    }
}
