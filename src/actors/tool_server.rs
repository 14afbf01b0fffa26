//! `ToolServerActor`: the door to one MCP server, and what the orchestrator knows about that
//! server — never about a user.
//!
//! The actor owns, for its server:
//! - its connection pool: the reqwest client every call's rmcp client runs on. The rmcp client
//!   itself is built per call, because it carries that call's bearer (see `mcp::client`);
//! - its health: the last error and the size of the last listing. A call that finds the server
//!   gone — it failed, and a TCP connect to the server fails too — makes the actor fail: the
//!   root supervisor sees a crash and starts a fresh actor (a new pool, no cached definitions:
//!   whatever comes back on that address is a new server process). Only "unreachable" counts,
//!   so one user's bad token or slow tool can never crash it for everybody. A server that keeps
//!   being down reaches the root's restart limit and is then *unavailable* for the restart
//!   window: its tools are withdrawn from turns, calls are refused at once, and it is tried
//!   again afterwards (`actors::root`; [`Standing`] is what the root records of it here);
//! - its cache of converted tool definitions, keyed by each definition's fingerprint (a
//!   listing is still made with each caller's own bearer every time: the tool set is theirs).
//!
//! It never holds a bearer: each message carries the caller's, the call's task uses it and
//! drops it. It never serialises calls from different users: every call runs in its own task;
//! only what the call tells about the server comes back through the mailbox.
//!
//! [`ToolServers`] is the typed handle the rest of the crate uses: one method per operation,
//! each with its own reply type, each a ractor `call` bounded by the tool timeout
//! (`TAMEBI_TOOL_TIMEOUT_SECS`).

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use rmcp::model::{CallToolResult, ReadResourceResult, Tool};
use serde::Serialize;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio_util::task::TaskTracker;

use crate::auth::Caller;
use crate::config::{McpServer, ServerAuth};
use crate::mcp::client::{self, CallContext, McpError};
use crate::mcp::registry::{ToolDef, fingerprint};

/// How long the reachability probe after a failed call may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Converted definitions kept; beyond it the cache starts over (definitions rarely change).
const MAX_CACHED_DEFINITIONS: usize = 1024;
/// A lost reply is noticed this long after the call's own bound.
const REPLY_MARGIN: Duration = Duration::from_secs(1);
/// A health question needs no network: the mailbox answers it at once.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);

pub enum ToolServerMsg {
    /// The tools this caller is offered, as definitions (see [`ToolDef::from_mcp`]).
    ListTools {
        ctx: CallContext,
        reply: RpcReplyPort<Result<Vec<ToolDef>, McpError>>,
    },
    CallTool {
        ctx: CallContext,
        name: String,
        arguments: serde_json::Map<String, serde_json::Value>,
        reply: RpcReplyPort<Result<CallToolResult, McpError>>,
    },
    /// One resource (an MCP App document).
    ReadResource {
        ctx: CallContext,
        uri: String,
        reply: RpcReplyPort<Result<ReadResourceResult, McpError>>,
    },
    Health {
        reply: RpcReplyPort<Health>,
    },
    /// A call's task finished: what it tells about the server.
    Observed(Observation),
    /// A listing came back: converted here (through the cache), then answered.
    Listed {
        tools: Vec<Tool>,
        reply: RpcReplyPort<Result<Vec<ToolDef>, McpError>>,
    },
}

/// What one finished call tells about the server.
#[derive(Debug)]
pub enum Observation {
    /// The server answered (a result, or a JSON-RPC error of its own).
    Answered,
    /// The call failed; `unreachable` when a TCP connect to the server failed too.
    Failed {
        error: String,
        kind: &'static str,
        unreachable: bool,
    },
}

