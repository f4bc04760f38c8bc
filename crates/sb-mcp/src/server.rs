//! [`FleetTools`], the MCP server: its tools are the catalog's, a call goes to the
//! agent as [`crate::call`] says, and each change of the catalog is announced to the
//! client (`notifications/tools/list_changed`). Two transports: stdio
//! ([`serve_stdio`], `switchboard mcp`, with the credentials it was started with) and
//! streamable HTTP ([`http_service`], a gateway's `/mcp`, where each call carries the
//! credentials of the HTTP request that made it, so an agent sees the caller as its own
//! A2A endpoint would).
//!
//! An agent's question goes to the person at a client that takes forms: during the call
//! (`elicitation/create`) on the handshake-era protocols, in an input-required result
//! the client answers by calling again ([`crate::rounds`]) on 2026-07-28, where the
//! server may not send requests of its own; to the LLM otherwise. To a client that
//! declared the tasks extension, a call whose task outlasts the wait comes back as an
//! MCP task ([`crate::tasks`]), which `tasks/get`, `tasks/update` and `tasks/cancel`
//! then follow, answer and cancel; any other client gets the task's `working` answer.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, ErrorData, GetTaskParams, GetTaskResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::{ElicitationMode, NotificationContext, Peer, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};
use sb_client::{Credentials, Transport};
use sb_protocol::card::SecurityScheme;
use tokio_util::sync::CancellationToken;

use crate::answer::{task_answer, tool_result};
use crate::call::{Ask, Caller, Outcome, Refusal, Session, call, transport_to};
use crate::catalog::{AgentTool, CatalogFeed, tool_name};
use crate::question::Reply;
use crate::refusals::{MAX_REQUEST_BYTES, as_json_rpc_errors};
use crate::rounds;
use crate::tasks::TaskHandle;

/// How the server behaves.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Longest a call waits for its task to end or ask something.
    pub wait: Duration,
}

/// Longest a person is given to answer an agent's question put through the client.
const ANSWER_WAIT: Duration = Duration::from_secs(600);

/// Asks through `peer`, when its client takes form elicitations.
fn asker(peer: &Peer<RoleServer>) -> Option<Box<Ask>> {
    if !peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return None;
    }
    let peer = peer.clone();
    Some(Box::new(move |question: String| {
        let peer = peer.clone();
        Box::pin(async move {
            match peer
                .elicit_with_timeout::<Reply>(question, Some(ANSWER_WAIT))
                .await
            {
                Ok(Some(reply)) if !reply.answer.trim().is_empty() => Some(reply.answer),
                Ok(_) => None,
                Err(e) => {
                    tracing::debug!(error = %e, "an agent's question could not be put to the person; the LLM answers it");
                    None
                }
            }
        })
    }))
}

/// What the server tells the LLM about its tools, once, at the start.
const GUIDE: &str = "Each A2A_<agent> tool is a remote agent. An answer's `kind` says what it is: \
`message` is complete (read `contents`); `task` carries `taskId`, `contextId` and `status.state`. \
On `input-required` (or `auth-required`), answer the `question` by calling the same tool with the \
same `taskId` and `contextId`. On `completed`, read `artifacts`. On `failed`, `canceled` or \
`rejected`, start a new request without `taskId`. On `submitted` or `working`, the agent is still \
at it: stop and report the `taskId`. Omit `contextId` on your first message to an agent and reuse it \
afterwards; never invent a `taskId` or a `contextId`; use `referenceTaskIds` to build on earlier tasks.";

/// The MCP server of one session.
#[derive(Clone, Debug)]
pub struct FleetTools {
    feed: CatalogFeed,
    caller: Caller,
    /// Take each call's credentials from its HTTP request (`/mcp`) rather than
    /// `caller`'s (stdio).
    per_request: bool,
    session: Arc<Session>,
}

impl FleetTools {
    pub fn new(feed: CatalogFeed, caller: Caller, per_request: bool) -> FleetTools {
        FleetTools {
            feed,
            caller,
            per_request,
            session: Arc::default(),
        }
    }

    /// The credentials of this call: the HTTP request's own (its `Authorization`, and
    /// the header the agent's API-key scheme names), or the server's.
    fn caller_for(&self, tool: &AgentTool, context: &RequestContext<RoleServer>) -> Caller {
        if !self.per_request {
            return self.caller.clone();
        }
        let mut credentials = Credentials::default();
        if let Some(parts) = context.extensions.get::<http::request::Parts>() {
            let mut names = vec!["authorization".to_owned()];
            for scheme in tool.card.security_schemes.values() {
                if let SecurityScheme::ApiKeySecurityScheme { location, name, .. } = scheme
                    && location.eq_ignore_ascii_case("header")
                {
                    names.push(name.to_ascii_lowercase());
                }
            }
            for name in names {
                if let Some(value) = parts.headers.get(&name).and_then(|v| v.to_str().ok()) {
                    credentials.headers.push((name, value.to_owned()));
                }
            }
        }
        Caller {
            credentials,
            ..self.caller.clone()
        }
    }

