//! `ConversationActor`: one per (uid, conversation). Owns the running turn's stream, the
//! replay buffer that lets a dropped client resume, and the approval waits.
//!
//! The turn itself runs in a task (so the mailbox stays free for resumes). It publishes its
//! frames into the turn's [`StreamLog`], which every client reads, and reports what must be
//! committed as [`TurnEvent`]s straight into this actor's mailbox, tagged with the turn's
//! number ([`ToActor`]). This actor is the single writer of the conversation:
//! a boundary frame after a change stays held in the log until this actor has committed the
//! message it finishes, and only then is released (a kill -9 never loses what a client saw
//! finished). So the actor handles a turn's commits and its end, not every part; a turn that
//! ends with nothing left to commit closes its log without waiting for this actor (see
//! [`ToActor`]).
//! It never stores the caller's bearer: only the turn task holds it, for the turn.
//!
//! Durability of a new user message: its commit runs while the turn already starts (reads
//! the memory facts, sends the model request), but the turn reads the model's answer only
//! once it is committed, and the log shows nothing before: so no client sees the turn
//! progress, no tool runs and nothing of the reply is committed before the user message is
//! durable. If that commit fails, the turn is cancelled and the request fails as before.
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
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::auth::Caller;
use crate::compaction::{Calibration, Summary};
use crate::error::Error;
#[cfg(feature = "fault-injection")]
use crate::fault::{FAULT_PANIC_ACTOR, FAULT_STOP_BEFORE_TURN};
use crate::services::Services;
use crate::store::chat::{PendingApproval, Save};
use crate::store::key::ConversationKey;
use crate::stream_log::{self, Hold, StreamLog};
use crate::turn::{self, ApprovalDecision, Emitter, TurnEvent, TurnInput};
use crate::ui_stream::UiMessage;

/// A client's view of a running turn: its stream log, read from the first frame (what was
/// already sent, then what follows, each frame once). A log that ends `Broken` means the
/// actor died.
pub struct Subscription {
    pub log: Arc<StreamLog>,
}

pub enum ConversationMsg {
    /// Its fields boxed: every future that holds a message (ours and ractor's, in the
    /// processing loop every conversation keeps for its life) is sized by the largest variant
    /// (issue #16).
    StartTurn {
        start: Box<TurnStart>,
        reply: RpcReplyPort<Result<Subscription, Error>>,
    },
    Subscribe {
        reply: RpcReplyPort<Option<Subscription>>,
    },
    /// Its person pressed Stop: the running turn (if any) stops before its next model read;
    /// the answer is its log, to wait for its end (`None`: no turn runs).
    Stop {
        reply: RpcReplyPort<Option<Arc<StreamLog>>>,
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

/// What starts a turn, short of the reply port.
#[derive(Clone)]
pub struct TurnStart {
    pub caller: Caller,
    pub input: TurnInput,
    /// The conversation's assistant (resolved and checked by `http::assistants`).
    pub assistant: Arc<crate::assistants::Assistant>,
    /// The app whose Smart Picker sent the turn (issue #29): recorded when its user message
    /// creates the conversation.
    pub origin: Option<crate::origin::Origin>,
    /// The asking request's span: the turn's span is its child. Passed here because ractor
    /// runs without `message_span_propogation` (a span in every mailbox slot, issue #16).
    pub parent: tracing::Span,
    /// Held by the turn until just before its end shows (B6: the user's admission and the
    /// permit); dropped at once when no turn starts.
    pub held: crate::actors::running_turns::Held,
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
    /// its conversation, so the copy stays true while the actor lives. A running turn has
    /// it (moved, not copied) and hands it back when it ends.
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
    /// Where this conversation's binding is cached while this actor lives (see Drop).
    bindings: crate::assistants::Bindings,
}

/// However the actor goes (a stop, a panic), its conversation's binding leaves the cache:
/// the cache holds only conversations running here.
impl Drop for State {
    fn drop(&mut self) {
        self.bindings.remove(&self.key);
    }
}

struct InFlight {
    turn: u64,
    log: Arc<StreamLog>,
    cancel: CancellationToken,
    /// The turn's record (store::lease) went with its final message's commit.
    record_ended: bool,
}

/// How a turn's stream ends when a commit of it failed: `Moved` when the write fence refused
/// this instance (another one owns the conversation now), `Broken` otherwise.
fn moved_or_broken(e: &Error) -> stream_log::End {
    match e {
        Error::OwnedElsewhere { .. } => stream_log::End::Moved,
        _ => stream_log::End::Broken,
    }
}

/// A turn whose record is gone must not keep running: however the record goes (the turn
/// ended, the actor stopped, or the actor's state was dropped after a panic, when ractor does
/// not call `post_stop`), its token is cancelled, so an orphaned turn cannot run tools beside
/// the next owner's turn, and its log ends `Broken` unless it already finished (its readers
/// then send an error part; what was held uncommitted is never shown).
impl Drop for InFlight {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.log.finish(stream_log::End::Broken);
    }
}

impl InFlight {
    fn subscribe(&self) -> Subscription {
        Subscription { log: self.log.clone() }
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
            bindings: self.services.bindings.clone(),
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

    /// ractor's default (a child's end stops this actor; a conversation has no children),
    /// without its `async` state: ractor's message loop, allocated once per conversation for
    /// the actor's life, is sized by this future too, which held the 80-byte event twice over
    /// (issue #16). A copy of the ractor 0.16.5 `Actor::handle_supervisor_evt` default: when
    /// ractor is upgraded, compare it with that version's default and follow any change.
    fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: ractor::SupervisionEvent,
        _: &mut State,
    ) -> impl std::future::Future<Output = Result<(), ActorProcessingErr>> + Send {
        if matches!(
            event,
            ractor::SupervisionEvent::ActorTerminated(..) | ractor::SupervisionEvent::ActorFailed(..)
        ) {
            myself.stop(None);
        }
        std::future::ready(Ok(()))
    }