/// A server's health, as its actor sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    pub server: String,
    /// False while the last call found the server unreachable, while it is unavailable, or
    /// when its actor does not answer.
    pub reachable: bool,
    /// `open` while the server is unavailable (its restart limit was reached), `half_open`
    /// once it is tried again until a call reaches it, else `closed`.
    pub circuit: Circuit,
    /// Times the server was found unreachable (its actor crashed) within the restart window.
    pub consecutive_unreachable: u32,
    /// The last failed call (redacted; never a bearer or arguments).
    pub last_error: Option<LastError>,
    /// Tools in the latest successful listing (listings are per caller: this is the last one).
    pub tool_count: Option<usize>,
    /// Converted definitions in the cache.
    pub cached_definitions: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Circuit {
    Closed,
    /// The server is unavailable: calls are answered at once, without reaching for it.
    Open,
    /// The unavailable period ended; the next call that reaches the server closes it.
    HalfOpen,
}

/// What the root supervisor records of one server across its actor's restarts: the actor's
/// own state goes with each crash, this does not.
#[derive(Debug, Clone, Default)]
pub struct Standing {
    /// Crashes (server found unreachable) within the restart window.
    pub recent_crashes: u32,
    /// Set while the server is unavailable (its restart limit was reached).
    pub unavailable: Option<Unavailable>,
    /// Tried again after being unavailable; cleared by the first call that reaches it.
    pub trial: bool,
}

/// A server taken out of service because its actor reached the restart limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unavailable {
    pub server: String,
    /// Why its last actor failed (redacted).
    pub reason: String,
    pub since_unix_ms: i64,
    /// When the root supervisor starts it again.
    pub retry_at_unix_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastError {
    /// The `error.type` of the failure (`tool.transport`, `tool.timeout`, …).
    pub kind: &'static str,
    pub message: String,
    pub at_unix_ms: i64,
}

impl Health {
    /// The health of a server whose actor did not answer.
    fn unanswered(server: &str, why: &str) -> Health {
        Health {
            server: server.to_string(),
            reachable: false,
            circuit: Circuit::Closed,
            consecutive_unreachable: 0,
            last_error: Some(LastError {
                kind: "tool.actor",
                message: why.to_string(),
                at_unix_ms: chrono::Utc::now().timestamp_millis(),
            }),
            tool_count: None,
            cached_definitions: 0,
        }
    }
}

/// One server's actor: its configuration (never a credential) and where its tasks are tracked.
pub struct ToolServerActor {
    pub server: McpServer,
    pub tasks: TaskTracker,
}

pub struct State {
    /// This server's connection pool.
    http: reqwest::Client,
    health: HealthState,
    /// Converted definitions by fingerprint: a definition's conversion (visibility, policy,
    /// G2 envelope for `auth=none` servers) depends on nothing but the definition itself.
    definitions: HashMap<String, ToolDef>,
}

#[derive(Default)]
struct HealthState {
    /// The last call found the server unreachable (the actor is failing on it).
    unreachable: bool,
    last_error: Option<LastError>,
    tool_count: Option<usize>,
}

impl HealthState {
    /// Records what a call found. `Err` when the server is gone: the actor must fail, so its
    /// supervisor starts a fresh one (and counts it against the restart limit).
    fn observe(&mut self, server: &str, observation: Observation) -> Result<(), ServerGone> {
        let Observation::Failed { error, kind, unreachable } = observation else {
            self.unreachable = false;
            return Ok(());
        };
        let gone = unreachable.then(|| ServerGone(format!("{server} is unreachable: {error}")));
        self.last_error = Some(LastError {
            kind,
            message: error,
            at_unix_ms: chrono::Utc::now().timestamp_millis(),
        });
        // Not unreachable: the server is there; the failure was this call's own.
        self.unreachable = unreachable;
        gone.map_or(Ok(()), Err)
    }
}

/// The failure of a tool-server actor whose server went away (the supervision reason).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ServerGone(String);

impl Actor for ToolServerActor {
    type Msg = ToolServerMsg;
    type State = State;
    type Arguments = ();