    /// The task an MCP task id names, and the transport to its agent with this request's
    /// credentials.
    fn task_of(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(TaskHandle, Arc<dyn Transport>), ErrorData> {
        let handle = TaskHandle::parse(id)?;
        let catalog = self.feed.current();
        let tool = catalog
            .tools
            .get(&tool_name(&handle.agent))
            .filter(|tool| tool.agent == handle.agent)
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("no task {id}: agent {} is not in the fleet", handle.agent),
                    None,
                )
            })?;
        let caller = self.caller_for(tool, context);
        let transport =
            transport_to(tool, &caller).map_err(|Refusal(e)| ErrorData::internal_error(e, None))?;
        Ok((handle, transport))
    }
}

impl ServerHandler for FleetTools {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .build();
        let mut info = ServerConfig::new(capabilities);
        info.server_info = Implementation::new("switchboard", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(GUIDE.to_owned());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.feed.current().tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let catalog = self.feed.current();
        let Some(tool) = catalog.tools.get(request.name.as_ref()) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "no tool {}: the fleet's agents changed; list the tools again",
                    request.name
                ),
                None,
            ));
        };
        let caller = self.caller_for(tool, &context);
        let capabilities = context.client_capabilities();
        // On 2026-07-28 a question goes back in the result, for the client to ask and
        // call again; rmcp refuses `elicitation/create` there.
        let modern = rounds::is_modern(context.protocol_version().as_ref());
        let (ask, returns_questions) = if modern {
            (None, capabilities.as_ref().is_some_and(rounds::takes_forms))
        } else {
            (asker(&context.peer), false)
        };
        // Only a client that declared the extension on this request (or at initialize)
        // may be handed a task; rmcp refuses the response otherwise.
        let takes_tasks = capabilities.is_some_and(|capabilities| capabilities.supports_tasks());
        let outcome = match &request.request_state {
            // A retry after an input-required result: its arguments are the first
            // call's, already sent; the responses are what goes to the task now.
            Some(state) => {
                let responses = request.input_responses.unwrap_or_default();
                rounds::resume(tool, &caller, state, &responses, ask.as_deref()).await?
            }
            None => {
                call(
                    tool,
                    request.arguments,
                    &caller,
                    &self.session,
                    ask.as_deref(),
                )
                .await
            }
        };
        let result = match outcome {
            Ok(Outcome::Done(answer)) => tool_result(answer),
            Ok(Outcome::Asks(task)) if returns_questions => {
                return Ok(rounds::input_required(&tool.agent, &task)?.into());
            }
            Ok(Outcome::Asks(task)) => tool_result(task_answer(&task)),
            Ok(Outcome::Working(task)) if takes_tasks => {
                let seed = TaskHandle::new(&tool.agent, &task).seed(&task);
                return Ok(CallToolResponse::Task(CreateTaskResult::new(seed)));
            }
            Ok(Outcome::Working(task)) => tool_result(task_answer(&task)),
            Err(Refusal(reason)) => CallToolResult::error(vec![ContentBlock::text(reason)]),
        };
        Ok(result.into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (handle, transport) = self.task_of(&request.task_id, &context)?;
        let task = handle.read(&*transport).await?;
        Ok(GetTaskResult::new(handle.detailed(&task)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (handle, transport) = self.task_of(&request.task_id, &context)?;
        handle.update(&*transport, &request.input_responses).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (handle, transport) = self.task_of(&request.task_id, &context)?;
        handle.cancel(&*transport).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer;
        let mut changes = self.feed.changes();
        changes.borrow_and_update();
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!(error = %e, "an MCP client left; its list-changed notices stop");
                    return;
                }
            }
        });
    }
}

/// Serves one MCP client on stdin and stdout until it leaves.
pub async fn serve_stdio(tools: FleetTools) -> Result<(), String> {
    let running = tools
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP session did not start: {e}"))?;
    running
        .waiting()
        .await
        .map(drop)
        .map_err(|e| format!("the MCP session ended: {e}"))
}

/// The streamable HTTP endpoint (a router to nest at `/mcp`): a session per client,
/// each call with its request's credentials; `allowed_hosts` are the `Host` values it
/// answers (the public URL's, besides loopback). A body it cannot read is answered as
/// a JSON-RPC error ([`crate::refusals`]).
pub fn http_service(
    feed: CatalogFeed,
    caller: Caller,
    allowed_hosts: Vec<String>,
    stop: CancellationToken,
) -> axum::Router {
    let mut config = StreamableHttpServerConfig::default();
    config.cancellation_token = stop;
    config.allowed_hosts.extend(allowed_hosts);
    config.max_request_body_bytes = MAX_REQUEST_BYTES;
    let service = StreamableHttpService::new(
        move || Ok(FleetTools::new(feed.clone(), caller.clone(), true)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    axum::Router::new()
        .fallback_service(service)
        .layer(axum::middleware::from_fn(as_json_rpc_errors))
}
