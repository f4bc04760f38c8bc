//! Push notifications: a task's push-notification configs (`push create|get|list|
//! delete`, also `task push-config …`, spec Appendix A) and `push receive`, a local
//! receiver that prints each delivery and checks its Standard Webhooks signature with
//! the secret the agent signs with (sb-webhooks' own signing code).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use clap::{Args, Subcommand};
use sb_protocol::{AuthenticationInfo, ErrorKind, StreamResponse, TaskPushNotificationConfig};
use tokio::sync::mpsc;

use super::agent::{self, Agent};
use super::error::CliError;
use super::opts::{AgentOpts, FormatOpts};
use super::output::Out;
use super::render::{self, Doc};

#[derive(Debug, Subcommand)]
pub(crate) enum PushCommand {
    /// Ask the agent to push a task's events to URL: `create [AGENT] TASK_ID --url URL`.
    Create(CreateArgs),
    /// One config: `get [AGENT] TASK_ID CONFIG_ID`.
    Get(ConfigArgs),
    /// A task's configs: `list [AGENT] TASK_ID`.
    List(ConfigArgs),
    /// Remove one: `delete [AGENT] TASK_ID CONFIG_ID`.
    Delete(ConfigArgs),
    /// Receive deliveries on a local port, print them, check their signatures.
    Receive(ReceiveArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    /// `[AGENT] TASK_ID [CONFIG_ID]`.
    #[arg(value_name = "AGENT_OR_IDS", required = true, num_args = 1..=3)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub agent: AgentOpts,
    #[command(flatten)]
    pub output: FormatOpts,
}

#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    #[command(flatten)]
    pub target: ConfigArgs,
    /// Where the agent posts the task's events.
    #[arg(long)]
    pub url: String,
    /// The config's id (the agent chooses one otherwise).
    #[arg(long)]
    pub id: Option<String>,
    /// The config's `token`, which the agent sends back with each delivery (to tell
    /// them apart). Not `--token`: that one is the caller's credential.
    #[arg(long = "config-token")]
    pub token: Option<String>,
    /// The `Authorization` scheme of each delivery (e.g. Bearer), with --auth-credentials.
    #[arg(long, requires = "auth_credentials")]
    pub auth_scheme: Option<String>,
    #[arg(long, hide_env_values = true)]
    pub auth_credentials: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ReceiveArgs {
    /// The port to listen on (0: any free one, printed on stderr).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// The agent's signing secret (`whsec_…` or 16+ characters): deliveries whose
    /// Standard Webhooks signature does not verify are refused (401) and reported.
    #[arg(long, env = "A2ACLI_PUSH_SECRET", hide_env_values = true)]
    pub secret: Option<String>,
    /// Exit after this many deliveries.
    #[arg(long)]
    pub count: Option<u64>,
    #[command(flatten)]
    pub output: FormatOpts,
}

pub(crate) async fn run(command: PushCommand) -> Result<u8, CliError> {
    match command {
        PushCommand::Receive(args) => receive(args).await,
        PushCommand::Create(args) => {
            let out = Out::plain(&args.target.output, false);
            let (agent, ids) = open(&args.target, 1).await?;
            let authentication = args.auth_scheme.map(|scheme| AuthenticationInfo {
                scheme,
                credentials: args.auth_credentials.clone(),
            });
            let config = TaskPushNotificationConfig {
                tenant: agent.chosen.tenant.clone(),
                id: args.id,
                task_id: ids[0].clone(),
                url: args.url,
                token: args.token,
                authentication,
            };
            let created = agent
                .transport
                .create_push_config(&config)
                .await
                .map_err(|e| agent.call_error(e))?;
            print_config(&out, &created)?;
            Ok(0)
        }
        PushCommand::Get(args) => {
            let out = Out::plain(&args.output, false);
            let (agent, ids) = open(&args, 2).await?;
            let config = agent
                .transport
                .get_push_config(&ids[0], &ids[1])
                .await
                .map_err(|e| agent.call_error(e))?;
            print_config(&out, &config)?;
            Ok(0)
        }
        PushCommand::List(args) => {
            let out = Out::plain(&args.output, false);
            let (agent, ids) = open(&args, 1).await?;
            let configs = agent
                .transport
                .list_push_configs(&ids[0])
                .await
                .map_err(|e| agent.call_error(e))?;
            match out.is_json() {
                // ListTaskPushNotificationConfigsResponse.
                true => out.json(&serde_json::json!({ "configs": configs }))?,
                false => {
                    for config in &configs {
                        out.write(&format!("{}\n", config_doc(config).render()))?;
                    }
                    out.write(&format!("Configs: {}\n", configs.len()))?;
                }
            }
            Ok(0)
        }
        PushCommand::Delete(args) => {
            let out = Out::plain(&args.output, false);
            let (agent, ids) = open(&args, 2).await?;
            agent
                .transport
                .delete_push_config(&ids[0], &ids[1])
                .await
                .map_err(|e| agent.call_error(e))?;
            match out.is_json() {
                true => out.json(&serde_json::json!({}))?,
                false => out.write(&format!("Deleted: {} of task {}\n", ids[1], ids[0]))?,
            }
            Ok(0)
        }
    }
}

/// The agent and `wanted` ids of `[AGENT] ID…`.
async fn open(args: &ConfigArgs, wanted: usize) -> Result<(Agent, Vec<String>), CliError> {
    let mut words = args.words.clone();
    let reference = match args.agent.card.agent_card.clone() {
        Some(reference) => reference,
        None if words.len() == wanted + 1 => words.remove(0),
        None => return Err(CliError::usage("name the agent first, or with -a")),
    };
    if words.len() != wanted {
        return Err(CliError::usage(match wanted {
            1 => "give the task id",
            _ => "give the task id and the config id",
        }));
    }
    let agent = agent::open(&reference, &args.agent).await?;
    // Spec §13.3: a capability the card does not declare is not tried.
    if agent.card.capabilities.push_notifications != Some(true) {
        return Err(CliError::capability_missing(
            ErrorKind::PushNotificationNotSupported,
            format!(
                "{reference} does not offer push notifications (its card's capabilities.pushNotifications is not true)"
            ),
        ));
    }
    Ok((agent, words))
}

fn config_doc(config: &TaskPushNotificationConfig) -> Doc {
    let mut doc = Doc::default();
    doc.field("Config ID", config.id.as_deref().unwrap_or(""))
        .field("Task ID", &config.task_id)
        .field("URL", &config.url);
    if let Some(auth) = &config.authentication {
        doc.field("Auth Scheme", &auth.scheme);
    }
    doc
}

fn print_config(out: &Out, config: &TaskPushNotificationConfig) -> Result<(), CliError> {
    match out.is_json() {
        true => out.json(config),
        false => out.write(&config_doc(config).render()),
    }
}

/// One delivery, as received.
struct Delivery {
    id: String,
    verified: Verdict,
    body: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Verified,
    Invalid,
    Unsigned,
    Unchecked,
}

impl Verdict {
    fn name(self) -> &'static str {
        match self {
            Verdict::Verified => "verified",
            Verdict::Invalid => "invalid",
            Verdict::Unsigned => "absent",
            Verdict::Unchecked => "not checked (no --secret)",
        }
    }
}

