//! `RootSupervisor`: starts the conversations supervisor and one `ToolServerActor` per
//! configured MCP server, and restarts a failed child within explicit limits.

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Services;
use super::conversations::ConversationsSupervisor;
use super::tool_server::ToolServerActor;

/// At most this many restarts of one child within [`RESTART_WINDOW`]; beyond it the root
/// stops, and the process exits with an error rather than limping on.
pub const MAX_RESTARTS: usize = 5;
pub const RESTART_WINDOW: Duration = Duration::from_secs(60);

pub const CONVERSATIONS_NAME: &str = "conversations";

pub struct RootSupervisor {
    pub services: Arc<Services>,
    pub http: reqwest::Client,
}

#[derive(Default)]
pub struct State {
    restarts: VecDeque<Instant>,
}

pub enum RootMsg {}

impl Actor for RootSupervisor {
    type Msg = RootMsg;
    type State = State;
    type Arguments = ();

    async fn pre_start(&self, myself: ActorRef<Self::Msg>, _: ()) -> Result<State, ActorProcessingErr> {
        self.start_conversations(&myself).await?;
        for server in self.services.tool_servers.names() {
            self.start_tool_server(&myself, &server).await?;
        }
        tracing::info!("root supervisor started");
        Ok(State::default())
    }

    async fn handle(&self, _myself: ActorRef<Self::Msg>, msg: Self::Msg, _state: &mut State) -> Result<(), ActorProcessingErr> {
        match msg {}
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, why) = match event {
            SupervisionEvent::ActorFailed(cell, e) => (cell, e.to_string()),
            SupervisionEvent::ActorTerminated(cell, _, reason) => (cell, reason.unwrap_or_else(|| "terminated".into())),
            SupervisionEvent::ActorStarted(_) | SupervisionEvent::ProcessGroupChanged(_) => return Ok(()),
        };
        let name = cell.get_name().unwrap_or_default();
        if self.services.shutdown.is_cancelled() {
            return Ok(());
        }
        let now = Instant::now();
        state.restarts.retain(|t| now.duration_since(*t) < RESTART_WINDOW);
        if state.restarts.len() >= MAX_RESTARTS {
            tracing::error!(child = %name, "restart limit reached; stopping the root supervisor");
            myself.stop(Some("restart limit".into()));
            return Ok(());
        }
        state.restarts.push_back(now);
        tracing::warn!(child = %name, reason = %why, "child exited; restarting it");
        if name == CONVERSATIONS_NAME {
            self.start_conversations(&myself).await?;
        } else if let Some(server) = name.strip_prefix("tool-server:") {
            self.start_tool_server(&myself, server).await?;
        }
        Ok(())
    }
}

impl RootSupervisor {
    async fn start_conversations(&self, myself: &ActorRef<RootMsg>) -> Result<(), ActorProcessingErr> {
        let sup = ConversationsSupervisor {
            services: self.services.clone(),
        };
        Actor::spawn_linked(Some(CONVERSATIONS_NAME.into()), sup, (), myself.get_cell()).await?;
        Ok(())
    }

    async fn start_tool_server(&self, myself: &ActorRef<RootMsg>, server: &str) -> Result<(), ActorProcessingErr> {
        let actor = ToolServerActor {
            http: self.http.clone(),
            tasks: self.services.tasks.clone(),
        };
        Actor::spawn_linked(Some(super::tool_server_actor_name(server)), actor, (), myself.get_cell()).await?;
        Ok(())
    }
}
