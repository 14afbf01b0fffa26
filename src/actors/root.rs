//! `RootSupervisor`: starts the conversations supervisor and one `ToolServerActor` per
//! configured MCP server, and restarts a failed child within explicit limits.
//!
//! The servers registered in Nextcloud's admin page (issue #30) join and leave at run time:
//! [`RootMsg::Reconcile`] starts an actor for each server that joined (or changed) and stops
//! the actor of each that left, both visible in the trace like any child's start and stop. A
//! stopped server's child is forgotten before it stops, so its exit is never "restarted".
//!
//! Restarts are counted per child. A tool-server actor fails when its server is gone
//! (`actors::tool_server`); one that fails more than [`MAX_RESTARTS`] times within the restart
//! window (`TAMEBI_RESTART_WINDOW_SECS`) takes only its server out of service — never the
//! process, which goes on serving every conversation without that server's tools: the server
//! is marked unavailable (an error in the log, `restart-limit-reached` in the trace, named in
//! `/healthz`), and started again once the window has passed. The conversations supervisor
//! over its limit still stops the root and the process: without it nothing can be served.
//!
//! No actor is registered under a process-global name: the root puts each child's reference
//! where the application finds it — the conversations supervisor in the [`Directory`], each
//! tool-server actor in `services.tool_servers` — at start and again after every restart.
//! That is what lets two orchestrators share one process.

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use super::Directory;
use super::conversations::ConversationsSupervisor;
use super::tool_server::{ToolServerActor, tool_server_actor_name};
use crate::services::Services;
use crate::telemetry::tree::{ActorTrace, Supervision};

/// At most this many restarts of one child within the restart window
/// (`TAMEBI_RESTART_WINDOW_SECS`, default 60 s); beyond it a tool server is taken out of
/// service for one window, and the conversations supervisor stops the root (the process
/// exits with an error rather than limping on).
pub const MAX_RESTARTS: usize = 5;

/// The conversations supervisor's name in traces and logs (never a registry name).
pub const CONVERSATIONS_NAME: &str = "conversations";

pub struct RootSupervisor {
    pub services: Arc<Services>,
    /// Where the application finds the conversations supervisor.
    pub directory: Directory,
}

#[derive(Default)]
pub struct State {
    /// Recent restarts of each child, by the child's name.
    restarts: HashMap<String, VecDeque<Instant>>,
    /// This actor's place in the trace.
    trace: ActorTrace,
    /// Each running child: what it is, and its place in the trace.
    children: HashMap<ractor::ActorId, (Child, ActorTrace)>,
}

/// What a child of the root is, so a restart starts the same thing again.
#[derive(Clone)]
enum Child {
    Conversations,
    ToolServer(String),
}

impl Child {
    fn name(&self) -> String {
        match self {
            Child::Conversations => CONVERSATIONS_NAME.to_string(),
            Child::ToolServer(server) => tool_server_actor_name(server),
        }
    }
}

pub enum RootMsg {
    /// Makes the running tool-server actors those of `servers` (the registry's active set).
    Reconcile {
        servers: Vec<crate::config::McpServer>,
        reply: ractor::RpcReplyPort<()>,
    },
    /// A tool server's unavailable period is over: start its actor again.
    Retry(String),
}

impl Actor for RootSupervisor {
    type Msg = RootMsg;
    type State = State;
    type Arguments = ();

    async fn pre_start(&self, myself: ActorRef<Self::Msg>, _: ()) -> Result<State, ActorProcessingErr> {
        let starting = ActorTrace::start_root("root", "root");
        let mut state = State {
            trace: starting.trace.clone(),
            ..State::default()
        };
        self.start_conversations(&myself, &mut state).await?;
        for server in self.services.tool_servers.names() {
            self.start_tool_server(&myself, &mut state, &server).await?;
        }
        starting.spawned(&myself.get_id());
        self.directory.set_root(myself.clone());
        tracing::info!("root supervisor started");
        Ok(state)
    }