/// Whether one of the `v1,…` signatures of the headers is the one `secret` makes.
fn verify(secret: Option<&[u8]>, headers: &HeaderMap, body: &[u8]) -> Verdict {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let Some(secret) = secret else {
        return Verdict::Unchecked;
    };
    let (Some(id), Some(timestamp), Some(signatures)) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    ) else {
        return Verdict::Unsigned;
    };
    let expected = sb_webhooks::signing::sign(secret, id, timestamp, body);
    match signatures.split_whitespace().any(|s| s == expected) {
        true => Verdict::Verified,
        false => Verdict::Invalid,
    }
}

async fn receive(args: ReceiveArgs) -> Result<u8, CliError> {
    let out = Out::plain(&args.output, true);
    let secret = match &args.secret {
        Some(text) => Some(Arc::<[u8]>::from(
            sb_webhooks::signing::parse_secret(text).map_err(CliError::usage)?,
        )),
        None => None,
    };
    let (sender, mut deliveries) = mpsc::unbounded_channel::<Delivery>();
    let app = axum::Router::new().fallback(move |headers: HeaderMap, body: axum::body::Bytes| {
        let sender = sender.clone();
        let secret = secret.clone();
        async move {
            let verified = verify(secret.as_deref(), &headers, &body);
            let id = headers
                .get("webhook-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let body = String::from_utf8_lossy(&body).into_owned();
            let _ = sender.send(Delivery { id, verified, body });
            match verified {
                Verdict::Invalid | Verdict::Unsigned => StatusCode::UNAUTHORIZED,
                Verdict::Verified | Verdict::Unchecked => StatusCode::NO_CONTENT,
            }
        }
    });
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.host, args.port))
        .await
        .map_err(|e| {
            CliError::internal(format!("cannot listen on {}:{}: {e}", args.host, args.port))
        })?;
    let address = listener
        .local_addr()
        .map_err(|e| CliError::internal(e.to_string()))?;
    eprintln!("Listening: http://{address}/ (Ctrl-C stops)");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let mut received = 0;
    let mut invalid = false;
    loop {
        let delivery = tokio::select! {
            delivery = deliveries.recv() => delivery,
            _ = tokio::signal::ctrl_c() => None,
        };
        let Some(delivery) = delivery else { break };
        invalid |= delivery.verified == Verdict::Invalid;
        print_delivery(&out, &delivery)?;
        received += 1;
        if args.count.is_some_and(|count| received >= count) {
            break;
        }
    }
    server.abort();
    // A forged or corrupted delivery is a failure worth an exit status.
    Ok(if invalid { super::exit::FAILURE } else { 0 })
}

fn print_delivery(out: &Out, delivery: &Delivery) -> Result<(), CliError> {
    let event: Option<StreamResponse> = serde_json::from_str(&delivery.body).ok();
    if out.is_json() {
        // The payload as the agent sent it (a StreamResponse), one per line.
        let value: serde_json::Value = serde_json::from_str(&delivery.body)
            .unwrap_or(serde_json::Value::String(delivery.body.clone()));
        return out.json(&value);
    }
    let mut head = Doc::default();
    head.field("Delivery", &delivery.id)
        .field("Signature", delivery.verified.name());
    let body = match &event {
        Some(event) => render::event(event, None),
        None => format!("Body:\n{}\n\n", delivery.body.trim()),
    };
    out.write(&format!("{}{body}", head.render()))
}
