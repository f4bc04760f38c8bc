//! Starting and stopping the servers under test, each pinned to the server core, and
//! knowing their processes (for `/proc`) and A2A endpoints.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::a2a;
use crate::http::Target;

/// The servers a run can measure (`bridged`: Switchboard bridging the Python peer and
/// its own all-in-one, [`crate::bridged`]).
pub const ALL: [&str; 6] = ["python", "js", "ceiling", "switchboard", "split", "bridged"];

/// Where things are and how to pin them.
#[derive(Debug, Clone)]
pub struct Setup {
    pub repo: PathBuf,
    pub switchboard_bin: PathBuf,
    pub bench_bin: PathBuf,
    /// Scratch space for data directories, logs and cluster state.
    pub work_dir: PathBuf,
    /// CPU list for servers (`taskset -c`), none on a one-core machine.
    pub server_cpus: Option<String>,
}

/// A running server.
#[derive(Debug)]
pub struct Server {
    pub name: String,
    pub targets: Vec<Target>,
    pub pids: Vec<u32>,
    /// Processes by role (split deployment), for per-role CPU.
    pub roles: Vec<(String, u32, Option<u16>)>,
    child: Option<Child>,
    cluster_dir: Option<PathBuf>,
    setup: Setup,
}

/// Split deployment shape.
#[derive(Debug, Clone, Copy)]
pub struct Topology {
    pub gateways: usize,
    pub fanouts: usize,
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `program`, to run pinned to `cpus` (`taskset -c`) where there are any.
pub fn pinned(cpus: Option<&str>, program: &Path) -> Command {
    match cpus {
        Some(cpus) => {
            let mut command = Command::new("taskset");
            command.arg("-c").arg(cpus).arg(program);
            command
        }
        None => Command::new(program),
    }
}

impl Setup {
    fn pinned(&self, program: &Path) -> Command {
        pinned(self.server_cpus.as_deref(), program)
    }

    fn log(&self, name: &str) -> anyhow::Result<Stdio> {
        std::fs::create_dir_all(&self.work_dir)?;
        Ok(std::fs::File::create(self.work_dir.join(format!("{name}.log")))?.into())
    }

