//! `ConversationActor`: one per (uid, conversation). Owns the running turn's stream, the
//! replay buffer that lets a dropped client resume, and the approval waits.
//!
//! The turn itself runs in a task (so the mailbox stays free for resumes) and reports what
//! happens as [`TurnEvent`]s into a channel; the same task forwards them into this actor's
//! mailbox, tagged with the turn's number. This actor is the single writer of the conversation:
//! it folds parts into the assistant message, commits to chat.db at every boundary BEFORE
//! forwarding (a kill -9 never loses what a client saw finished), and fans frames out.
//! It never stores the caller's bearer: only the turn task holds it, for the turn.
//!
//! While it lives it holds the conversation's lease (store::lease: with PostgreSQL, one
//! instance at a time runs a conversation): it renews it, records the turn in flight in it,
//! stops itself when the lease is lost, and releases it when it stops. Everything it keeps in
//! memory is a cache of what is committed, so another instance can take over from the
//! database alone.
//!
//! Compaction state is this actor's too: the conversation's latest summary (loaded from
//! chat.db with the history, so an idle stop or a restart revives it) and the calibration of
//! the token estimate. A turn that summarises hands the summary here; this actor stores it.

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::Caller;
use crate::compaction::{Calibration, Summary};
use crate::error::Error;
use crate::services::Services;
use crate::store::chat::PendingApproval;
use crate::store::key::ConversationKey;
use crate::turn::{self, ApprovalDecision, Emitter, TurnEvent, TurnInput};
use crate::ui_stream::{StreamPart, UiMessage};

/// What a subscriber receives: frames, then `End` when the turn finished normally. A
/// channel that closes without `End` means the actor died.
#[derive(Debug, Clone)]
pub enum Frame {
    Part(Arc<str>),
    End,
}

/// A client's view of a running turn: what was already sent, then what follows.
pub struct Subscription {
    pub replay: Vec<Arc<str>>,
    pub live: mpsc::UnboundedReceiver<Frame>,
}

pub enum ConversationMsg {
    StartTurn {
        caller: Caller,
        input: TurnInput,
        /// The conversation's assistant (resolved and checked by `http::assistants`).
        assistant: Arc<crate::assistants::Assistant>,
        reply: RpcReplyPort<Result<Subscription, Error>>,
    },
    Subscribe {
        reply: RpcReplyPort<Option<Subscription>>,
    },
    /// What a running turn reported (see [`crate::turn::TurnEvent`]).
    Turn {
        turn: u64,
        event: TurnEvent,
    },
    Delete {
        reply: RpcReplyPort<Result<bool, Error>>,
    },
    /// Stop if no turn ran for the idle time (sent by the supervisor's sweep: one timer for
    /// every conversation rather than a timer task per actor).
    IdleCheck,
    /// Time to renew this instance's lease on the conversation (store::lease; only when
    /// leases expire: with SQLite nobody else could take it).
    RenewLease,
}

pub struct ConversationActor {
    pub services: Arc<Services>,
}

pub struct Args {
    pub key: ConversationKey,
    /// This actor's place in the trace (its start span); turns link to it.
    pub trace: crate::telemetry::tree::ActorTrace,
}

pub struct State {
    key: ConversationKey,
    /// The conversation as committed, loaded on first use. This actor is the only writer of
    /// its conversation, so the copy stays true while the actor lives.
    history: Option<Vec<UiMessage>>,
    /// The latest summary, loaded with the history.
    summary: Option<Summary>,
    calibration: Calibration,
    turns: u64,
    in_flight: Option<InFlight>,
    /// Since when no turn runs (the idle stop counts from here).
    idle_since: std::time::Instant,
    trace: crate::telemetry::tree::ActorTrace,
    /// When the lease was last renewed: without a renewal for the lease's time, another
    /// instance may own the conversation, so this actor stops.
    lease_renewed: std::time::Instant,
}

struct InFlight {
    turn: u64,
    assistant: UiMessage,
    /// The assistant message changed since it was last committed.
    dirty: bool,
    frames: Vec<Arc<str>>,
    subscribers: Vec<mpsc::UnboundedSender<Frame>>,
    cancel: CancellationToken,
}

/// A turn whose record is gone must not keep running: however the record goes (the turn
/// ended, the actor stopped, or the actor's state was dropped after a panic, when ractor does
/// not call `post_stop`), its token is cancelled, so an orphaned turn cannot run tools beside
/// the next owner's turn.
impl Drop for InFlight {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

impl InFlight {
    fn subscribe(&mut self) -> Subscription {
        let (tx, rx) = mpsc::unbounded_channel();
        self.subscribers.push(tx);
        Subscription {
            replay: self.frames.clone(),
            live: rx,
        }
    }
}

impl Actor for ConversationActor {
    type Msg = ConversationMsg;
    type State = State;
    type Arguments = Args;

