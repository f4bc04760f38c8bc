#![allow(clippy::unwrap_used, clippy::expect_used)] // test support: a failed step is a failed test
//! A real Redis for tests: `SWITCHBOARD_TEST_REDIS_URL` if set, else a `redis-server` this
//! process spawns on a free port and stops when done.
//!
//! Each server runs under a small shell that holds the read end of a pipe from this
//! process and stops the server when the pipe closes, so no server outlives its tests,
//! even a process killed mid-test or the shared server a `static` never drops.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const NOT_INSTALLED: &str = "redis-server is not installed: apt-get install -y redis-server (or set SWITCHBOARD_TEST_REDIS_URL)";
const URL_VAR: &str = "SWITCHBOARD_TEST_REDIS_URL";
const READY_WITHIN: Duration = Duration::from_secs(20);

/// A Redis to test against.
#[derive(Debug)]
pub struct TestRedis {
    url: String,
    server: Option<Server>,
}

#[derive(Debug)]
struct Server {
    port: u16,
    dir: PathBuf,
    /// Removed on drop when we created it.
    own_dir: bool,
    aof: bool,
    process: Option<Process>,
}

#[derive(Debug)]
struct Process {
    shell: Child,
    /// Closing it stops the server.
    lifeline: Option<ChildStdin>,
    redis_pid: u32,
}

impl TestRedis {
    /// `SWITCHBOARD_TEST_REDIS_URL` if set, else a fresh server (no persistence) stopped
    /// on drop. Tests sharing a server must use distinct prefixes ([`TestRedis::prefix`]).
    pub fn start() -> TestRedis {
        match std::env::var(URL_VAR) {
            Ok(url) if !url.is_empty() => TestRedis { url, server: None },
            _ => TestRedis::spawn(),
        }
    }

    /// One server for the whole test process ([`TestRedis::start`] semantics), started on
    /// first use and stopped when the process exits.
    pub fn shared() -> &'static TestRedis {
        static SHARED: OnceLock<TestRedis> = OnceLock::new();
        SHARED.get_or_init(TestRedis::start)
    }

    /// Always a private server, even with `SWITCHBOARD_TEST_REDIS_URL` set: for tests
    /// that kill connections or restart the server.
    pub fn spawn() -> TestRedis {
        TestRedis::spawn_in(temp_dir(), true, false)
    }

    /// A private server with an append-only file (`appendfsync everysec`) in `dir`, which
    /// [`TestRedis::restart`] reloads.
    pub fn spawn_with_aof(dir: &Path) -> TestRedis {
        std::fs::create_dir_all(dir).unwrap();
        TestRedis::spawn_in(dir.to_path_buf(), false, true)
    }

    fn spawn_in(dir: PathBuf, own_dir: bool, aof: bool) -> TestRedis {
        check_installed();
        let mut last_error = String::new();
        // A free port can be taken between probing and binding; try a few.
        for _ in 0..5 {
            let mut server = Server {
                port: free_port(),
                dir: dir.clone(),
                own_dir,
                aof,
                process: None,
            };
            match server.start() {
                Ok(()) => {
                    return TestRedis {
                        url: format!("redis://127.0.0.1:{}/0", server.port),
                        server: Some(server),
                    };
                }
                Err(e) => last_error = e,
            }
        }
        panic!("cannot start redis-server: {last_error}");
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// A key prefix no other test uses, e.g. `"sbtest:name:1234:7:"`.
    pub fn prefix(name: &str) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        format!("sbtest:{name}:{}:{n}:{nanos}:", std::process::id())
    }

    /// Whether this is a private server (restartable, killable).
    pub fn is_private(&self) -> bool {
        self.server.is_some()
    }

    /// Stops the server cleanly (SIGTERM: it flushes the append-only file) and starts it
    /// again on the same port and directory.
    pub fn restart(&mut self) {
        let server = self.private();
        server.stop(false);
        server.start().unwrap();
    }

    /// Kills the server (SIGKILL, like a machine losing power, except that the OS keeps
    /// what was written) and starts it again on the same port and directory.
    pub fn crash_and_restart(&mut self) {
        let server = self.private();
        server.stop(true);
        server.start().unwrap();
    }

    /// Stops the server; [`TestRedis::resume`] starts it again (to test outages).
    pub fn stop(&mut self) {
        self.private().stop(false);
    }

    pub fn resume(&mut self) {
        self.private().start().unwrap();
    }

    /// Runs one command on a fresh connection and returns its reply, for assertions
    /// about the server's state (e.g. `["PUBSUB", "NUMSUB", channel]`).
    pub async fn command(&self, args: &[&str]) -> ::redis::Value {
        let client = ::redis::Client::open(self.url.as_str()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let mut cmd = ::redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query_async(&mut conn).await.unwrap()
    }

    fn private(&mut self) -> &mut Server {
        self.server
            .as_mut()
            .expect("only a spawned redis-server can be stopped (not SWITCHBOARD_TEST_REDIS_URL)")
    }
}

