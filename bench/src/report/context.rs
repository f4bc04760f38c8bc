//! Facts about a run that are not figures: the machine, the versions of every server and
//! tool, and the hand-written profile notes.

use std::path::Path;
use std::process::Command;

use crate::host_speed::HostSpeed;

/// Facts about the run that are not figures.
#[derive(Debug, Clone)]
pub struct Context {
    pub command: String,
    pub date: String,
    pub machine: String,
    pub host_speed: HostSpeed,
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
    pub fn gather(
        repo: &Path,
        command: &str,
        switchboard_bin: &Path,
        host_speed: HostSpeed,
    ) -> Context {
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
            host_speed,
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