    async fn pre_start(&self, myself: ActorRef<Self::Msg>, args: Args) -> Result<State, ActorProcessingErr> {
        tracing::debug!(actor = ?myself.get_name(), "conversation actor started");
        let state = State {
            key: args.key,
            history: None,
            summary: None,
            calibration: Calibration::default(),
            turns: 0,
            in_flight: None,
            idle_since: std::time::Instant::now(),
            trace: args.trace,
            lease_renewed: std::time::Instant::now(),
        };
        // The supervisor sends IdleCheck. It acquired the lease just before starting this
        // actor; renewing is needed only where a lease expires (each actor renews its own, so
        // the renewals stay spread over time).
        let own = &self.services.ownership;
        if own.leases.expires() {
            myself.send_interval(own.renew_every(), || ConversationMsg::RenewLease);
        }
        Ok(state)
    }

    async fn post_stop(&self, myself: ActorRef<Self::Msg>, state: &mut State) -> Result<(), ActorProcessingErr> {
        if let Some(f) = &state.in_flight {
            f.cancel.cancel();
        }
        // A turn still in flight keeps its lease row (marked), so whoever takes over next
        // marks that turn interrupted; otherwise the lease is given up at once.
        let own = &self.services.ownership;
        if let Err(e) = own.leases.release(&state.key, &own.owner).await {
            tracing::warn!(error = %e, "could not release a conversation lease; it expires on its own");
        }
        tracing::debug!(actor = ?myself.get_name(), "conversation actor stopped");
        Ok(())
    }

    async fn handle(&self, myself: ActorRef<Self::Msg>, msg: Self::Msg, state: &mut State) -> Result<(), ActorProcessingErr> {
        match msg {
            ConversationMsg::StartTurn {
                caller,
                input,
                assistant,
                reply,
            } => {
                let result = self.start_turn(&myself, state, caller, input, assistant).await;
                let lost = matches!(result, Err(Error::OwnedElsewhere { .. }));
                let _ = reply.send(result);
                if lost {
                    // The write fence refused this instance (store::lease): another one owns
                    // the conversation now, and this actor's cache is stale.
                    myself.stop(Some("lease lost".into()));
                }
            }
            ConversationMsg::Subscribe { reply } => {
                let _ = reply.send(state.in_flight.as_mut().map(InFlight::subscribe));
            }
            ConversationMsg::Turn { turn, event } => match event {
                TurnEvent::Part { part, approval } => {
                    let approvals = approval.map(|a| vec![*a]).unwrap_or_default();
                    self.emit(state, turn, part, approvals).await
                }
                TurnEvent::Summarised(summary) => self.store_summary(state, turn, summary).await,
                TurnEvent::Calibrated(calibration) => state.calibration = calibration,
                TurnEvent::Ended => {
                    self.end_turn(state, turn).await;
                    state.idle_since = std::time::Instant::now();
                }
            },
            ConversationMsg::Delete { reply } => {
                if let Some(f) = state.in_flight.take() {
                    f.cancel.cancel();
                    // Nothing to mark interrupted in a conversation that is gone.
                    let own = &self.services.ownership;
                    if let Err(e) = own.leases.turn_ended(&state.key, &own.owner).await {
                        tracing::warn!(error = %e, "could not clear the deleted conversation's turn record");
                    }
                }
                state.history = None;
                state.summary = None;
                let _ = reply.send(self.services.store.delete(&state.key).await);
                myself.stop(Some("deleted".into()));
            }
            ConversationMsg::RenewLease => {
                if !self.renew_lease(state).await {
                    tracing::warn!("conversation lease lost; stopping so that only its new owner runs turns");
                    myself.stop(Some("lease lost".into()));
                }
            }
            ConversationMsg::IdleCheck => {
                if state.in_flight.is_none() && state.idle_since.elapsed() >= self.services.config.idle_timeout {
                    myself.stop(Some("idle".into()));
                }
            }
        }
        Ok(())
    }
}

impl ConversationActor {
    async fn start_turn(
        &self,
        myself: &ActorRef<ConversationMsg>,
        state: &mut State,
        caller: Caller,
        input: TurnInput,
        loadout: Arc<crate::assistants::Assistant>,
    ) -> Result<Subscription, Error> {
        if state.in_flight.is_some() {
            return Err(Error::Conflict("a turn is already running".into()));
        }
        let store = &self.services.store;
        let mut history = match state.history.take() {
            Some(h) => h,
            None => {
                // Revival (first use, idle stop, restart): the history and its summary.
                state.summary = store.latest_summary(&state.key).await?;
                store.load(&state.key).await?.map(|c| c.messages).unwrap_or_default()
            }
        };
        let (assistant, decisions) = match input {
            TurnInput::User(message) => {
                // A new user message supersedes any approval still waiting (same transaction).
                if let Err(e) = store.save_user_message(&state.key, &message, &loadout.name).await {
                    state.history = Some(history);
                    return Err(e);
                }
                history.push(message);
                (
                    UiMessage::new(uuid::Uuid::new_v4().simple().to_string(), crate::ui_stream::Role::Assistant),
                    Vec::new(),
                )
            }
            TurnInput::Approvals(decisions) => {
                let ids: Vec<String> = decisions.iter().map(|d| d.approval_id.clone()).collect();
                let resolved = match resolve_approvals(store.as_ref(), &state.key, &history, decisions).await {
                    Ok(r) => r,
                    Err(e) => {
                        self.audit_refusal(&state.key, &caller, &ids, &e).await;
                        state.history = Some(history);
                        return Err(e);
                    }
                };
                // The reply continues the assistant message that asked for approval.
                let assistant = history.pop().ok_or(Error::Forbidden("no message awaits approval".into()))?;
                (assistant, resolved)
            }
        };
        state.turns += 1;
        let own = &self.services.ownership;
        let marker = crate::store::lease::InterruptedTurn {
            message_id: assistant.id.clone(),
            request_id: caller.request_id.clone(),
        };
        if let Err(e) = own.leases.turn_started(&state.key, &own.owner, &marker).await {
            tracing::warn!(error = %e, "could not record the turn in flight; a takeover could not mark it interrupted");
        }
        let cancel = self.services.shutdown.child_token();
        state.history = Some(history.clone());
        let mut in_flight = InFlight {
            turn: state.turns,
            assistant: assistant.clone(),
            dirty: false,
            frames: Vec::new(),
            subscribers: Vec::new(),
            cancel: cancel.clone(),
        };
        let subscription = in_flight.subscribe();
        state.in_flight = Some(in_flight);
        let (events, received) = mpsc::unbounded_channel();
        let emitter = Emitter::new(events);
        // A child of the HTTP request that asked (ractor carries the sender's span into this
        // handler), linked to this actor's start span.
        let span = crate::telemetry::turn_span(
            &caller.request_id,
            state.key.id(),
            state.key.uid(),
            &state.trace,
            self.services.config.trace_user_id,
        );
        let run = turn::Turn {
            services: self.services.clone(),
            caller,
            conversation: state.key.clone(),
            history,
            assistant,
            decisions,
            summary: state.summary.clone(),
            calibration: state.calibration,
            emitter,
            cancel,
            loadout,
        };
        let forward = forward_events(received, myself.clone(), state.turns);
        // One task runs the turn and feeds its events into this mailbox.
        self.services.tasks.spawn(async move {
            futures::join!(tracing::Instrument::instrument(turn::run(run), span), forward);
        });
        Ok(subscription)
    }

