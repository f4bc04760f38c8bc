//! `sb-bench`: the harness's command line. `run` is the whole suite; `ceiling` serves the
//! fixed-answer server; `load` drives one scenario against a server already running.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use sb_bench::cache_walk::{self, Walk};
use sb_bench::host_speed::{self, HostSpeed};
use sb_bench::http::Target;
use sb_bench::report::{self, Context};
use sb_bench::scenarios::{self, Load, Unary};
use sb_bench::servers::{self, Setup, Topology};
use sb_bench::stats::Outcome;
use sb_bench::suite::{self, Plan};

#[derive(Parser, Debug)]
#[command(name = "sb-bench", about = "Switchboard's benchmark harness")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Every scenario against every server; prints one line per figure and writes the report.
    Run {
        /// A few seconds per scenario (CI): proves the harness works.
        #[arg(long)]
        smoke: bool,
        /// Comma-separated subset of python,js,ceiling,switchboard,split.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "python,js,ceiling,switchboard,split,bridged"
        )]
        servers: Vec<String>,
        /// Skip B7 (split deployment scaling and redis-benchmark).
        #[arg(long)]
        no_scaling: bool,
        #[command(flatten)]
        output: ReportArgs,
        /// Scratch directory: server logs, data, cluster state, results.json.
        #[arg(long, default_value = "target/bench")]
        work_dir: PathBuf,
        /// CPUs the servers are pinned to (`taskset -c`); empty to not pin.
        #[arg(long, default_value = "0")]
        server_cpus: String,
    },
    /// Renders the report from a saved run's printed lines (e.g. `scripts/bench.sh | tee`).
    Report {
        /// The run's output; lines that are not figures are ignored.
        #[arg(long)]
        from: PathBuf,
        #[command(flatten)]
        output: ReportArgs,
    },
    /// The ceiling: fixed JSON-RPC answers and fixed SSE streams.
    Ceiling {
        #[arg(long)]
        port: u16,
    },
    /// The host-speed line's cache walk, on this process's core: prints the nanoseconds a
    /// step of a random walk takes over a set the shared cache should hold, then over one
    /// only memory can.
    CacheWalk {
        #[arg(long, default_value_t = cache_walk::CACHE_MIB, value_parser = walk_mib())]
        cache_mib: usize,
        #[arg(long, default_value_t = cache_walk::MEMORY_MIB, value_parser = walk_mib())]
        memory_mib: usize,
    },
    /// One scenario against a running server (for profiling).
    Load {
        #[arg(long)]
        url: String,
        /// `send`, `ack`, `stream`, `get:TASK_ID`, `fanout` (B5, the full run's ticks;
        /// `fanout:N` with N subscribers), `webhook` (B6 at full speed) or `idle:N[,N…]`
        /// (B4 steps, streams held until the end).
        #[arg(long, default_value = "send")]
        scenario: String,
        #[arg(long, short = 'c', default_value_t = 32)]
        concurrency: usize,
        #[arg(long, short = 'd', default_value_t = 10)]
        seconds: u64,
        /// Server processes whose CPU is measured.
        #[arg(long, value_delimiter = ',')]
        pids: Vec<u32>,
        /// Requests per second offered (`send`, `ack`, `get:…`); unset: as fast as answered.
        #[arg(long)]
        rate: Option<f64>,
    },
}

/// A walk's set in MiB: up to 4 GiB, the most a table of `u32` slots can address.
fn walk_mib() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..=4096)
}

/// Where the report goes and what it says about the run.
#[derive(clap::Args, Debug)]
struct ReportArgs {
    /// Where the Markdown report goes.
    #[arg(long)]
    report: PathBuf,
    /// The repository (peer scripts, bench config, local-cluster.sh).
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    #[arg(long)]
    switchboard_bin: PathBuf,
    /// How the run was started, for the report.
    #[arg(long, default_value = "scripts/bench.sh")]
    command_line: String,
}