    async fn pre_start(&self, _myself: ActorRef<Self::Msg>, _: ()) -> Result<State, ActorProcessingErr> {
        let http = reqwest::Client::builder()
            .connect_timeout(crate::model::CONNECT_TIMEOUT)
            .pool_idle_timeout(Duration::from_secs(60))
            .build()?;
        tracing::info!(server = %self.server.name, "tool server actor started");
        Ok(State {
            http,
            health: HealthState::default(),
            definitions: HashMap::new(),
        })
    }

    async fn handle(&self, myself: ActorRef<Self::Msg>, msg: Self::Msg, state: &mut State) -> Result<(), ActorProcessingErr> {
        match msg {
            ToolServerMsg::ListTools { ctx, reply } => {
                let me = myself.clone();
                let list = |http: reqwest::Client, ctx: CallContext| async move { client::list_tools(&http, &ctx).await };
                self.spawn_call(&myself, state, ctx, "tools/list", None, list, move |result| match result {
                    Ok(tools) => {
                        // Converted in the mailbox, where the cache is; a stopped actor drops the reply.
                        let _ = me.send_message(ToolServerMsg::Listed { tools, reply });
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                });
            }
            ToolServerMsg::CallTool {
                ctx,
                name,
                arguments,
                reply,
            } => {
                let tool = name.clone();
                let call =
                    move |http: reqwest::Client, ctx: CallContext| async move { client::call_tool(&http, &ctx, &name, arguments).await };
                self.spawn_call(&myself, state, ctx, "tools/call", Some(&tool), call, move |result| {
                    let _ = reply.send(result);
                });
            }
            ToolServerMsg::ReadResource { ctx, uri, reply } => {
                let read = move |http: reqwest::Client, ctx: CallContext| async move { client::read_resource(&http, &ctx, &uri).await };
                self.spawn_call(&myself, state, ctx, "resources/read", None, read, move |result| {
                    let _ = reply.send(result);
                });
            }
            ToolServerMsg::Health { reply } => {
                let _ = reply.send(self.health(state));
            }
            ToolServerMsg::Observed(observation) => {
                // A server that went away fails this actor (the error is the crash's reason):
                // the supervisor restarts it, or takes the server out of service (`actors::root`).
                state.health.observe(&self.server.name, observation)?;
            }
            ToolServerMsg::Listed { tools, reply } => {
                state.health.tool_count = Some(tools.len());
                let _ = reply.send(Ok(self.definitions(state, &tools)));
            }
        }
        Ok(())
    }
}

impl ToolServerActor {
    /// The actor's own view; [`ToolServers::health`] adds the supervisor's ([`Standing`]).
    fn health(&self, state: &State) -> Health {
        Health {
            server: self.server.name.clone(),
            reachable: !state.health.unreachable,
            circuit: Circuit::Closed,
            consecutive_unreachable: 0,
            last_error: state.health.last_error.clone(),
            tool_count: state.health.tool_count,
            cached_definitions: state.definitions.len(),
        }
    }

    /// The definitions of a listing, converted once per distinct definition. Text from an
    /// `auth=none` server is treated as untrusted (G2), see [`ToolDef::from_untrusted_mcp`];
    /// the policy takes the server's configured trust (G3, see `approval`).
    fn definitions(&self, state: &mut State, tools: &[Tool]) -> Vec<ToolDef> {
        let untrusted = self.server.auth == ServerAuth::None;
        if state.definitions.len() + tools.len() > MAX_CACHED_DEFINITIONS {
            state.definitions.clear();
        }
        tools
            .iter()
            .map(|tool| {
                state
                    .definitions
                    .entry(fingerprint(tool))
                    .or_insert_with(|| {
                        if untrusted {
                            ToolDef::from_untrusted_mcp(&self.server.name, self.server.trust, tool)
                        } else {
                            ToolDef::from_mcp(&self.server.name, self.server.trust, tool)
                        }
                    })
                    .clone()
            })
            .collect()
    }