    /// G3: a refused approval is audited, never silently dropped.
    async fn audit_refusal(&self, key: &ConversationKey, caller: &Caller, ids: &[String], why: &Error) {
        use crate::store::audit::{ApprovalState, Category, Entry, Kind, Outcome};
        let entry = Entry::of(Kind::ApprovalRefused, Outcome::Refused, caller)
            .conversation(key)
            .category(Category::Action)
            .approval(ApprovalState::Refused)
            .detail(format!("approval ids {}: {why}", ids.join(",")))
            .build();
        self.services.audit.record(entry).await;
    }

    async fn emit(&self, state: &mut State, turn: u64, part: StreamPart, approvals: Vec<PendingApproval>) {
        let Some(f) = state.in_flight.as_mut().filter(|f| f.turn == turn) else {
            return;
        };
        #[cfg(feature = "fault-injection")]
        if self.services.config.fault_injection
            && let StreamPart::TextDelta { delta, .. } = &part
        {
            // Test builds only: lets an end-to-end test crash exactly this actor.
            assert!(!delta.contains("FAULT:panic-actor"), "fault injection: actor panic requested");
        }
        f.dirty |= part.changes_message();
        f.assistant.apply(&part);
        // Commit at a boundary when something changed (or approvals must be recorded).
        if part.is_boundary() && (f.dirty || !approvals.is_empty()) {
            f.dirty = false;
            let store = &self.services.store;
            let saved = if approvals.is_empty() {
                store.save_message(&state.key, &f.assistant, None).await
            } else {
                store.save_message_with_approvals(&state.key, &f.assistant, approvals).await
            };
            match saved {
                // The write fence (store::lease): the conversation was taken from this
                // instance (a delete or an erasure elsewhere). The turn stops here.
                Err(Error::OwnedElsewhere { .. }) => f.cancel.cancel(),
                Err(e) => tracing::error!(error = %e, "could not persist a finished part"),
                Ok(()) => {}
            }
        }
        let frame: Arc<str> = Arc::from(part.frame());
        f.frames.push(frame.clone());
        f.subscribers.retain(|s| s.send(Frame::Part(frame.clone())).is_ok());
    }

