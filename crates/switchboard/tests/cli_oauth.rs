//! `auth login` against a real authorization server: panva's oidc-provider
//! (`tests/oauth/server.mjs`), issuing JWT access tokens for the protected agent of a
//! Switchboard all-in-one that trusts its key set (`auth.jwt.jwks_url`) and advertises
//! its endpoints on the card (`auth.jwt.oauth`). The client-credentials and device flows
//! (the person at the provider's pages played by `tests/oauth/approve.mjs`, with form
//! posts), the stored token attached to `send`, its file's mode, renewal after expiry
//! (refresh token; client credentials again), a refused token, logout — and the token
//! never on stdout or stderr, `--debug` included.
//!
//! Needs node and the provider's packages (`bash tests/oauth/install.sh`), so it runs
//! apart: `cargo test -p switchboard --test cli_oauth -- --ignored` (scripts/test.sh
//! does).

#![allow(clippy::unwrap_used, clippy::zombie_processes)] // test harness; Drop reaps children

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

#[path = "support/process.rs"]
mod process;

use process::{Reaped, Served};

fn oauth_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/oauth")
}

/// The provider, for tokens whose audience is `resource`; its issuer URL.
fn provider(resource: &str) -> (Reaped, String) {
    let dir = oauth_dir();
    assert!(
        dir.join("node_modules/oidc-provider").exists(),
        "oidc-provider is not installed: run `bash tests/oauth/install.sh`"
    );
    let mut child = Command::new("node")
        .arg(dir.join("server.mjs"))
        .env("RESOURCE", resource)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    // Kept open and drained: a closed pipe would kill node at its next write.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let ready: Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("the provider did not start ({e}): {line:?}"));
    (Reaped(child), ready["issuer"].as_str().unwrap().to_owned())
}

/// The provider, and a Switchboard whose `guarded` agent accepts its tokens only.
struct World {
    agent: String,
    issuer: String,
    home: tempfile::TempDir,
    _provider: Reaped,
    _server: Served,
}

async fn world() -> World {
    let home = tempfile::tempdir().unwrap();
    let port = process::free_port();
    let agent = format!("http://127.0.0.1:{port}/agents/guarded");
    let (provider, issuer) = provider(&agent);
    let config = home.path().join("switchboard.toml");
    std::fs::write(
        &config,
        format!(
            "[[agents]]\nname = \"echo\"\nkind = \"echo\"\n\n\
             [[agents]]\nname = \"guarded\"\nkind = \"echo\"\n\n\
             [agents.auth.jwt]\njwks_url = \"{issuer}/jwks\"\nissuer = \"{issuer}\"\n\
             audience = \"{agent}\"\n\n\
             [agents.auth.jwt.oauth]\ntoken_url = \"{issuer}/token\"\n\
             device_authorization_url = \"{issuer}/device/auth\"\n\
             scopes = {{ a2a = \"call the agent\" }}\n"
        ),
    )
    .unwrap();
    let config = config.to_string_lossy().into_owned();
    let server = process::serve(port, &["--config", config.as_str(), "--memory"]).await;
    std::fs::create_dir_all(home.path().join("work")).unwrap();
    World {
        agent,
        issuer,
        home,
        _provider: provider,
        _server: server,
    }
}

impl World {
    fn command(&self, args: &[&str], envs: &[(&str, &str)]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_switchboard"));
        command
            .args(args)
            .current_dir(self.home.path().join("work"))
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"));
        for (name, _) in std::env::vars() {
            if name.starts_with("A2ACLI_") || name.starts_with("SWITCHBOARD_") {
                command.env_remove(name);
            }
        }
        command.envs(envs.iter().copied());
        command
    }

    fn run(&self, args: &[&str], envs: &[(&str, &str)]) -> Output {
        self.command(args, envs).output().unwrap()
    }

    fn tokens_dir(&self) -> PathBuf {
        self.home.path().join("config/a2a-cli/tokens")
    }