    /// Runs one call in its own task (one user's slow tool never delays another's), inside an
    /// `mcp.call` span that is a child of the tool span that asked (`ctx.parent`). The outcome
    /// goes to `deliver`; what it tells about the server comes back to this actor.
    #[expect(clippy::too_many_arguments, reason = "one call's whole description, used in three places")]
    fn spawn_call<T, F, Fut>(
        &self,
        myself: &ActorRef<ToolServerMsg>,
        state: &State,
        mut ctx: CallContext,
        method: &'static str,
        tool: Option<&str>,
        work: F,
        deliver: impl FnOnce(Result<T, McpError>) + Send + 'static,
    ) where
        T: Send + 'static,
        F: FnOnce(reqwest::Client, CallContext) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, McpError>> + Send,
    {
        let span = tracing::info_span!(
            parent: &ctx.parent,
            "mcp.call",
            request_id = %ctx.request_id,
            op = method,
            otel.name = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
            mcp.method.name = tracing::field::Empty,
            gen_ai.tool.name = tracing::field::Empty,
            server.address = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        if crate::telemetry::exporting() {
            record_call(&span, &ctx, method, tool);
            // The MCP server's spans continue this one.
            ctx.traceparent = crate::telemetry::traceparent(&span);
        }
        let http = state.http.clone();
        let server = self.server.name.clone();
        let me = myself.clone();
        self.tasks.spawn(tracing::Instrument::instrument(
            async move {
                let started = Instant::now();
                let url = ctx.url.clone();
                let result = work(http, ctx).await;
                let error = result.as_ref().err().map(error_type);
                if let Some(e) = error {
                    let span = tracing::Span::current();
                    span.record("error.type", e);
                    span.record("otel.status_code", "ERROR");
                    crate::telemetry::metrics::error(e);
                }
                crate::telemetry::metrics::tool_call(&server, method, started.elapsed(), error);
                let failure = match &result {
                    Ok(_) | Err(McpError::Refused(_)) => None,
                    Err(e) => Some((crate::auth::redact::redact(&e.to_string()), error_type(e))),
                };
                // The caller first; the probe (for a failure) only informs the health.
                deliver(result);
                let observation = match failure {
                    None => Observation::Answered,
                    Some((error, kind)) => {
                        let unreachable = !reachable(&url).await;
                        tracing::info!(error.type = kind, unreachable, "a call failed; the server was probed");
                        Observation::Failed { error, kind, unreachable }
                    }
                };
                let _ = me.send_message(ToolServerMsg::Observed(observation));
            },
            span,
        ));
    }
}

/// Whether a TCP connection to the server opens: it tells a server that is down from a call
/// that failed on its own (a refused token, a slow tool).
async fn reachable(url: &url::Url) -> bool {
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect((host, port))).await {
        // A connection to itself is no server: on loopback, a connect to a port nobody listens
        // on can be given that very port as its source, and TCP's simultaneous open then
        // "connects" it to itself.
        Ok(Ok(stream)) => {
            let own = stream.local_addr().ok().is_some_and(|l| stream.peer_addr().ok() == Some(l));
            if own {
                tracing::info!(port, "the reachability probe connected to itself: nothing listens there");
            }
            !own
        }
        _ => false,
    }
}

/// MCP semantic-convention attributes of one call. Never the arguments or the bearer.
fn record_call(span: &tracing::Span, ctx: &CallContext, method: &'static str, tool: Option<&str>) {
    span.record("otel.kind", "client");
    span.record("mcp.method.name", method);
    if let Some(name) = tool {
        span.record("otel.name", format!("{method} {name}"));
        span.record("gen_ai.tool.name", name);
    } else {
        span.record("otel.name", method);
    }
    if let Some(host) = ctx.url.host_str() {
        span.record("server.address", host);
    }
}

fn error_type(e: &McpError) -> &'static str {
    match e {
        McpError::Transport(_) => "tool.transport",
        McpError::Timeout => "tool.timeout",
        McpError::Refused(_) => "tool.refused",
        McpError::NoCredential => "tool.no_credential",
    }
}