    async fn handle(&self, myself: ActorRef<Self::Msg>, msg: Self::Msg, state: &mut State) -> Result<(), ActorProcessingErr> {
        match msg {
            RootMsg::Reconcile { servers, reply } => {
                self.reconcile(&myself, state, servers).await;
                let _ = reply.send(());
            }
            RootMsg::Retry(server) => self.retry(&myself, state, &server).await,
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, why, exit) = match event {
            SupervisionEvent::ActorFailed(cell, e) => (cell, e.to_string(), Supervision::Crashed),
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                (cell, reason.unwrap_or_else(|| "terminated".into()), Supervision::Stopped)
            }
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => return Ok(()),
        };
        let Some((kind, child)) = state.children.remove(&cell.get_id()) else {
            return Ok(());
        };
        let name = kind.name();
        if self.services.shutdown.is_cancelled() {
            child.event(Supervision::Stopped, Some(&why));
            return Ok(());
        }
        child.event(exit, Some(&why));
        let now = Instant::now();
        let window = self.services.config.restart_window;
        let recent = state.restarts.entry(name.clone()).or_default();
        recent.retain(|t| now.duration_since(*t) < window);
        if recent.len() >= MAX_RESTARTS {
            state.restarts.remove(&name);
            return match kind {
                Child::Conversations => {
                    tracing::error!(child = %name, "restart limit reached; stopping the root supervisor");
                    state.trace.event(Supervision::RestartLimitReached, Some(&name));
                    myself.stop(Some("restart limit".into()));
                    Ok(())
                }
                Child::ToolServer(server) => {
                    self.take_out_of_service(&myself, &child, &server, &why);
                    Ok(())
                }
            };
        }
        recent.push_back(now);
        let crashes = recent.len() as u32;
        tracing::warn!(child = %name, reason = %why, "child exited; restarting it");
        child.event(Supervision::Restarted, None);
        match kind {
            Child::Conversations => self.start_conversations(&myself, state).await,
            Child::ToolServer(server) => {
                self.services.tool_servers.record_standing(&server, |s| s.recent_crashes = crashes);
                self.start_tool_server(&myself, state, &server).await
            }
        }
    }
}

impl RootSupervisor {
    /// A tool server whose actor reached the restart limit: out of service for one restart
    /// window (its tools withdrawn, calls refused at once), said in the log, the trace and
    /// `/healthz`; then [`RootMsg::Retry`] starts it again. Every other child keeps running.
    fn take_out_of_service(&self, myself: &ActorRef<RootMsg>, child: &ActorTrace, server: &str, why: &str) {
        let window = self.services.config.restart_window;
        let reason = crate::auth::redact::redact(why);
        let now_ms = chrono::Utc::now().timestamp_millis();
        tracing::error!(
            server = %server,
            reason = %reason,
            retry_in_secs = window.as_secs(),
            "tool server restart limit reached; its tools are unavailable until it is retried"
        );
        // On the server's own actor only (counted once in `tamebi.supervision.events`): the
        // root itself goes on.
        child.event(Supervision::RestartLimitReached, Some(&reason));
        let down = super::tool_server::Unavailable {
            server: server.to_string(),
            reason,
            since_unix_ms: now_ms,
            retry_at_unix_ms: now_ms + window.as_millis() as i64,
        };
        self.services.tool_servers.record_standing(server, |s| {
            s.recent_crashes = MAX_RESTARTS as u32 + 1;
            s.unavailable = Some(down);
        });
        let server = server.to_string();
        myself.send_after(window, move || RootMsg::Retry(server));
    }

    /// Starts the actor of a server that was out of service (if it is still configured and
    /// not running). Its first call that reaches the server ends the trial.
    async fn retry(&self, myself: &ActorRef<RootMsg>, state: &mut State, server: &str) {
        let tool_servers = &self.services.tool_servers;
        if !tool_servers.contains(server) || !tool_servers.is_unavailable(server) {
            return;
        }
        tracing::warn!(server = %server, "retrying a tool server after its unavailable period");
        // The new actor is registered first: a call let through before would find the
        // stopped one.
        if let Err(e) = self.start_tool_server(myself, state, server).await {
            tracing::error!(server = %server, error = %e, "could not start the actor of a retried tool server");
            let server = server.to_string();
            myself.send_after(self.services.config.restart_window, move || RootMsg::Retry(server));
            return;
        }
        tool_servers.record_standing(server, |s| {
            s.unavailable = None;
            s.recent_crashes = 0;
            s.trial = true;
        });
    }

