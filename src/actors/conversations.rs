//! `ConversationsSupervisor`: finds or spawns the actor of a (uid, conversation).
//!
//! Children are not restarted when they exit: an idle one stopped on purpose, a crashed one
//! is revived from chat.db on its next use — that is this supervisor's restart policy, and
//! it is why a crash never touches another conversation.
//!
//! It also keeps the idle time for its children: one sweep asks every actor whether it has
//! been idle long enough to stop, instead of a timer task per conversation (with thousands of
//! open streams that is memory per stream, issue #16).
//!
//! The running actors are kept in [`Running`], which the HTTP handlers read directly: a turn
//! of a running conversation reaches its actor without a round trip through this supervisor
//! (issue #16). Only this supervisor writes it (inserted once spawned, i.e. once the lease is
//! held; removed when the actor exits), so a miss, or a reference to an actor that has just
//! stopped, still comes here, where the lease is acquired.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::conversation::{Args, ConversationActor, ConversationMsg};
use crate::error::Error;
use crate::services::Services;
use crate::store::key::{ConversationKey, UserId};
use crate::store::lease::Acquired;
use crate::telemetry::tree::{ActorTrace, Supervision};

pub enum ConversationsMsg {
    /// The actor for this conversation, started if needed.
    Get {
        key: ConversationKey,
        reply: RpcReplyPort<Result<ActorRef<ConversationMsg>, Error>>,
    },
    /// The actor if one is running (resume does not start one; a delete does, through `Get`).
    Find {
        key: ConversationKey,
        reply: RpcReplyPort<Option<ActorRef<ConversationMsg>>>,
    },
    /// How many conversation actors are alive (for health and tests).
    Count { reply: RpcReplyPort<usize> },
    /// Every running actor of one user (an erasure stops them before erasing their data).
    OfUser {
        uid: UserId,
        reply: RpcReplyPort<Vec<ActorRef<ConversationMsg>>>,
    },
    /// The idle sweep's tick: every child checks its own idle time.
    SweepIdle,
}

/// How often the idle sweep runs: a quarter of the idle time, so an idle actor stops at most
/// a quarter late, within bounds that keep the sweep cheap and a test's short idle time short.
fn sweep_every(idle: Duration) -> Duration {
    (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30))
}

pub struct ConversationsSupervisor {
    pub services: Arc<Services>,
    /// This supervisor's place in the trace (children's start spans go under it).
    pub trace: ActorTrace,
    /// Its running children, by conversation (it alone writes them; handlers read them).
    pub running: Running,
}

/// The running conversation actors of one conversations supervisor, by conversation. Read by
/// anyone, written only by that supervisor.
#[derive(Clone, Default)]
pub struct Running(Arc<RwLock<HashMap<ConversationKey, ActorRef<ConversationMsg>>>>);