/// How to reach the tool-server actors by server name: the typed door every caller uses. It
/// holds the actors' references itself (the root supervisor registers each one at start and
/// after a restart), never a process-global name.
#[derive(Clone)]
pub struct ToolServers {
    /// The servers in use: the configured ones at start, then whatever the registry says
    /// (the root supervisor changes it as it starts and stops actors, `actors::root`).
    servers: Arc<RwLock<HashMap<String, McpServer>>>,
    actors: Arc<RwLock<HashMap<String, ActorRef<ToolServerMsg>>>>,
    /// What the root supervisor records of each server across restarts (crashes, unavailable).
    standing: Arc<RwLock<HashMap<String, Standing>>>,
    timeout: Duration,
}

/// A server's actor's name in traces and logs (never a registry name).
pub fn tool_server_actor_name(server: &str) -> String {
    format!("tool-server:{server}")
}

impl ToolServers {
    /// `timeout` bounds each call (`TAMEBI_TOOL_TIMEOUT_SECS`).
    pub fn new(servers: &[McpServer], timeout: Duration) -> Self {
        ToolServers {
            servers: Arc::new(RwLock::new(servers.iter().map(|s| (s.name.clone(), s.clone())).collect())),
            actors: Arc::default(),
            standing: Arc::default(),
            timeout,
        }
    }

    fn standing_of(&self, server: &str) -> Standing {
        self.standing
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(server)
            .cloned()
            .unwrap_or_default()
    }

    /// The root supervisor records what it did about `server` (a crash counted, the server
    /// taken out of service, or tried again).
    pub(crate) fn record_standing(&self, server: &str, change: impl FnOnce(&mut Standing)) {
        let mut all = self.standing.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        change(all.entry(server.to_string()).or_default());
    }

    /// Whether `server` is out of service (its restart limit was reached).
    pub fn is_unavailable(&self, server: &str) -> bool {
        self.standing_of(server).unavailable.is_some()
    }

    /// Every server out of service now, by name (what `/healthz` reports).
    pub fn unavailable(&self) -> Vec<Unavailable> {
        let all = self.standing.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out: Vec<Unavailable> = all.values().filter_map(|s| s.unavailable.clone()).collect();
        out.sort_by(|a, b| a.server.cmp(&b.server));
        out
    }

    /// The servers this caller could reach but that are out of service now: the turn tells
    /// the person which tools are missing, rather than silently offering fewer.
    pub fn unavailable_for(&self, caller: &Caller) -> Vec<String> {
        self.names()
            .into_iter()
            .filter(|n| self.is_unavailable(n) && self.servers().get(n).is_some_and(|s| bearer_for(s, caller).is_ok()))
            .collect()
    }

    /// A call's outcome on `server`: one that reached it ends a trial after an outage.
    fn settle<T>(&self, server: &str, result: &Result<T, McpError>) {
        if matches!(result, Ok(_) | Err(McpError::Refused(_))) && self.standing_of(server).trial {
            self.record_standing(server, |s| s.trial = false);
        }
    }