    /// Every message is handled boxed (one allocation per message): ractor keeps each actor's
    /// message loop in one allocation for the actor's life (one per open conversation), sized
    /// by this future, which its loop holds twice over (issue #16).
    fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        msg: Self::Msg,
        state: &mut State,
    ) -> impl std::future::Future<Output = Result<(), ActorProcessingErr>> + Send {
        Box::pin(self.dispatch(myself, msg, state))
    }
}

impl ConversationActor {
    async fn dispatch(&self, myself: ActorRef<ConversationMsg>, msg: ConversationMsg, state: &mut State) -> Result<(), ActorProcessingErr> {
        match msg {
            ConversationMsg::StartTurn { start, reply } => {
                let TurnStart {
                    caller,
                    input,
                    assistant,
                    origin,
                    parent,
                    held,
                } = *start;
                #[cfg(feature = "fault-injection")]
                if self.services.config.fault_injection
                    && state.turns > 0
                    && matches!(&input, TurnInput::User(m) if m.text().contains(FAULT_STOP_BEFORE_TURN))
                {
                    drop(reply);
                    myself.stop(Some("fault injection: stopped before the turn".into()));
                    return Ok(());
                }
                // A request that went away while this waited in the mailbox (its client left,
                // or the call timed out behind a stuck actor) starts nothing: it got no answer,
                // and its admission must not stay parked here. (One that goes away while the
                // turn is being started still gets its turn, as any client that leaves does.)
                if reply.is_closed() {
                    return Ok(());
                }
                // Boxed: starting a turn is by far the largest handler, and every message's
                // handler is allocated at its size (see `handle`); it runs once per turn.
                let start = self.start_turn(&myself, state, caller, input, (assistant, origin), held);
                let result = Box::pin(tracing::Instrument::instrument(start, parent)).await;
                let lost = matches!(result, Err(Error::OwnedElsewhere { .. }));
                let _ = reply.send(result);
                if lost {
                    // The write fence refused this instance (store::lease): another one owns
                    // the conversation now, and this actor's cache is stale.
                    myself.stop(Some("lease lost".into()));
                }
            }
            ConversationMsg::Subscribe { reply } => {
                let _ = reply.send(state.in_flight.as_ref().map(InFlight::subscribe));
            }
            ConversationMsg::Stop { reply } => {
                // Not `cancel`: the turn ends as an orphaned one does (`turn::model_step`),
                // its partial answer committed with a `data-interrupted` part. A tool call
                // under way finishes first; a turn waiting for an approval runs nothing.
                let running = state.in_flight.as_ref().map(|f| {
                    f.log.ask_stop();
                    f.log.clone()
                });
                let _ = reply.send(running);
            }
            ConversationMsg::Turn { turn, event } => match event {
                TurnEvent::Checkpoint {
                    message,
                    approval,
                    hold,
                    ends_turn,
                } => {
                    let save = Save {
                        approvals: approval.map(|a| vec![*a]).unwrap_or_default(),
                        ends_turn,
                        ..Save::default()
                    };
                    self.checkpoint(state, turn, message, save, hold).await
                }
                TurnEvent::Summarised { summary, hold } => self.store_summary(state, turn, summary, hold).await,
                TurnEvent::Calibrated(calibration) => state.calibration = calibration,
                TurnEvent::Ended { history, message, changed } => {
                    self.end_turn(state, turn, history, message, changed).await;
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
                // A conversation created again under this id may pick another assistant.
                state.bindings.remove(&state.key);
                state.history = None;
                state.summary = None;
                let _ = reply.send(self.services.store.delete(&state.key).await);
                myself.stop(Some("deleted".into()));
            }
            ConversationMsg::RenewLease => {
                if !self.renew_lease(state).await {
                    tracing::warn!("conversation lease lost; stopping so that only its new owner runs turns");
                    // A turn under way tells its readers why it stops (dropping it would
                    // only say `Broken`).
                    if let Some(f) = &state.in_flight {
                        f.log.finish(stream_log::End::Moved);
                    }
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

    async fn start_turn(
        &self,
        myself: &ActorRef<ConversationMsg>,
        state: &mut State,
        caller: Caller,
        input: TurnInput,
        // The assistant, and the origin a user message creating the conversation records.
        (loadout, origin): (Arc<crate::assistants::Assistant>, Option<crate::origin::Origin>),
        held: crate::actors::running_turns::Held,
    ) -> Result<Subscription, Error> {
        if state.in_flight.is_some() {
            return Err(Error::Conflict("a turn is already running".into()));
        }
        // Where leases expire (several instances), another instance may have taken or erased
        // this conversation since the last renewal; the write fence would refuse the commit,
        // but only after the cached history went to the model. So the lease is confirmed
        // before anything cached is used: an erased conversation never leaves this process.
        if self.services.ownership.leases.expires() && state.history.is_some() && !self.confirm_lease(state).await {
            state.history = None;
            state.summary = None;
            state.bindings.remove(&state.key);
            return Err(Error::OwnedElsewhere {
                retry_after_secs: self.services.ownership.ttl.as_secs().max(1),
            });
        }
        let store = &self.services.store;
        let mut history = match state.history.take() {
            Some(h) => h,
            // First use, idle stop, restart: chat.db decides, read now that this actor holds
            // the conversation. Never a "new conversation" hint resolved before that: with
            // several instances another one may have written messages in between, and a turn
            // must never run without them. A conversation chat.db does not have has no
            // summary either (one read, not two).
            None => match store.load(&state.key).await? {
                Some(conversation) => {
                    state.summary = store.latest_summary(&state.key).await?;
                    conversation.messages
                }
                None => {
                    state.summary = None;
                    Vec::new()
                }
            },
        };
        let (assistant, decisions, user_message) = match input {
            TurnInput::User(message) => {
                if let Err(e) = push_user_message(&mut history, &message) {
                    state.history = Some(history);
                    return Err(e);
                }
                (
                    UiMessage::new(uuid::Uuid::new_v4().simple().to_string(), crate::ui_stream::Role::Assistant),
                    Vec::new(),
                    Some(message),
                )
            }
            TurnInput::Approvals(decisions) => {
                let ids: Vec<String> = decisions.iter().map(|d| d.approval_id.clone()).collect();
                let resolved = match resolve_approvals(store.as_ref(), &state.key, &history, decisions).await {
                    Ok(r) => r,
                    Err(e) => {
                        // Losing the conversation to another instance refuses no approval:
                        // they stay pending for its new owner.
                        if !matches!(e, Error::OwnedElsewhere { .. }) {
                            self.audit_refusal(&state.key, &caller, &ids, &e).await;
                        }
                        state.history = Some(history);
                        return Err(e);
                    }
                };
                // The reply continues the assistant message that asked for approval.
                let assistant = history.pop().ok_or(Error::Forbidden("no message awaits approval".into()))?;
                (assistant, resolved, None)
            }
        };
        state.turns += 1;
        let own = &self.services.ownership;
        let marker = crate::store::lease::InterruptedTurn {
            message_id: assistant.id.clone(),
            request_id: caller.request_id.clone(),
        };
        // The marker is written in the user message's transaction when there is one: one
        // commit before the stream shows anything. A continuation writes it before the turn
        // starts.
        if user_message.is_none() {
            marker_written(own.leases.turn_started(&state.key, &own.owner, &marker).await);
        }
        let cancel = self.services.shutdown.child_token();
        let log = StreamLog::new();
        // A new user message is committed while the turn starts (see the module doc): until
        // then the log shows nothing and the turn does not read the model's answer.
        let pending_user = user_message.map(|m| (m, log.hold(), oneshot::channel::<()>()));
        let events = ToActor {
            actor: myself.clone(),
            turn: state.turns,
            log: log.clone(),
        };
        let emitter = Emitter::new(Box::new(events), log.clone());
        // A child of the HTTP request that asked (its span is this handler's, see `StartTurn`),
        // linked to this actor's start span.
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
            cancel: cancel.clone(),
            durable: None,
            loadout: loadout.clone(),
            admission: Some(held),
        };
        let (run, pending_user) = match pending_user {
            Some((message, hold, (committed, durable))) => (
                turn::Turn {
                    durable: Some(durable),
                    ..run
                },
                Some((message, hold, committed)),
            ),
            None => (run, None),
        };
        // Spawned without an async block, which would keep a slot for the moved `Turn` while
        // the stream is open. Counted until the task has ended, cancelled or not: an erasure
        // waits for that. (The turn's admission goes with the turn, `Turn::admission`.)
        let running = self.services.running_turns.started(state.key.uid());
        let turn = tracing::Instrument::instrument(turn::run(run), span);
        self.services.tasks.spawn(futures::FutureExt::map(turn, move |_| drop(running)));
        let in_flight = InFlight {
            turn: state.turns,
            log,
            cancel,
            record_ended: false,
        };
        if let Some((message, hold, committed)) = pending_user {
            // A new user message supersedes any approval still waiting, and starts the turn's
            // record (same transaction).
            let save = Save {
                title_hint: Some(message.text()),
                user_assistant: Some(loadout.name.clone()),
                user_origin: origin,
                starts_turn: Some(marker),
                ..Save::default()
            };
            // Let the turn just spawned start first: at low load chat.db commits this on the
            // calling thread (`Db::write_small`), and the turn's tool listing, memory read and
            // (on the other worker) model request then overlap the commit instead of following
            // it. Nothing of the answer is read or shown before the commit (`committed`).
            tokio::task::yield_now().await;
            if let Err(e) = store.save(&state.key, &message, save).await {
                // The turn stops (dropping the record cancels it) and has the history: the
                // next turn reloads it from chat.db. No reply exists, and its record was not
                // written either (same transaction): nothing will be marked interrupted.
                drop(in_flight);
                return Err(e);
            }
            let _ = committed.send(());
            in_flight.log.release(hold);
        }
        // The binding is in chat.db now (with the user message, or from before).
        state.bindings.insert(&state.key, &loadout);
        let subscription = in_flight.subscribe();
        state.in_flight = Some(in_flight);
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

    /// Commits the message as of a boundary the log holds back, then lets readers see it.
    async fn checkpoint(&self, state: &mut State, turn: u64, message: UiMessage, save: Save, hold: Hold) {
        let Some(f) = state.in_flight.as_mut().filter(|f| f.turn == turn) else {
            return;
        };
        #[cfg(feature = "fault-injection")]
        if self.services.config.fault_injection {
            // Test builds only: lets an end-to-end test crash exactly this actor.
            assert!(
                !message.text().contains(FAULT_PANIC_ACTOR),
                "fault injection: actor panic requested"
            );
        }
        let ends_turn = save.ends_turn;
        match self.services.store.save(&state.key, &message, save).await {
            // The write fence (store::lease): the conversation was taken from this
            // instance (a delete or an erasure elsewhere). The turn stops here, and what the
            // refused commit would have confirmed is never shown.
            Err(Error::OwnedElsewhere { .. }) => {
                f.log.finish(stream_log::End::Moved);
                f.cancel.cancel();
                return;
            }
            // Any other failed commit: the boundary is not in chat.db, so the client must not
            // see it finished either (the turn stops; the client gets the error part).
            Err(e) => {
                tracing::error!(error = %e, "could not persist a finished part; the turn stops");
                f.log.finish(stream_log::End::Broken);
                f.cancel.cancel();
                return;
            }
            Ok(()) => f.record_ended |= ends_turn,
        }
        f.log.release(hold);
    }

    /// Stores a turn's summary (once per range: chat.db keeps the first) and keeps it; then
    /// the client may be told.
    async fn store_summary(&self, state: &mut State, turn: u64, summary: Summary, hold: Hold) {
        let Some(log) = state.in_flight.as_ref().filter(|f| f.turn == turn).map(|f| f.log.clone()) else {
            return;
        };
        match self.services.store.save_summary(&state.key, &summary).await {
            Ok(_) => {
                tracing::info!(covers = summary.covers_count, "conversation summarised");
                state.summary = Some(summary);
            }
            // The write fence, as in checkpoint: the conversation was taken from this
            // instance, so nothing of this turn may be written or shown any more.
            Err(Error::OwnedElsewhere { .. }) => {
                if let Some(f) = state.in_flight.as_ref().filter(|f| f.turn == turn) {
                    f.log.finish(stream_log::End::Moved);
                    f.cancel.cancel();
                }
                return;
            }
            Err(e) => tracing::error!(error = %e, "could not store a summary; it will be made again later"),
        }
        log.release(hold);
    }

    /// Renews the lease; false when it is lost (taken by another instance), or could not
    /// be renewed for so long that another instance may have taken it.
    async fn renew_lease(&self, state: &mut State) -> bool {
        let own = &self.services.ownership;
        // Bounded: a database that hangs must not hold this actor past the lease's time while
        // its turn keeps running (the pool bounds only getting a connection, not a query).
        let renewed = tokio::time::timeout(own.renew_every(), own.leases.renew(&state.key, &own.owner, own.ttl)).await;
        if matches!(renewed, Ok(Ok(true))) {
            state.lease_renewed = std::time::Instant::now();
        }
        self.still_held(state, renewed)
    }

    /// Confirms the lease before a turn uses the cached history ([`crate::store::lease::LeaseStore::confirm`]: a
    /// read while the lease has time left). It does not count as a renewal: the time since
    /// the last one still decides how long a failing database is tolerated.
    async fn confirm_lease(&self, state: &mut State) -> bool {
        let own = &self.services.ownership;
        let confirmed = tokio::time::timeout(own.renew_every(), own.leases.confirm(&state.key, &own.owner, own.ttl)).await;
        self.still_held(state, confirmed)
    }

    /// Whether the lease is still this instance's after a renewal or a confirmation: lost when
    /// the database says so, or when it could not answer for so long that another instance
    /// may have taken it.
    fn still_held(&self, state: &State, answer: Result<Result<bool, Error>, tokio::time::error::Elapsed>) -> bool {
        match answer {
            Ok(Ok(held)) => held,
            failed => {
                match failed {
                    Ok(Err(e)) => tracing::warn!(error = %e, "could not renew a conversation lease"),
                    _ => tracing::warn!("renewing a conversation lease timed out"),
                }
                let own = &self.services.ownership;
                state.lease_renewed.elapsed() < own.ttl - own.renew_every()
            }
        }
    }

    async fn end_turn(&self, state: &mut State, turn: u64, history: Option<Vec<UiMessage>>, message: UiMessage, changed: bool) {
        if state.in_flight.as_ref().is_none_or(|f| f.turn != turn) {
            return;
        }
        let Some(mut f) = state.in_flight.take() else { return };
        // A turn the shutdown cut off (cancelled: no history handed back) keeps its record, as
        // after a kill -9: the restart marks the stored reply interrupted, whether this end
        // or the actor's stop came first.
        let cut_by_shutdown = history.is_none() && self.services.shutdown.is_cancelled();
        if changed {
            // The final version, and with it the end of the turn's record.
            let save = Save {
                ends_turn: !cut_by_shutdown,
                ..Save::default()
            };
            if let Err(e) = self.services.store.save(&state.key, &message, save).await {
                // The end is not in chat.db: the client must not see the turn finished, and the
                // turn's marker stays, so the next owner marks the stored reply interrupted.
                tracing::error!(error = %e, "could not persist the final message");
                state.history = None;
                f.log.finish(moved_or_broken(&e));
                return;
            }
            f.record_ended |= !cut_by_shutdown;
        }
        // Keep the committed view: the history the turn had, now ending with the final
        // version of its message (none handed back: reloaded from chat.db on next use).
        state.history = history.map(|mut h| {
            if h.last().is_some_and(|m| m.id == message.id) {
                h.pop();
            }
            h.push(message);
            h
        });
        // The message is committed: the client may see the end. The turn's marker went with
        // the final message's commit; if no commit was final (a turn whose last step called
        // tools, a stopped turn), it goes now, after (a crash in between marks a finished
        // turn interrupted: harmless, never the reverse), off the client's path.
        f.log.finish(stream_log::End::Finished);
        if !f.record_ended && !cut_by_shutdown {
            let own = &self.services.ownership;
            if let Err(e) = own.leases.turn_ended(&state.key, &own.owner).await {
                tracing::warn!(error = %e, "could not record the end of a turn");
            }
        }
    }
}

/// Logs a turn marker that could not be written: the turn still runs, but a takeover or a
/// restart could not tell it was interrupted.
fn marker_written(result: Result<(), Error>) {
    if let Err(e) = result {
        tracing::warn!(error = %e, "could not record the turn in flight; a takeover could not mark it interrupted");
    }
}

/// A turn's events, sent straight into its conversation actor's mailbox from the turn's task
/// (tagged with the turn's number). Once the actor is gone a send fails, and the turn stops.
///
/// A turn that ends with nothing left to commit is closed here, without waiting for the actor
/// (one mailbox hop less before a client sees the end): the log shows the end once its last
/// hold is released, i.e. once the actor has committed every checkpoint, so what a client sees
/// finished is still committed. It is closed only after the end is in the mailbox: a client's
/// next request, sent once it saw the end, reaches the actor after the turn's end, never
/// while the actor still counts the turn as running.
struct ToActor {
    actor: ActorRef<ConversationMsg>,
    turn: u64,
    log: Arc<StreamLog>,
}

impl turn::TurnEvents for ToActor {
    fn send(&self, event: TurnEvent) -> bool {
        let nothing_to_commit = matches!(event, TurnEvent::Ended { changed: false, .. });
        if self.actor.send_message(ConversationMsg::Turn { turn: self.turn, event }).is_err() {
            return false;
        }
        if nothing_to_commit {
            self.log.finish_when_released();
        }
        true
    }

    fn is_closed(&self) -> bool {
        // ractor refuses messages from `Draining` on.
        self.actor.get_status() >= ractor::ActorStatus::Draining
    }
}

/// Appends a new user message to the history the turn reads. A StartTurn retried after a
/// crash or a panic finds its message already in chat.db (committed as the turn started):
/// the model must see it once, not twice. The last user message sent again under its id
/// (an edit after a failed turn) replaces it, as chat.db's upsert does: the model answers
/// what is stored. Any other message already holding the id is refused before anything is
/// written: chat.db would overwrite that message in place while the model saw a new one.
fn push_user_message(history: &mut Vec<UiMessage>, message: &UiMessage) -> Result<(), Error> {
    let same = |m: &UiMessage| m.id == message.id;
    if let Some(last) = history.last_mut().filter(|l| same(l) && l.role == crate::ui_stream::Role::User) {
        *last = message.clone();
    } else if history.iter().any(same) {
        return Err(Error::MessageIdTaken(message.id.clone()));
    } else {
        history.push(message.clone());
    }
    Ok(())
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
    // G3: the message's approvals are decided together. An undecided one would be shown to
    // the model as "not approved" while it stayed pending, approvable later behind its back.
    if let Some(open) = pending
        .iter()
        .find(|p| p.message_id == last_id && !decisions.iter().any(|d| d.approval_id == p.approval_id))
    {
        return Err(Error::ApprovalsUndecided(open.approval_id.clone()));
    }
    // One fenced transaction for all of them: none is used up unless every one is.
    let ids: Vec<String> = decisions.iter().map(|d| d.approval_id.clone()).collect();
    let taken = store
        .take_approvals(key, &ids)
        .await?
        .ok_or_else(|| Error::Forbidden("approval already used".into()))?;
    Ok(decisions.into_iter().zip(taken).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui_stream::Role;

    fn future_size<A, B, C, D, F: std::future::Future>(_: &impl Fn(A, B, C, D) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// ractor keeps an actor's message loop in one allocation, sized by its `handle` future and
    /// the message, for as long as the actor lives (one per open conversation): every handler
    /// runs boxed, and `StartTurn` carries its fields boxed (issue #16: the `handle` future
    /// 2,400 -> 840 bytes in a test build in the fourth pass, 928 -> 8 in the sixth; the message
    /// 216 -> 96). Bounds that fail when a handler is inlined again or a large variant added.
    #[test]
    fn the_message_loop_is_not_sized_by_its_handlers() {
        let size = future_size(&<ConversationActor as Actor>::handle);
        assert!(size <= 16, "the conversation actor's handle future is {size} bytes");
        let size = std::mem::size_of::<ConversationMsg>();
        assert!(size <= 96, "ConversationMsg is {size} bytes");
        // `handle` boxes `dispatch` for every message, so this is allocated per message:
        // `start_turn` runs in its own box (688 bytes in a test build at the sixth pass; with
        // `start_turn` inlined again, 2,104).
        let size = future_size(&ConversationActor::dispatch);
        eprintln!("size ConversationActor::dispatch future: {size}");
        assert!(size <= 1024, "the conversation actor's dispatch future is {size} bytes");
    }

    /// What a held stream keeps on the actor's side, in bytes (issue #16, sixth pass: printed
    /// with `--nocapture`; docs/performance.md has the table), each with a bound and why: the
    /// sizes in a test build at the sixth pass, with room to where a kept allocation would
    /// move to a larger jemalloc size class (the census in docs/performance.md), so a bound
    /// fails when a held stream would keep more, not at every field added.
    #[test]
    fn sizes_of_what_a_held_stream_keeps() {
        use std::mem::size_of;
        let sizes = [
            (
                "ConversationActor::handle future",
                future_size(&<ConversationActor as Actor>::handle),
                16,
                "ractor's loop box per conversation is sized by it: a box, no handler's state",
            ),
            (
                "ConversationMsg",
                size_of::<ConversationMsg>(),
                96,
                "in ractor's loop box and boxed per message",
            ),
            ("TurnEvent", size_of::<TurnEvent>(), 88, "carried in ConversationMsg, bounded above"),
            (
                "conversation State",
                size_of::<State>(),
                384,
                "in the actor's task, whose cell is in the 1,024-byte class",
            ),
            ("InFlight", size_of::<InFlight>(), 48, "in the State, per turn"),
            (
                "ToActor",
                size_of::<ToActor>(),
                32,
                "boxed in the emitter, per turn: the 32-byte class",
            ),
            ("turn::Turn", size_of::<turn::Turn>(), 384, "in the turn's future, per turn"),
            (
                "turn::run future",
                turn_future_size(&turn::run),
                896,
                "the turn's task, whose cell is in the 1,024-byte class",
            ),
            ("Emitter", size_of::<Emitter>(), 32, "per turn"),
            (
                "StreamLog",
                size_of::<StreamLog>(),
                144,
                "in an Arc per turn: with its two counts within the 160-byte class",
            ),
            ("Caller", size_of::<Caller>(), 80, "per turn"),
            ("UiMessage", size_of::<UiMessage>(), 64, "per message of a turn"),
            (
                "ractor SupervisionEvent",
                size_of::<ractor::SupervisionEvent>(),
                96,
                "32 of them are ractor's supervision channel's first block per actor: 32 x 96 still fits the 3,072-byte class",
            ),
        ];
        for (what, size, _, _) in sizes {
            eprintln!("size {what}: {size}");
        }
        for (what, size, bound, why) in sizes {
            assert!(size <= bound, "{what} is {size} bytes, over {bound}: {why}");
        }
    }

    fn turn_future_size<A, F: std::future::Future>(_: &impl Fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[tokio::test]
    async fn g3_a_message_s_approvals_are_decided_together_or_not_at_all() {
        use crate::store::chat::{ChatStore, PendingApproval, SqliteChat};
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteChat::open_without_turns(&dir.path().join("chat.db")).unwrap();
        let key = crate::store::key::test_key("alice", "c1");
        let approval = |id: &str| PendingApproval {
            approval_id: id.into(),
            message_id: "a1".into(),
            tool_call_id: format!("call-{id}"),
            server: "nextcloud".into(),
            tool: "files_delete".into(),
            arguments: serde_json::json!({"path": "/x"}),
            arguments_sha256: "h".into(),
        };
        let asked = UiMessage::new("a1".into(), Role::Assistant);
        store
            .save_message_with_approvals(&key, &asked, vec![approval("ap1"), approval("ap2")])
            .await
            .unwrap();
        let decide = |ids: &[&str]| {
            ids.iter()
                .map(|id| ApprovalDecision {
                    approval_id: id.to_string(),
                    approved: true,
                    reason: None,
                })
                .collect::<Vec<_>>()
        };
        let history = vec![asked];
        // One decided, one left open: refused, and nothing is used up.
        let partial = resolve_approvals(&store, &key, &history, decide(&["ap1"])).await;
        assert!(
            matches!(partial, Err(Error::ApprovalsUndecided(ref id)) if id == "ap2"),
            "{partial:?}"
        );
        assert_eq!(store.pending_approvals(&key).await.unwrap().len(), 2);
        let both = resolve_approvals(&store, &key, &history, decide(&["ap2", "ap1"])).await.unwrap();
        assert_eq!(both.len(), 2);
        assert!(store.pending_approvals(&key).await.unwrap().is_empty());
        store.close().await;
    }

    #[test]
    fn a_retried_turn_does_not_repeat_its_user_message() {
        let first = UiMessage::new("u1".into(), Role::User);
        let answer = UiMessage::new("a1".into(), Role::Assistant);
        let mut history = vec![first.clone(), answer];
        let retried = UiMessage::new("u2".into(), Role::User);
        push_user_message(&mut history, &retried).unwrap();
        assert_eq!(history.len(), 3);
        // The retry after a crash: chat.db already has u2 as the last message.
        push_user_message(&mut history, &retried).unwrap();
        assert_eq!(history.iter().filter(|m| m.id == "u2").count(), 1);
        // Sent again with other text under the same id: the model sees the new text, once.
        let mut edited = retried.clone();
        edited.parts.push(crate::ui_stream::UiPart::Text {
            text: "edited".into(),
            state: None,
        });
        push_user_message(&mut history, &edited).unwrap();
        assert_eq!(history.len(), 3);
        assert_eq!(history.last().map(UiMessage::text).as_deref(), Some("edited"));
        // Another message's id (an earlier user message, an assistant message) is refused and
        // the history is left as it was.
        for taken in [first.clone(), UiMessage::new("a1".into(), Role::User)] {
            let refused = push_user_message(&mut history, &taken);
            assert!(matches!(refused, Err(Error::MessageIdTaken(_))), "{refused:?}");
        }
        assert_eq!(history.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(), ["u1", "a1", "u2"]);
    }
}