    /// Stops the actors of servers that left or changed, then starts those that joined or
    /// changed. A server whose actor fails to start is logged and left out (the next
    /// reconciliation tries again); it never stops the root.
    async fn reconcile(&self, myself: &ActorRef<RootMsg>, state: &mut State, desired: Vec<crate::config::McpServer>) {
        let tool_servers = &self.services.tool_servers;
        let running = tool_servers.configs();
        for old in &running {
            if desired.contains(old) {
                continue;
            }
            let child = state
                .children
                .iter()
                .find(|(_, (kind, _))| matches!(kind, Child::ToolServer(n) if *n == old.name))
                .map(|(id, _)| *id);
            if let Some((_, trace)) = child.and_then(|id| state.children.remove(&id)) {
                trace.event(Supervision::Stopped, Some("removed from the registry"));
            }
            if let Some(actor) = tool_servers.remove(&old.name) {
                actor.stop(Some("removed from the registry".into()));
            }
            tracing::info!(server = %old.name, "tool server removed");
        }
        for new in desired {
            if running.contains(&new) {
                continue;
            }
            let name = new.name.clone();
            tool_servers.add(new);
            match self.start_tool_server(myself, state, &name).await {
                Ok(()) => tracing::info!(server = %name, "tool server added"),
                Err(e) => {
                    tool_servers.remove(&name);
                    tracing::error!(server = %name, error = %e, "could not start the actor of an added tool server");
                }
            }
        }
    }

    async fn start_conversations(&self, myself: &ActorRef<RootMsg>, state: &mut State) -> Result<(), ActorProcessingErr> {
        let starting = state.trace.start_child("conversations", CONVERSATIONS_NAME);
        let running = super::conversations::Running::default();
        let sup = ConversationsSupervisor {
            services: self.services.clone(),
            trace: starting.trace.clone(),
            running: running.clone(),
        };
        let spawned = Actor::spawn_linked(None, sup, (), myself.get_cell()).await.map(|(a, _)| a);
        if let Ok(actor) = &spawned {
            self.directory.set_conversations(actor.clone(), running);
        }
        self.started(state, Child::Conversations, starting, spawned.map(|a| a.get_id()))
    }

    async fn start_tool_server(&self, myself: &ActorRef<RootMsg>, state: &mut State, server: &str) -> Result<(), ActorProcessingErr> {
        let name = tool_server_actor_name(server);
        let starting = state.trace.start_child("tool-server", &name);
        let config = self
            .services
            .tool_servers
            .config(server)
            .ok_or_else(|| format!("no configured server {server}"))?;
        let actor = ToolServerActor {
            server: config,
            tasks: self.services.tasks.clone(),
        };
        let spawned = Actor::spawn_linked(None, actor, (), myself.get_cell()).await.map(|(a, _)| a);
        if let Ok(actor) = &spawned {
            self.services.tool_servers.register(server, actor.clone());
        }
        self.started(state, Child::ToolServer(server.to_string()), starting, spawned.map(|a| a.get_id()))
    }

    /// Records a child's start (or its failure) in the trace and keeps its place.
    fn started(
        &self,
        state: &mut State,
        child: Child,
        starting: crate::telemetry::tree::Starting,
        spawned: Result<ractor::ActorId, ractor::SpawnErr>,
    ) -> Result<(), ActorProcessingErr> {
        match spawned {
            Ok(id) => {
                state.children.insert(id, (child, starting.spawned(&id)));
                Ok(())
            }
            Err(e) => {
                starting.failed(&e.to_string());
                Err(e.into())
            }
        }
    }
}