    /// Stores a turn's summary (once per range: chat.db keeps the first) and keeps it.
    async fn store_summary(&self, state: &mut State, turn: u64, summary: Summary) {
        if state.in_flight.as_ref().is_none_or(|f| f.turn != turn) {
            return;
        }
        match self.services.store.save_summary(&state.key, &summary).await {
            Ok(_) => {
                tracing::info!(covers = summary.covers_count, "conversation summarised");
                state.summary = Some(summary);
            }
            Err(e) => tracing::error!(error = %e, "could not store a summary; it will be made again later"),
        }
    }

    /// Renews the lease; false when it is lost (taken by another instance), or could not
    /// be renewed for so long that another instance may have taken it.
    async fn renew_lease(&self, state: &mut State) -> bool {
        let own = &self.services.ownership;
        // Bounded: a database that hangs must not hold this actor past the lease's time while
        // its turn keeps running (the pool bounds only getting a connection, not a query).
        let renewed = tokio::time::timeout(own.renew_every(), own.leases.renew(&state.key, &own.owner, own.ttl)).await;
        match renewed {
            Ok(Ok(true)) => {
                state.lease_renewed = std::time::Instant::now();
                true
            }
            Ok(Ok(false)) => false,
            failed => {
                match failed {
                    Ok(Err(e)) => tracing::warn!(error = %e, "could not renew a conversation lease"),
                    _ => tracing::warn!("renewing a conversation lease timed out"),
                }
                state.lease_renewed.elapsed() < own.ttl - own.renew_every()
            }
        }
    }

    async fn end_turn(&self, state: &mut State, turn: u64) {
        if state.in_flight.as_ref().is_none_or(|f| f.turn != turn) {
            return;
        }
        let Some(mut f) = state.in_flight.take() else { return };
        f.dirty |= f.assistant.close_open_text();
        if f.dirty
            && let Err(e) = self.services.store.save_message(&state.key, &f.assistant, None).await
        {
            tracing::error!(error = %e, "could not persist the final message");
        }
        let own = &self.services.ownership;
        if let Err(e) = own.leases.turn_ended(&state.key, &own.owner).await {
            tracing::warn!(error = %e, "could not record the end of a turn");
        }
        // Keep the committed view: the history (which may already end with this message,
        // when the turn continued it after an approval) now ends with the final version.
        if let Some(h) = state.history.as_mut() {
            if h.last().is_some_and(|m| m.id == f.assistant.id) {
                h.pop();
            }
            h.push(f.assistant.clone());
        }
        for s in &f.subscribers {
            let _ = s.send(Frame::End);
        }
    }
}

/// Moves a turn's events into the actor's mailbox until the turn ends or the actor is gone;
/// then it drops the receiver, so the turn's next event fails and the turn stops.
async fn forward_events(mut events: mpsc::UnboundedReceiver<TurnEvent>, actor: ActorRef<ConversationMsg>, turn: u64) {
    while let Some(event) = events.recv().await {
        if actor.send_message(ConversationMsg::Turn { turn, event }).is_err() {
            break;
        }
    }
}

/// G3: an approval is honoured only if its id is pending in this conversation for this
/// uid, once, and belongs to the message being continued. What runs is the recorded call.
async fn resolve_approvals(
    store: &dyn crate::store::chat::ChatStore,
    key: &ConversationKey,
    history: &[UiMessage],
    decisions: Vec<ApprovalDecision>,
) -> Result<Vec<(ApprovalDecision, PendingApproval)>, Error> {
    let pending = store.pending_approvals(key).await?;
    let last_id = history.last().map(|m| m.id.as_str()).unwrap_or("");
    // Validate everything before consuming anything: a request with one bad id consumes nothing.
    for (i, d) in decisions.iter().enumerate() {
        let known = pending.iter().any(|p| p.approval_id == d.approval_id && p.message_id == last_id);
        let repeated = decisions[..i].iter().any(|o| o.approval_id == d.approval_id);
        if !known || repeated {
            return Err(Error::Forbidden(format!("approval {} is not pending here", d.approval_id)));
        }
    }
    let mut resolved = Vec::new();
    for d in decisions {
        let p = store
            .take_approval(key, &d.approval_id)
            .await?
            .ok_or_else(|| Error::Forbidden("approval already used".into()))?;
        resolved.push((d, p));
    }
    Ok(resolved)
}