impl Running {
    /// The actor of this conversation, if it runs (it may have stopped an instant ago: a send
    /// to it then fails, and the caller asks the supervisor).
    pub fn get(&self, key: &ConversationKey) -> Option<ActorRef<ConversationMsg>> {
        self.read().get(key).cloned()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<ConversationKey, ActorRef<ConversationMsg>>> {
        self.0.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<ConversationKey, ActorRef<ConversationMsg>>> {
        self.0.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[derive(Default)]
pub struct State {
    key_of: HashMap<ractor::ActorId, ConversationKey>,
    /// Each child's place in the trace; empty when spans are not exported.
    traces: HashMap<ractor::ActorId, ActorTrace>,
    crashes: u64,
}

impl Actor for ConversationsSupervisor {
    type Msg = ConversationsMsg;
    type State = State;
    type Arguments = ();

    async fn pre_start(&self, myself: ActorRef<Self::Msg>, _: ()) -> Result<State, ActorProcessingErr> {
        myself.send_interval(sweep_every(self.services.config.idle_timeout), || ConversationsMsg::SweepIdle);
        tracing::info!("conversations supervisor started");
        Ok(State::default())
    }

    async fn handle(&self, myself: ActorRef<Self::Msg>, msg: Self::Msg, state: &mut State) -> Result<(), ActorProcessingErr> {
        match msg {
            ConversationsMsg::Get { key, reply } => {
                let running = self.running.get(&key);
                let result = match running {
                    Some(actor) => Ok(actor),
                    None => self.spawn(&myself, state, key).await,
                };
                let _ = reply.send(result);
            }
            ConversationsMsg::Find { key, reply } => {
                let _ = reply.send(self.running.get(&key));
            }
            ConversationsMsg::Count { reply } => {
                let _ = reply.send(self.running.read().len());
            }
            ConversationsMsg::OfUser { uid, reply } => {
                let _ = reply.send(
                    self.running
                        .read()
                        .iter()
                        .filter(|(k, _)| *k.user() == uid)
                        .map(|(_, a)| a.clone())
                        .collect(),
                );
            }
            ConversationsMsg::SweepIdle => {
                for actor in self.running.read().values() {
                    let _ = actor.send_message(ConversationMsg::IdleCheck);
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut State,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorStarted(_) => {}
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                if let Some(key) = state.key_of.remove(&cell.get_id()) {
                    self.running.write().remove(&key);
                }
                if let Some(trace) = state.traces.remove(&cell.get_id()) {
                    trace.event(Supervision::from_stop_reason(reason.as_deref()), reason.as_deref());
                }
                tracing::debug!(actor = ?cell.get_name(), reason = ?reason, "conversation actor exited");
            }
            SupervisionEvent::ActorFailed(cell, error) => {
                state.crashes += 1;
                if let Some(key) = state.key_of.remove(&cell.get_id()) {
                    self.running.write().remove(&key);
                }
                if let Some(trace) = state.traces.remove(&cell.get_id()) {
                    trace.event(Supervision::Crashed, Some(&error.to_string()));
                }
                // Not restarted here: the next request for it revives it from chat.db.
                tracing::error!(actor = ?cell.get_name(), error = %error, crashes = telemetry_otlp::int(state.crashes), "conversation actor crashed; it will be revived on next use");
            }
            SupervisionEvent::ProcessGroupChanged(_) => {}
        }
        Ok(())
    }
}

impl ConversationsSupervisor {
    /// One owner per conversation (store::lease): refused while another instance holds
    /// it; a turn its previous owner left in flight is marked interrupted before any new one.
    async fn acquire_lease(&self, key: &ConversationKey) -> Result<(), Error> {
        let own = &self.services.ownership;
        match own.leases.acquire(key, &own.owner, own.ttl).await? {
            Acquired::HeldElsewhere { retry_after } => Err(Error::OwnedElsewhere {
                retry_after_secs: retry_after.as_secs().max(1),
            }),
            Acquired::Granted { interrupted } => {
                if let Some(turn) = interrupted {
                    crate::store::lease::mark_interrupted(self.services.store.as_ref(), key, &turn).await?;
                    // Marked (idempotently): only now may the record of the turn go.
                    own.leases.turn_ended(key, &own.owner).await?;
                }
                Ok(())
            }
        }
    }

    async fn spawn(
        &self,
        myself: &ActorRef<ConversationsMsg>,
        state: &mut State,
        key: ConversationKey,
    ) -> Result<ActorRef<ConversationMsg>, Error> {
        self.acquire_lease(&key).await?;
        let actor = ConversationActor {
            services: self.services.clone(),
        };
        let starting = self.trace.start_child("conversation", "conversation");
        let args = Args {
            key: key.clone(),
            trace: starting.trace.clone(),
        };
        // No actor is registered under a global name (None): two users' conversation ids may
        // be equal, the name must not leak ids into a global registry, and two orchestrators
        // may share a process.
        let (actor_ref, _handle) = match Actor::spawn_linked(None, actor, args, myself.get_cell()).await {
            Ok(spawned) => spawned,
            Err(e) => {
                starting.failed(&e.to_string());
                let own = &self.services.ownership;
                if let Err(e) = own.leases.release(&key, &own.owner).await {
                    tracing::warn!(error = %e, "could not release the lease of an actor that did not start");
                }
                return Err(Error::Internal(e.to_string()));
            }
        };
        let trace = starting.spawned(&actor_ref.get_id());
        if crate::telemetry::exporting() {
            state.traces.insert(actor_ref.get_id(), trace);
        }
        tracing::debug!(actor_id = %actor_ref.get_id(), "conversation actor spawned");
        state.key_of.insert(actor_ref.get_id(), key.clone());
        self.running.write().insert(key, actor_ref.clone());
        Ok(actor_ref)
    }
}