    /// The one stored token file, and what it holds.
    fn stored(&self) -> (PathBuf, Value) {
        let files: Vec<PathBuf> = std::fs::read_dir(self.tokens_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        let value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
        (files[0].clone(), value)
    }

    /// Makes the stored token look expired, as time would.
    fn expire(&self, file: &Path, drop_refresh: bool) {
        let mut token: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
        token["expires_at"] = 1_000.into();
        if drop_refresh {
            token.as_object_mut().unwrap().remove("refresh_token");
        }
        std::fs::write(file, token.to_string()).unwrap();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Whether `secret` shows anywhere in what the command printed.
fn leaks(out: &Output, secret: &str) -> bool {
    text(&out.stdout).contains(secret) || text(&out.stderr).contains(secret)
}

const SECRET: &str = "machine-secret";

#[tokio::test]
#[ignore = "needs node and tests/oauth's packages (bash tests/oauth/install.sh)"]
async fn client_credentials_login_then_calls_carry_the_stored_token() {
    let world = world().await;
    let agent = world.agent.as_str();

    // The card says where tokens come from.
    let card = world.run(&["card", agent], &[]);
    assert!(text(&card.stdout).contains("client credentials (token URL"));
    // Without a token: refused, exit 4.
    let out = world.run(&["send", agent, "hello"], &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("A2ACLI_ERR_CREDENTIALS_MISSING"));

    // Login with the machine's credentials (the secret from the environment).
    let secret = [("A2ACLI_CLIENT_SECRET", SECRET)];
    let out = world.run(&["auth", "login", agent, "--client-id", "machine"], &secret);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (file, stored) = world.stored();
    let token = stored["access_token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("ey"), "a JWT: {token}");
    assert!(!leaks(&out, &token) && !leaks(&out, SECRET));
    assert!(!std::fs::read_to_string(&file).unwrap().contains(SECRET));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&world.tokens_dir()), 0o700);

    // send carries it, --debug included, and never shows it.
    let out = world.run(&["send", agent, "hello", "--debug"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("hello"));
    assert!(!leaks(&out, &token));
    let status = world.run(&["auth", "status", "-o", "json"], &[]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["tokens"][0]["flow"], "client_credentials");
    assert_eq!(status["tokens"][0]["scopes"], serde_json::json!(["a2a"]));
    assert!(!status.to_string().contains(&token));

    // An explicit credential wins over the stored token.
    let out = world.run(&["send", agent, "hello", "--bearer", "not-a-jwt"], &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("A2ACLI_ERR_AUTH_FAILED"));

    // Expired, no refresh token: renewed with the client secret when it is available...
    world.expire(&file, true);
    let out = world.run(&["send", agent, "hello"], &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("auth login"));
    let out = world.run(&["send", agent, "hello"], &secret);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (_, renewed) = world.stored();
    assert_ne!(renewed["access_token"], stored["access_token"]);
    assert!(renewed["expires_at"].as_i64().unwrap() > 1_000);

    // A token the agent refuses: exit 4, saying to log in again.
    let mut forged = renewed;
    forged["access_token"] = format!("{token}x").into();
    std::fs::write(&file, forged.to_string()).unwrap();
    let out = world.run(&["send", agent, "hello"], &[]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("run `switchboard auth login"));

    // Logout removes the file; calls are refused again.
    let out = world.run(&["auth", "logout", agent], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!file.exists());
    let out = world.run(&["send", agent, "hello"], &[]);
    assert_eq!(out.status.code(), Some(4));
}

#[tokio::test]
#[ignore = "needs node and tests/oauth's packages (bash tests/oauth/install.sh)"]
async fn an_openid_connect_card_is_logged_into_through_the_discovery_document() {
    let world = world().await;
    // The agent's card with its OAuth 2 scheme replaced by an OpenID Connect one under
    // the same name: no token URL on the card, only the provider's discovery document.
    let served = world.run(&["card", &world.agent, "-o", "json"], &[]);
    assert_eq!(served.status.code(), Some(0), "{}", text(&served.stderr));
    let mut card: Value = serde_json::from_slice(&served.stdout).unwrap();
    let discovery = format!("{}/.well-known/openid-configuration", world.issuer);
    let schemes = card["securitySchemes"].as_object_mut().unwrap();
    assert!(!schemes.is_empty(), "{card:#}");
    for scheme in schemes.values_mut() {
        *scheme = serde_json::json!({"openIdConnectSecurityScheme": {
            "openIdConnectUrl": discovery}});
    }
    let path = world.home.path().join("work/oidc-card.json");
    std::fs::write(&path, card.to_string()).unwrap();
    let card_ref = path.to_string_lossy().into_owned();

    let secret = [("A2ACLI_CLIENT_SECRET", SECRET)];
    let out = world.run(
        &[
            "auth",
            "login",
            &card_ref,
            "--client-id",
            "machine",
            "--debug",
        ],
        &secret,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (_, stored) = world.stored();
    assert_eq!(stored["flow"], "client_credentials");
    assert_eq!(stored["token_url"], format!("{}/token", world.issuer));
    let token = stored["access_token"].as_str().unwrap().to_owned();
    assert!(!leaks(&out, &token) && !leaks(&out, SECRET));
    // The stored token is the card's: a call through it carries it.
    let out = world.run(&["send", &card_ref, "hello"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("hello"));
}

/// A device login under way: the command, where it sent the person, the rest of its
/// stderr (read on, so the command never blocks writing it).
struct DeviceLogin {
    child: Child,
    uri: String,
    code: String,
    stderr: std::thread::JoinHandle<String>,
}

/// Starts `auth login` for the device flow, up to the code it shows the person.
fn start_device_login(world: &World) -> DeviceLogin {
    let mut child = world
        .command(
            &[
                "auth",
                "login",
                &world.agent,
                "--scope",
                "openid offline_access a2a",
            ],
            &[],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let (mut uri, mut code) = (String::new(), String::new());
    let mut line = String::new();
    while code.is_empty() {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "auth login ended");
        if let Some(rest) = line.trim().strip_prefix("To sign in, open ") {
            uri = rest.to_owned();
        }
        if let Some(rest) = line.trim().strip_prefix("and enter the code: ") {
            code = rest.to_owned();
        }
    }
    let stderr = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
        rest
    });
    DeviceLogin {
        child,
        uri,
        code,
        stderr,
    }
}

fn person(uri: &str, code: &str, decision: &str) {
    let out = Command::new("node")
        .arg(oauth_dir().join("approve.mjs"))
        .args([uri, code, decision])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[tokio::test]
#[ignore = "needs node and tests/oauth's packages (bash tests/oauth/install.sh)"]
async fn the_device_flow_waits_for_the_person_and_its_token_is_refreshed() {
    let world = world().await;
    let agent = world.agent.as_str();

    // The person approves at the provider's pages while the command polls.
    let login = start_device_login(&world);
    assert!(login.uri.ends_with("/device"), "{}", login.uri);
    person(&login.uri, &login.code, "approve");
    let out = login.child.wait_with_output().unwrap();
    let rest = login.stderr.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{rest}");
    let (file, stored) = world.stored();
    let token = stored["access_token"].as_str().unwrap().to_owned();
    assert!(!leaks(&out, &token));
    assert_eq!(stored["flow"], "device_code");
    assert!(stored["refresh_token"].is_string());
    let out = world.run(&["send", agent, "hello"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // Expired: refreshed with the refresh token, no secret needed, and stored again.
    world.expire(&file, false);
    let out = world.run(&["send", agent, "hello", "--debug"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (_, refreshed) = world.stored();
    assert_ne!(refreshed["access_token"], stored["access_token"]);
    let fresh = refreshed["access_token"].as_str().unwrap();
    let refresh = refreshed["refresh_token"].as_str().unwrap();
    assert!(!leaks(&out, fresh) && !leaks(&out, refresh) && !leaks(&out, &token));

    // The person declines: exit 4, saying so; the stored token is left as it was.
    let login = start_device_login(&world);
    person(&login.uri, &login.code, "deny");
    let out = login.child.wait_with_output().unwrap();
    let rest = login.stderr.join().unwrap();
    assert_eq!(out.status.code(), Some(4), "{rest}");
    assert!(rest.contains("denied"), "{rest}");
    assert!(text(&out.stdout).is_empty());
    assert_eq!(world.stored().1, refreshed);
}