    fn servers(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, McpServer>> {
        self.servers.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn names(&self) -> Vec<String> {
        let mut n: Vec<String> = self.servers().keys().cloned().collect();
        n.sort();
        n
    }

    pub fn contains(&self, name: &str) -> bool {
        self.servers().contains_key(name)
    }

    /// A server's configuration (its actor's).
    pub fn config(&self, name: &str) -> Option<McpServer> {
        self.servers().get(name).cloned()
    }

    /// Every server in use, by name.
    pub fn configs(&self) -> Vec<McpServer> {
        let mut all: Vec<McpServer> = self.servers().values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// A server joins (or changes): its actor is started next by the root supervisor.
    pub(crate) fn add(&self, server: McpServer) {
        self.servers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(server.name.clone(), server);
    }

    /// A server leaves: no new call reaches it; its actor is stopped by the root supervisor.
    pub(crate) fn remove(&self, server: &str) -> Option<ActorRef<ToolServerMsg>> {
        self.servers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(server);
        self.standing
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(server);
        self.actors
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(server)
    }

    /// The configured servers this caller can reach now: every `auth=none` server, and each
    /// `auth=nextcloud` server for which the app sent a token — except those out of service.
    pub fn reachable(&self, caller: &Caller) -> Vec<String> {
        self.names()
            .into_iter()
            .filter(|n| self.can_reach(n, caller) && !self.is_unavailable(n))
            .collect()
    }

    /// Whether `server` is configured and this caller holds what it needs to reach it.
    pub fn can_reach(&self, server: &str, caller: &Caller) -> bool {
        self.servers().get(server).is_some_and(|s| bearer_for(s, caller).is_ok())
    }

    /// The tools `server` offers this caller, as definitions the model and the relay may see.
    pub async fn list_tools(&self, server: &str, caller: &Caller) -> Result<Vec<ToolDef>, McpError> {
        let (actor, ctx) = self.door(server, caller)?;
        let result = self.ask(&actor, |reply| ToolServerMsg::ListTools { ctx, reply }).await;
        self.settle(server, &result);
        result
    }

    /// Calls one tool on `server` as `caller`.
    pub async fn call_tool(
        &self,
        server: &str,
        caller: &Caller,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CallToolResult, McpError> {
        let (actor, ctx) = self.door(server, caller)?;
        let name = name.to_string();
        let result = self
            .ask(&actor, |reply| ToolServerMsg::CallTool {
                ctx,
                name,
                arguments,
                reply,
            })
            .await;
        self.settle(server, &result);
        result
    }

    /// Reads one resource of `server` as `caller`.
    pub async fn read_resource(&self, server: &str, caller: &Caller, uri: &str) -> Result<ReadResourceResult, McpError> {
        let (actor, ctx) = self.door(server, caller)?;
        let uri = uri.to_string();
        let result = self.ask(&actor, |reply| ToolServerMsg::ReadResource { ctx, uri, reply }).await;
        self.settle(server, &result);
        result
    }

    /// The health of one configured server (None: no such server). An actor that does not
    /// answer reports the server unreachable.
    pub async fn health(&self, server: &str) -> Option<Health> {
        if !self.contains(server) {
            return None;
        }
        let standing = self.standing_of(server);
        let mut health = match (&standing.unavailable, self.actor(server)) {
            (Some(down), _) => Health::unanswered(server, &down.reason),
            (None, None) => Health::unanswered(server, "tool server actor not running"),
            (None, Some(actor)) => match actor.call(|reply| ToolServerMsg::Health { reply }, Some(HEALTH_TIMEOUT)).await {
                Ok(ractor::rpc::CallResult::Success(health)) => health,
                _ => Health::unanswered(server, "tool server actor did not answer"),
            },
        };
        health.consecutive_unreachable = standing.recent_crashes;
        health.circuit = match (&standing.unavailable, standing.trial) {
            (Some(_), _) => Circuit::Open,
            (None, true) => Circuit::HalfOpen,
            (None, false) => Circuit::Closed,
        };
        Some(health)
    }

    /// The health of every configured server, by name.
    pub async fn health_all(&self) -> Vec<Health> {
        let names = self.names();
        futures::future::join_all(names.iter().map(|n| self.health(n)))
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Records the running actor of `server` (the root supervisor, at start and on restart).
    pub(crate) fn register(&self, server: &str, actor: ActorRef<ToolServerMsg>) {
        self.actors
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(server.to_string(), actor);
    }

    fn actor(&self, server: &str) -> Option<ActorRef<ToolServerMsg>> {
        self.actors
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(server)
            .cloned()
    }

    /// The actor of `server` and the context of one call on it as `caller`, with exactly the
    /// credential the server is configured for: its own token for an `auth=nextcloud` server
    /// (without one there is nothing to do: workspace tools are never called without the
    /// user's own credential), nothing at all for an `auth=none` server.
    fn door(&self, server: &str, caller: &Caller) -> Result<(ActorRef<ToolServerMsg>, CallContext), McpError> {
        let cfg = self
            .config(server)
            .ok_or_else(|| McpError::Transport(format!("unknown server {server}")))?;
        let bearer = bearer_for(&cfg, caller)?;
        if let Some(down) = self.standing_of(server).unavailable {
            return Err(McpError::Transport(format!(
                "{server} is unavailable (its restart limit was reached) until {} ms",
                down.retry_at_unix_ms
            )));
        }
        let actor = self
            .actor(server)
            .ok_or_else(|| McpError::Transport("tool server actor not running".into()))?;
        let ctx = CallContext {
            url: cfg.url.clone(),
            bearer,
            request_id: caller.request_id.clone(),
            // Set by the tool-server actor from its `mcp.call` span.
            traceparent: None,
            // Runs on the caller's side: the span current here is the tool span that asks.
            parent: tracing::Span::current(),
            timeout: self.timeout,
        };
        Ok((actor, ctx))
    }

    /// Asks the actor and waits for its typed answer. The call itself is bounded by the tool
    /// timeout inside the actor's task; this bound only covers a lost reply.
    async fn ask<T: Send + 'static>(
        &self,
        actor: &ActorRef<ToolServerMsg>,
        message: impl FnOnce(RpcReplyPort<Result<T, McpError>>) -> ToolServerMsg,
    ) -> Result<T, McpError> {
        match actor.call(message, Some(self.timeout + REPLY_MARGIN)).await {
            Ok(ractor::rpc::CallResult::Success(result)) => result,
            Ok(ractor::rpc::CallResult::Timeout) => Err(McpError::Timeout),
            Ok(ractor::rpc::CallResult::SenderError) => Err(McpError::Transport("tool call dropped".into())),
            Err(_) => Err(McpError::Transport("tool server actor stopped".into())),
        }
    }
}

/// G1: the credential one server gets. Looked up by the server's own configured name only, so
/// a token sent for one audience never reaches another server.
fn bearer_for(server: &McpServer, caller: &Caller) -> Result<Option<crate::auth::NcBearer>, McpError> {
    match server.auth {
        ServerAuth::None => Ok(None),
        ServerAuth::Nextcloud => caller
            .credentials
            .for_server(&server.name)
            .cloned()
            .map(Some)
            .ok_or(McpError::NoCredential),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(unreachable: bool) -> Observation {
        Observation::Failed {
            error: "connection refused".into(),
            kind: "tool.transport",
            unreachable,
        }
    }

    #[test]
    fn only_a_server_that_is_gone_fails_the_actor() {
        let mut h = HealthState::default();
        // A caller's own failures (a refused token, a slow tool) never count.
        for _ in 0..10 {
            assert!(h.observe("s", failed(false)).is_ok());
        }
        assert!(!h.unreachable);
        assert!(h.last_error.is_some());
        let gone = h.observe("s", failed(true)).expect_err("an unreachable server fails the actor");
        assert!(gone.to_string().contains("s is unreachable"), "{gone}");
        assert!(h.unreachable);
        assert!(h.observe("s", Observation::Answered).is_ok());
        assert!(!h.unreachable);
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable_and_a_listening_one_is_not() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let open = listener.local_addr().unwrap().port();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        assert!(reachable(&format!("http://127.0.0.1:{open}/mcp").parse().unwrap()).await);
        assert!(!reachable(&format!("http://127.0.0.1:{closed}/mcp").parse().unwrap()).await);
    }
}