impl ReportArgs {
    fn write(&self, results: &[Outcome], host_speed: HostSpeed) -> anyhow::Result<()> {
        let context = Context::gather(
            &self.repo,
            &self.command_line,
            &self.switchboard_bin,
            host_speed,
        );
        std::fs::write(&self.report, report::render(results, &context))?;
        eprintln!("report written to {}", self.report.display());
        Ok(())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Cmd::Report { from, output } => {
            let text = std::fs::read_to_string(&from)?;
            let results: Vec<Outcome> = text.lines().filter_map(Outcome::parse_line).collect();
            anyhow::ensure!(!results.is_empty(), "no figures in {}", from.display());
            // The log does not carry the host's speed.
            output.write(&results, HostSpeed::default())
        }
        Cmd::CacheWalk {
            cache_mib,
            memory_mib,
        } => {
            println!("{}", Walk::measure(cache_mib, memory_mib).line());
            Ok(())
        }
        Cmd::Ceiling { port } => {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            sb_bench::ceiling::serve(listener).await
        }
        Cmd::Load {
            url,
            scenario,
            concurrency,
            seconds,
            pids,
            rate,
        } => {
            let load = Load {
                server: url.clone(),
                targets: vec![Target::parse(&url)?],
                pids,
                concurrency,
                warmup: Duration::from_secs(1),
                duration: Duration::from_secs(seconds),
            };
            let outcome = match scenario.as_str() {
                "send" => scenarios::unary("B1", &load, Unary::SendBlocking, rate).await,
                "ack" => scenarios::unary("ack", &load, Unary::SendAck, rate).await,
                "stream" => scenarios::stream("B2", &load).await,
                "fanout" => scenarios::fanout("B5", &load, Plan::full().ticks).await,
                "webhook" => scenarios::webhooks("B6", &load, None).await,
                other => {
                    if let Some(subscribers) = other.strip_prefix("fanout:") {
                        let ticks = scenarios::Ticks {
                            subscribers: subscribers.parse()?,
                            ..Plan::full().ticks
                        };
                        scenarios::fanout("B5", &load, ticks).await
                    } else if let Some(steps) = other.strip_prefix("idle:") {
                        let steps = steps
                            .split(',')
                            .map(str::parse)
                            .collect::<Result<Vec<usize>, _>>()?;
                        let (outcomes, _held) = scenarios::idle(&load, &steps).await;
                        for outcome in outcomes {
                            println!("{}", outcome.line());
                        }
                        return Ok(());
                    } else if let Some(id) = other.strip_prefix("get:") {
                        let request = Unary::Get {
                            task_id: id.to_owned(),
                        };
                        scenarios::unary("B3", &load, request, rate).await
                    } else {
                        anyhow::bail!("unknown scenario {other}");
                    }
                }
            };
            println!("{}", outcome.line());
            Ok(())
        }
        Cmd::Run {
            smoke,
            servers: chosen,
            no_scaling,
            mut output,
            work_dir,
            server_cpus,
        } => {
            output.repo = std::fs::canonicalize(&output.repo)?;
            output.switchboard_bin = std::fs::canonicalize(&output.switchboard_bin)?;
            std::fs::create_dir_all(&work_dir)?;
            let setup = Setup {
                switchboard_bin: output.switchboard_bin.clone(),
                bench_bin: std::env::current_exe()?,
                work_dir: std::fs::canonicalize(&work_dir)?,
                server_cpus: Some(server_cpus).filter(|c| !c.is_empty()),
                repo: output.repo.clone(),
            };
            let plan = if smoke { Plan::smoke() } else { Plan::full() };
            // A smoke run's figures say nothing about speed, and in a debug build the cache
            // walk takes seconds: only a full run probes the host.
            let probe_host = || {
                if smoke {
                    host_speed::Reading::default()
                } else {
                    host_speed::probe(setup.server_cpus.as_deref(), &setup.bench_bin)
                }
            };
            let mut host_speed = HostSpeed {
                before: probe_host(),
                ..HostSpeed::default()
            };
            if !smoke {
                eprintln!(
                    "== host speed on the servers' core: {}",
                    host_speed.before.summary()
                );
            }
            let mut results: Vec<Outcome> = Vec::new();
            // Every server but the scaling runs' split deployment.
            let topology = Topology {
                gateways: 1,
                fanouts: 1,
            };
            for name in &chosen {
                anyhow::ensure!(
                    servers::ALL.contains(&name.as_str()),
                    "unknown server {name} (expected some of {:?})",
                    servers::ALL
                );
                if name == "bridged" {
                    continue;
                }
                let started = async {
                    let server = setup.start(name, topology).await?;
                    eprintln!("== {name}: pids {:?}", server.pids);
                    suite::scenarios_for(&server, &plan, &mut results).await;
                    server.stop();
                    let fresh = setup.start(name, topology).await?;
                    suite::idle_for(&fresh, &plan, &mut results).await;
                    fresh.stop();
                    anyhow::Ok(())
                };
                match started.await {
                    Ok(()) => {}
                    Err(e) => {
                        let outcome = Outcome::skipped("all", name, &format!("did not start: {e}"));
                        println!("{}", outcome.line());
                        results.push(outcome);
                    }
                }
            }
            let mut taking_turns = Vec::new();
            for name in suite::INTERLEAVED
                .iter()
                .filter(|n| chosen.iter().any(|c| c == *n))
            {
                match setup.start(name, topology).await {
                    Ok(server) => taking_turns.push(server),
                    Err(e) => {
                        let why = format!("did not start: {e}");
                        let outcome = Outcome::skipped(suite::B1_INTERLEAVED, name, &why);
                        println!("{}", outcome.line());
                        results.push(outcome);
                    }
                }
            }
            if !taking_turns.is_empty() {
                eprintln!("== B1 interleaved: {} servers", taking_turns.len());
                suite::interleaved(&taking_turns, &plan, &mut results).await;
            }
            for server in taking_turns {
                server.stop();
            }
            if chosen.iter().any(|s| s == "bridged") {
                sb_bench::bridged::bridged(&setup, &plan, &mut results).await;
            }
            if plan.scaling && !no_scaling && chosen.iter().any(|s| s == "split") {
                suite::scaling(&setup, &plan, &mut results).await;
            }
            std::fs::write(
                setup.work_dir.join("results.json"),
                serde_json::to_vec_pretty(&results)?,
            )?;
            host_speed.after = probe_host();
            output.write(&results, host_speed)?;
            let failed = results.iter().filter(|o| o.failed()).count();
            anyhow::ensure!(
                !smoke || failed == 0,
                "{failed} scenario(s) skipped or with errors in the smoke run"
            );
            Ok(())
        }
    }
}