impl Server {
    fn start(&mut self) -> Result<(), String> {
        let mut args: Vec<String> = [
            "--port",
            &self.port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--dir",
            &self.dir.display().to_string(),
            "--logfile",
            &self.dir.join("redis.log").display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if self.aof {
            args.extend(["--appendonly", "yes", "--appendfsync", "everysec"].map(String::from));
        } else {
            args.extend(["--appendonly", "no"].map(String::from));
        }
        // The shell reports the server's pid and exits with it; a companion stops the
        // server when our end of its stdin closes (on drop, or when this process dies).
        // (A background job's stdin is /dev/null unless redirected: hence fd 3.)
        let script = r#"exec 3<&0; redis-server "$@" </dev/null >/dev/null 2>&1 3<&- & pid=$!; echo "$pid"; (cat <&3 >/dev/null; kill "$pid" 2>/dev/null) & wait "$pid"; if [ -n "$SB_REMOVE_DIR" ]; then rm -rf "$SB_REMOVE_DIR"; fi"#;
        std::fs::create_dir_all(&self.dir).map_err(|e| e.to_string())?;
        let remove_dir = if self.own_dir {
            self.dir.clone()
        } else {
            PathBuf::new()
        };
        let mut shell = Command::new("sh")
            .env("SB_REMOVE_DIR", remove_dir)
            .arg("-c")
            .arg(script)
            .arg("sh")
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run sh: {e}"))?;
        let mut line = String::new();
        let stdout = shell.stdout.take().unwrap();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let redis_pid = line
            .trim()
            .parse()
            .map_err(|_| "no pid from the shell".to_owned())?;
        self.process = Some(Process {
            lifeline: shell.stdin.take(),
            shell,
            redis_pid,
        });
        let deadline = Instant::now() + READY_WITHIN;
        while Instant::now() < deadline {
            if answers(self.port, redis_pid) {
                return Ok(());
            }
            if let Some(process) = &mut self.process
                && let Ok(Some(status)) = process.shell.try_wait()
            {
                self.process = None;
                let log = std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(5).collect();
                return Err(format!(
                    "redis-server exited ({status}): {}",
                    tail.join(" | ")
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop(true);
        Err(format!("redis-server on port {} did not answer", self.port))
    }

    fn stop(&mut self, kill: bool) {
        let Some(mut process) = self.process.take() else {
            return;
        };
        if kill {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(process.redis_pid.to_string())
                .status();
        }
        drop(process.lifeline.take());
        let _ = process.shell.wait();
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        if let Some(server) = &mut self.server {
            server.stop(!server.aof);
            if server.own_dir {
                let _ = std::fs::remove_dir_all(&server.dir);
            }
        }
    }
}

fn check_installed() {
    let found = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if found.is_err() {
        panic!("{NOT_INSTALLED}");
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(TestRedis::prefix("redis").replace(':', "-"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether our server (not another process that took the port first) is up and done
/// loading: `INFO` reports both, and answers even while the server loads its data.
fn answers(port: u16, pid: u32) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    if stream.write_all(b"INFO\r\n").is_err() {
        return false;
    }
    let info = read_bulk(&mut stream);
    info.contains(&format!("process_id:{pid}\r\n")) && info.contains("loading:0\r\n")
}

/// One bulk-string reply (`$len\r\n…\r\n`), or "" for anything else.
fn read_bulk(stream: &mut TcpStream) -> String {
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n @ 1..) = stream.read(&mut chunk) {
        reply.extend_from_slice(&chunk[..n]);
        let Some(header_end) = reply.windows(2).position(|w| w == b"\r\n") else {
            continue;
        };
        let header = String::from_utf8_lossy(&reply[..header_end]);
        let Some(len) = header
            .strip_prefix('$')
            .and_then(|l| l.parse::<usize>().ok())
        else {
            return String::new();
        };
        let body = header_end + 2;
        if reply.len() >= body + len {
            return String::from_utf8_lossy(&reply[body..body + len]).into_owned();
        }
    }
    String::new()
}