    /// Starts `name` (one of [`ALL`]) and waits until it completes an echo task.
    pub async fn start(&self, name: &str, topology: Topology) -> anyhow::Result<Server> {
        if name == "split" {
            return self.start_split(topology).await;
        }
        let port = free_port()?;
        let mut command = match name {
            "python" | "js" => {
                let mut c = self.pinned(&self.repo.join(format!("bench/peers/run-{name}.sh")));
                c.arg(port.to_string());
                c
            }
            "ceiling" => {
                let mut c = self.pinned(&self.bench_bin);
                c.args(["ceiling", "--port", &port.to_string()]);
                c
            }
            "switchboard" => {
                let data = self.work_dir.join("switchboard-data");
                let _ = std::fs::remove_dir_all(&data);
                let mut c = self.pinned(&self.switchboard_bin);
                c.arg("serve")
                    .arg("--listen")
                    .arg(format!("127.0.0.1:{port}"))
                    .arg("--data-dir")
                    .arg(&data)
                    .env(
                        "SWITCHBOARD_CONFIG",
                        self.repo.join("bench/switchboard.toml"),
                    )
                    .env("RUST_LOG", "warn");
                c
            }
            other => anyhow::bail!("unknown server {other} (expected one of {ALL:?})"),
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(self.log(name)?)
            .stderr(self.log(&format!("{name}.err"))?)
            .spawn()?;
        let path = if name == "switchboard" {
            "/agents/bench"
        } else {
            "/"
        };
        let target = Target::parse(&format!("http://127.0.0.1:{port}{path}"))?;
        let pid = child.id();
        let server = Server {
            name: name.to_owned(),
            targets: vec![target],
            pids: vec![pid],
            roles: vec![(name.to_owned(), pid, Some(port))],
            child: Some(child),
            cluster_dir: None,
            setup: self.clone(),
        };
        server.wait_ready().await?;
        Ok(server)
    }

    /// A Switchboard all-in-one whose `bench` agent bridges `upstream` (`kind = "a2a"`).
    /// Not pinned: it runs where the harness runs (the load generator's core), so the
    /// upstream keeps the servers' core to itself, as it had when measured alone.
    pub async fn start_bridge(&self, upstream: &Target, label: &str) -> anyhow::Result<Server> {
        let port = free_port()?;
        let data = self.work_dir.join(format!("{label}-data"));
        let _ = std::fs::remove_dir_all(&data);
        let config = self.work_dir.join(format!("{label}.toml"));
        std::fs::write(
            &config,
            format!(
                "max_streams_per_principal = 100000\n\
                 max_tasks_in_flight_per_principal = 100000\n\
                 default_agent = \"bench\"\n\
                 [[agents]]\nname = \"bench\"\nkind = \"a2a\"\nurl = \"{}\"\nmax_queued = 100000\n",
                upstream.url()
            ),
        )?;
        let child = Command::new(&self.switchboard_bin)
            .arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(&data)
            .arg("--config")
            .arg(&config)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(self.log(label)?)
            .stderr(self.log(&format!("{label}.err"))?)
            .spawn()?;
        let pid = child.id();
        let server = Server {
            name: label.to_owned(),
            targets: vec![Target::parse(&format!(
                "http://127.0.0.1:{port}/agents/bench"
            ))?],
            pids: vec![pid],
            roles: vec![(label.to_owned(), pid, Some(port))],
            child: Some(child),
            cluster_dir: None,
            setup: self.clone(),
        };
        server.wait_ready().await?;
        Ok(server)
    }

    async fn start_split(&self, topology: Topology) -> anyhow::Result<Server> {
        let dir = self.work_dir.join("cluster");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let mut command = self.pinned(&self.repo.join("scripts/local-cluster.sh"));
        let output = command
            .arg("up")
            .env("CLUSTER_DIR", &dir)
            .env("SWITCHBOARD_BIN", &self.switchboard_bin)
            .env(
                "SWITCHBOARD_CONFIG",
                self.repo.join("bench/switchboard.toml"),
            )
            // local-cluster.sh knows a worker is ready from the task-state log's
            // "worker attached" line.
            .env("RUST_LOG", "warn,sb_rpc::workers::session=info")
            .env("GATEWAYS", topology.gateways.to_string())
            .env("FANOUTS", topology.fanouts.to_string())
            // Held streams (B4) are turns that never end: one worker takes them all.
            .env("SWITCHBOARD_WORKER_CAPACITY", "20000")
            .env("TASKS", "1")
            .env("DISPATCHERS", "1")
            .env("REGISTRIES", "1")
            .env("WORKERS", "1")
            .stdin(Stdio::null())
            .stdout(self.log("split")?)
            .output()?;
        // Each start rewrites the log, so a failure's reason goes into the error too:
        // a later start would otherwise overwrite it before anyone reads it.
        std::fs::write(self.work_dir.join("split.err.log"), &output.stderr)?;
        let status = output.status;
        let mut server = Server {
            name: "split".to_owned(),
            targets: Vec::new(),
            pids: Vec::new(),
            roles: Vec::new(),
            child: None,
            cluster_dir: Some(dir.clone()),
            setup: self.clone(),
        };
        anyhow::ensure!(
            status.success(),
            "local-cluster.sh up failed ({status}); its stderr ends:\n{}",
            tail_lines(&String::from_utf8_lossy(&output.stderr), 30)
        );
        for line in std::fs::read_to_string(dir.join("processes"))?.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [role, pid, port] = fields[..] else {
                continue;
            };
            let pid: u32 = pid.parse()?;
            let port: Option<u16> = port.parse().ok();
            if role == "gateway"
                && let Some(port) = port
            {
                server.targets.push(Target::parse(&format!(
                    "http://127.0.0.1:{port}/agents/bench"
                ))?);
            }
            server.pids.push(pid);
            server.roles.push((role.to_owned(), pid, port));
        }
        server.wait_ready().await?;
        Ok(server)
    }
}

fn tail_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

impl Server {
    /// Ready once every endpoint completes an echo task (60 s at most).
    async fn wait_ready(&self) -> anyhow::Result<()> {
        for target in &self.targets {
            let mut last_error = String::new();
            let mut ready = false;
            for _ in 0..600 {
                match echo_once(target).await {
                    Ok(()) => {
                        ready = true;
                        break;
                    }
                    Err(e) => last_error = e.to_string(),
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            anyhow::ensure!(
                ready,
                "{} at {} is not answering: {last_error}",
                self.name,
                target.url()
            );
        }
        Ok(())
    }

    /// The processes of one role of a split deployment.
    pub fn pids_of(&self, role: &str) -> Vec<u32> {
        self.roles
            .iter()
            .filter(|(r, _, _)| r == role)
            .map(|(_, pid, _)| *pid)
            .collect()
    }

    pub fn port_of(&self, role: &str) -> Option<u16> {
        self.roles
            .iter()
            .find(|(r, _, _)| r == role)
            .and_then(|(_, _, port)| *port)
    }

    /// Stops the server: a kill, since its state is thrown away anyway.
    pub fn stop(mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(dir) = self.cluster_dir.take() {
            let _ = Command::new(self.setup.repo.join("scripts/local-cluster.sh"))
                .arg("down")
                .env("CLUSTER_DIR", &dir)
                .stdout(Stdio::null())
                .status();
        }
    }
}

async fn echo_once(target: &Target) -> anyhow::Result<()> {
    let reply = a2a::send_hello(target, "ready").await?;
    anyhow::ensure!(
        a2a::is_completed(&reply.body),
        "HTTP {}: {}",
        reply.status,
        String::from_utf8_lossy(&reply.body)
    );
    Ok(())
}
