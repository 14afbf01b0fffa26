//! One agent turn: model stream → tool calls → model, up to the step cap.
//!
//! Runs as a task. It publishes its stream parts into the turn's [`StreamLog`] (serialised
//! once, read by every client) and reports what must be committed first as typed
//! [`TurnEvent`]s into the channel it is given (the conversation actor consumes them and
//! releases what the log holds; this module knows nothing of actors). It never writes to
//! storage itself, and nothing it publishes after a change reaches a client before the
//! consumer has committed it. It is the only holder of the
//! caller's bearer, for exactly as long as the turn runs.
//! G3 lives here: a call whose policy needs approval is not executed; the turn records the
//! exact call, asks, and ends. An approved call runs as recorded, never as echoed back.

use futures::{FutureExt, StreamExt};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::auth::Caller;
use crate::compaction::{self, Calibration, Limits, Summary};
use crate::context;
use crate::error::{TurnError, stream_error_text};
use crate::mcp::registry::{Registry, ToolDef, canonical_json};
use crate::model::tool_calls::{AssembledCall, Started, StepCalls};
use crate::model::{ModelEvent, ToolSpec};
use crate::services::Services;
use crate::store::audit::{ApprovalState, Category, Entry, EntryBuilder, Kind, Outcome};
use crate::store::chat::PendingApproval;
use crate::stream_log::{Hold, StreamLog};
use crate::ui_stream::{StreamPart, ToolMeta, UiMessage};

/// What starts a turn.
#[derive(Debug, Clone)]
pub enum TurnInput {
    /// A new user message.
    User(UiMessage),
    /// Decisions on pending approvals, from the assistant message's tool parts.
    Approvals(Vec<ApprovalDecision>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalDecision {
    pub approval_id: String,
    pub approved: bool,
    pub reason: Option<String>,
}

/// What a turn reports to whoever runs it, in the order it happened (the conversation actor
/// commits, keeps and releases; the turn never learns who). Stream parts themselves go into
/// the turn's [`StreamLog`]; only what must be committed before a client may see it comes
/// here.
#[derive(Debug)]
pub enum TurnEvent {
    /// The assistant message as of a boundary part, which the log holds back until this
    /// version is committed (with the approval it asks for, when the part is an approval
    /// request: G3, the exact call is recorded in the same commit as the part).
    Checkpoint {
        message: UiMessage,
        approval: Option<Box<PendingApproval>>,
        hold: Hold,
        /// Nothing after this part changes the message (the text end of a step without tool
        /// calls): this version is final, and its commit may end the turn's record.
        ends_turn: bool,
    },
    /// The turn summarised the earlier part of the conversation; the log holds what follows
    /// (the part that tells the client) until the summary is stored.
    Summarised { summary: Summary, hold: Hold },
    /// The provider's count of the last request, against our estimate.
    Calibrated(Calibration),
    /// The turn is over; nothing follows. It hands the history back (this turn's message
    /// excluded; `None` when the turn was stopped half-way) and the final message, to be
    /// committed first when `changed`.
    Ended {
        history: Option<Vec<UiMessage>>,
        message: UiMessage,
        changed: bool,
    },
}

/// Whoever runs the turn receives its events through this (the conversation actor's mailbox,
/// directly: a channel and a forwarder per turn would be held for as long as its stream is
/// open, about 800 bytes per open stream).
pub trait TurnEvents: Send + Sync {
    /// False when nobody consumes the events any more (the conversation crashed or was
    /// deleted): the turn should stop.
    fn send(&self, event: TurnEvent) -> bool;
    /// Nobody consumes the events any more.
    fn is_closed(&self) -> bool;
}

/// Publishes a turn's parts into its stream log and its checkpoints to its [`TurnEvents`], in
/// order. Each part is serialised once, here; readers send the same bytes.
pub struct Emitter {
    events: Box<dyn TurnEvents>,
    /// Also watched for readers (a turn nobody reads stops asking the model, `model_step`) and
    /// for its person's Stop (`StreamLog::ask_stop`), which stops it the same way.
    log: Arc<StreamLog>,
    /// The message changed since its last checkpoint.
    dirty: bool,
    /// The part being emitted is the last to change the message.
    last_change: bool,
}

impl Emitter {
    pub fn new(events: Box<dyn TurnEvents>, log: Arc<StreamLog>) -> Self {
        Emitter {
            events,
            log,
            dirty: false,
            last_change: false,
        }
    }

    /// False when nobody consumes the events any more (the conversation crashed or was
    /// deleted): the turn should stop.
    fn send(&self, event: TurnEvent) -> bool {
        self.events.send(event)
    }

    /// Publishes `part`, already folded into `message`. A boundary after a change (or one
    /// asking for approval) is held in the log until the actor has committed `message`.
    fn emit(&mut self, part: StreamPart, message: &UiMessage, approval: Option<PendingApproval>) -> bool {
        self.dirty |= part.changes_message();
        let frame = part.frame();
        if (part.is_boundary() && (self.dirty || approval.is_some())) || fault_marker(&part) {
            self.dirty = false;
            let hold = self.log.push_held(frame.as_bytes());
            return self.send(TurnEvent::Checkpoint {
                message: message.clone(),
                approval: approval.map(Box::new),
                hold,
                ends_turn: self.last_change,
            });
        }
        self.log.push(frame.as_bytes());
        !self.events.is_closed()
    }

    /// Hands a new summary over, to be stored and kept for later turns.
    fn summarised(&self, summary: Summary) -> bool {
        let hold = self.log.hold();
        self.send(TurnEvent::Summarised { summary, hold })
    }

    /// Reports how the provider's count compares with our estimate.
    fn calibrated(&self, calibration: Calibration) {
        self.send(TurnEvent::Calibrated(calibration));
    }

    fn end(&mut self, history: Option<Vec<UiMessage>>, mut message: UiMessage) {
        let changed = message.close_open_text() | std::mem::take(&mut self.dirty);
        self.send(TurnEvent::Ended { history, message, changed });
    }
}

/// Test builds only: a delta carrying the marker goes through the actor (as a checkpoint), so
/// an end-to-end test can crash exactly that actor before anyone sees the delta.
#[cfg(feature = "fault-injection")]
fn fault_marker(part: &StreamPart) -> bool {
    matches!(part, StreamPart::TextDelta { delta, .. } if delta.contains(crate::fault::FAULT_PANIC_ACTOR))
}

#[cfg(not(feature = "fault-injection"))]
fn fault_marker(_: &StreamPart) -> bool {
    false
}

pub struct Turn {
    pub services: Arc<Services>,
    pub caller: Caller,
    pub conversation: crate::store::key::ConversationKey,
    pub history: Vec<UiMessage>,
    /// The assistant message this turn writes (new, or the one awaiting approval).
    pub assistant: UiMessage,
    pub decisions: Vec<(ApprovalDecision, PendingApproval)>,
    /// The conversation's latest summary (kept by the conversation, from chat.db).
    pub summary: Option<Summary>,
    /// How the provider counted this conversation's last request against our estimate.
    pub calibration: Calibration,
    pub emitter: Emitter,
    pub cancel: CancellationToken,
    /// Resolves once the user message that started this turn is committed (`None`: nothing
    /// to wait for). The turn may prepare and send the model request before; it reads the
    /// answer, and so runs any tool or publishes anything a client could see, only after.
    pub durable: Option<oneshot::Receiver<()>>,
    /// The conversation's assistant: its allow-list filters the tools offered, its
    /// instructions follow the system prompt, its model role picks the model.
    pub loadout: Arc<crate::assistants::Assistant>,
    /// The user's admission and the machine-wide permit (http::fairness): held for as long as
    /// the turn runs, connected client or not, and let go just before its end can show, so a
    /// client that sends again once it has seen the end finds its place free.
    pub admission: Option<crate::actors::running_turns::Held>,
}

/// Runs the turn to its end and reports that it ended. The caller runs it inside the turn
/// span (`telemetry::turn_span`), which never carries the uid unless the operator opted in.
///
/// Not an `async fn`: the future would keep a slot for its `turn` argument (already moved
/// into the state) for as long as the turn's stream is open (issue #16).
pub fn run(turn: Turn) -> impl std::future::Future<Output = ()> + Send {
    let cancel = turn.cancel.clone();
    let mut state = TurnState::new(turn);
    async move {
        // A bug that panics inside the turn must still end it: otherwise the conversation would
        // wait forever for a turn that is gone (every later message answered 409).
        let outcome = {
            let drive = std::panic::AssertUnwindSafe(state.drive()).catch_unwind();
            tokio::select! {
                o = drive => o.unwrap_or_else(|_| {
                    crate::telemetry::metrics::error("turn.panic");
                    Err(TurnError::Panicked)
                }),
                _ = cancel.cancelled() => Err(TurnError::Cancelled),
            }
        };
        // A turn stopped half-way (a panic, a cancel) may have left its history borrowed
        // (`compacted_view`): it is not handed back, and the conversation reloads it from chat.db.
        let intact = !matches!(outcome, Err(TurnError::Panicked | TurnError::Cancelled));
        if let Err(error) = outcome {
            let request_id = state.t.caller.request_id.clone();
            report(&error, &request_id);
            if matches!(error, TurnError::Orphaned { .. } | TurnError::Stopped) {
                // Stored with the partial answer: whoever opens the conversation later sees
                // that the reply was stopped, and why (the error part below is seen only by
                // a reader that comes back at this very moment).
                let _ = state.emit(StreamPart::DataInterrupted {
                    data: json!({
                        "requestId": request_id,
                        "message": stream_error_text(error.public_message(), &request_id),
                    }),
                });
            }
            let _ = state.emit(StreamPart::Error {
                error_text: stream_error_text(error.public_message(), &request_id),
            });
        }
        let Turn {
            mut emitter,
            history,
            assistant,
            admission,
            ..
        } = state.t;
        drop(admission);
        emitter.end(intact.then_some(history), assistant);
    }
}

/// The one place a turn's failure is logged and put on its span, cause and all (redacted);
/// what the user sees is only its fixed message.
fn report(error: &TurnError, request_id: &str) {
    let span = tracing::Span::current();
    span.record("error.type", error.kind());
    let cause = crate::auth::redact::redact(&error.to_string());
    if error.is_incident() {
        span.record("otel.status_code", "ERROR");
        tracing::error!(request_id = %request_id, error.type = error.kind(), error = %cause, "turn failed");
    } else {
        tracing::info!(request_id = %request_id, error.type = error.kind(), reason = %cause, "turn stopped");
    }
}

struct TurnState {
    t: Turn,
    registry: Registry,
    specs: Vec<ToolSpec>,
    /// Whether workspace (MCP) tools are offered, not only the local memory tools.
    has_workspace: bool,
    /// The user's memory facts, read once per turn: (id, text).
    facts: Vec<(i64, String)>,
    /// A turn makes at most one summary call, successful or not.
    summary_tried: bool,
    /// Tokens this turn's model calls used, for `TAMEBI_TURN_MAX_TOKENS`.
    tokens_used: u64,
    /// The last model call's finish reason, for the turn's `finish` part.
    finish_reason: Option<crate::ui_stream::FinishReason>,
}

impl TurnState {
    fn new(t: Turn) -> Self {
        TurnState {
            t,
            registry: Registry::default(),
            specs: Vec::new(),
            has_workspace: false,
            facts: Vec::new(),
            summary_tried: false,
            tokens_used: 0,
            finish_reason: None,
        }
    }

    /// Folds a part into our copy of the message and publishes it. Err when nobody listens
    /// any more.
    fn emit(&mut self, part: StreamPart) -> Result<(), TurnError> {
        self.emit_asking(part, None)
    }

    /// [`TurnState::emit`] for the last part that changes the message: its checkpoint says so.
    fn emit_last_change(&mut self, part: StreamPart) -> Result<(), TurnError> {
        self.t.emitter.last_change = true;
        let emitted = self.emit(part);
        self.t.emitter.last_change = false;
        emitted
    }

    fn emit_asking(&mut self, part: StreamPart, approval: Option<PendingApproval>) -> Result<(), TurnError> {
        self.t.assistant.apply(&part);
        if self.t.emitter.emit(part, &self.t.assistant, approval) {
            Ok(())
        } else {
            Err(TurnError::Abandoned)
        }
    }

    /// Waits (once) until the user message that started the turn is committed.
    async fn durable(&mut self) -> Result<(), TurnError> {
        match self.t.durable.take() {
            Some(committed) => committed.await.map_err(|_| TurnError::Abandoned),
            None => Ok(()),
        }
    }

    async fn drive(&mut self) -> Result<(), TurnError> {
        self.emit(StreamPart::Start {
            message_id: self.t.assistant.id.clone(),
        })?;
        // The steps around the model's answer run boxed: none of them is live while a stream
        // trickles, and inline they would size this future (held by the turn's task for as
        // long as the stream is open) to the largest of them (issue #16).
        Box::pin(self.load_tools()).await;
        self.tell_unavailable()?;
        self.load_facts().await;
        Box::pin(self.apply_decisions()).await?;
        let max_steps = self.t.services.config.max_steps;
        for _ in 0..max_steps {
            // The operator's bound: no further model call once the turn used its tokens.
            if let Some(max) = self.t.services.config.model.max_tokens_per_turn
                && self.tokens_used >= max
            {
                return Err(TurnError::TokenBound {
                    used: self.tokens_used,
                    max,
                });
            }
            let calls = self.model_step().await?;
            if calls.is_empty() {
                self.emit(StreamPart::FinishStep)?;
                break;
            }
            let awaiting = Box::pin(self.handle_calls(calls)).await?;
            self.emit(StreamPart::FinishStep)?;
            if awaiting {
                break;
            }
        }
        self.emit(StreamPart::Finish {
            finish_reason: self.finish_reason,
        })
    }

    /// The caller's tools, listed with the caller's bearer (no bearer: no workspace tools),
    /// and the orchestrator's own memory tools, which enter the same registry and policy.
    async fn load_tools(&mut self) {
        let mut defs = self.load_workspace_tools().await;
        self.has_workspace = !defs.is_empty();
        defs.extend(crate::memory::tool_defs());
        // The assistant's allow-list: a tool outside it is never offered, and a call naming it
        // anyway finds no tool (an error result, like any unknown name).
        defs.retain(|d| self.t.loadout.allows(&d.server, &d.name));
        self.registry = Registry::new(defs);
        self.specs = self.registry.model_tools().map(ToolDef::spec).collect();
    }

    /// Says plainly which of the person's tool servers are out of service (their restart limit
    /// was reached): their tools are missing from this turn, and the person should know why.
    fn tell_unavailable(&mut self) -> Result<(), TurnError> {
        let down = self.t.services.tool_servers.unavailable_for(&self.t.caller);
        if down.is_empty() {
            return Ok(());
        }
        let message = format!(
            "These tool servers are unavailable right now, so their tools cannot be used in this reply: {}.",
            down.join(", ")
        );
        self.emit(StreamPart::DataToolsUnavailable {
            data: json!({"servers": down, "message": message}),
        })
    }

    async fn load_workspace_tools(&mut self) -> Vec<ToolDef> {
        // Each server is listed with the credential it is configured for; no token for a
        // Nextcloud-facing server: no tools from it.
        let servers = self.t.services.tool_servers.reachable(&self.t.caller);
        let lists = futures::future::join_all(servers.iter().map(|s| self.t.services.tool_servers.list_tools(s, &self.t.caller))).await;
        let mut defs = Vec::new();
        for (server, result) in servers.iter().zip(lists) {
            match result {
                Ok(listed) => defs.extend(listed),
                Err(e) => {
                    tracing::warn!(server = %server, error = %crate::auth::redact::redact(&e.to_string()), "could not list tools; offering none from this server")
                }
            }
        }
        self.observe_fingerprints(&mut defs).await;
        defs
    }

    /// The user's memory facts, shown to the model on every turn (inside the envelope).
    async fn load_facts(&mut self) {
        match self.t.services.memory.list(self.t.conversation.user()).await {
            Ok(facts) => self.facts = facts.into_iter().map(|f| (f.id, f.text)).collect(),
            Err(e) => tracing::error!(error = %e, "could not read memory; this turn goes on without it"),
        }
    }

    async fn observe_fingerprints(&self, defs: &mut [ToolDef]) {
        let template = self.audit_entry(Kind::FingerprintChanged, Outcome::Changed, "", "").build();
        crate::mcp::registry::observe_fingerprints(self.t.services.audit.as_ref(), defs, &template).await;
    }

    /// An audit row of this turn (its caller, its conversation) about `server`/`tool`.
    fn audit_entry(&self, kind: Kind, outcome: Outcome, server: &str, tool: &str) -> EntryBuilder {
        Entry::of(kind, outcome, &self.t.caller)
            .conversation(&self.t.conversation)
            .tool(server, tool)
    }

    /// Runs approved calls (as recorded) and reports denied ones.
    async fn apply_decisions(&mut self) -> Result<(), TurnError> {
        let decisions = std::mem::take(&mut self.t.decisions);
        if !decisions.is_empty() {
            self.durable().await?;
        }
        for (decision, pending) in decisions {
            if decision.approved && !self.t.loadout.allows(&pending.server, &pending.tool) {
                let part = self.refuse_withdrawn(&pending).await;
                self.emit(part)?;
            } else if decision.approved {
                let part = self
                    .execute(
                        &pending.server,
                        &pending.tool,
                        &pending.tool_call_id,
                        pending.arguments.clone(),
                        ApprovalState::ApprovedByUser,
                    )
                    .await;
                self.emit(part)?;
            } else {
                let entry = self
                    .audit_entry(Kind::ToolCall, Outcome::NotRun, &pending.server, &pending.tool)
                    .category(Category::Action)
                    .approval(ApprovalState::DeniedByUser)
                    .arguments_sha256(pending.arguments_sha256.clone())
                    .build();
                self.t.services.audit.record(entry).await;
                self.emit(StreamPart::ToolOutputDenied {
                    tool_call_id: pending.tool_call_id.clone(),
                })?;
            }
        }
        Ok(())
    }

    /// An approved call whose tool the conversation's assistant no longer allows (the operator
    /// narrowed its allow-list after the call was proposed). The approval was for a tool the
    /// assistant had then; what holds is the allow-list now, so nothing runs (fail closed), the
    /// refusal is audited, and the model reads it as an error result (through the G2 envelope).
    async fn refuse_withdrawn(&self, pending: &PendingApproval) -> StreamPart {
        let entry = self
            .audit_entry(Kind::ToolCall, Outcome::Refused, &pending.server, &pending.tool)
            .category(Category::Action)
            .approval(ApprovalState::ApprovedByUser)
            .arguments_sha256(pending.arguments_sha256.clone())
            .detail(format!("no longer allowed by the assistant {}", self.t.loadout.name))
            .build();
        self.t.services.audit.record(entry).await;
        StreamPart::ToolOutputError {
            tool_call_id: pending.tool_call_id.clone(),
            error_text: format!(
                "This call was approved, but the assistant \"{}\" no longer has the tool {} (the operator changed its tools), so it was not run.",
                self.t.loadout.name, pending.tool
            ),
            dynamic: true,
        }
    }

    /// One model call. Streams its text; returns the tool calls it made.
    async fn model_step(&mut self) -> Result<Vec<AssembledCall>, TurnError> {
        // Stop pressed while a tool ran (or before the first step): no further model call.
        if self.t.emitter.log.stop_was_asked() {
            return Err(TurnError::Stopped);
        }
        self.emit(StreamPart::StartStep)?;
        // Boxed (issue #16): the view (and a summary call) is built before the stream starts.
        let view = Box::pin(self.compacted_view()).await?;
        // Only the estimate is kept past the request (the calibration compares it with the
        // provider's count); the rest of the view goes here and its messages below.
        let (messages, estimated_tokens) = view.into_request();
        // Nobody reading the answer for the orphan grace stops the step: dropping the stream
        // closes the upstream request, so the model server stops generating. Only here, while
        // the model is asked: a running tool finishes (its effect is not cut half-way), and a
        // turn waiting for an approval has ended already. Boxed: held for as long as the
        // answer streams (issue #16). Stop pressed (`POST /v1/chat/{id}/stop`) stops it the
        // same way, at once.
        let grace = self.t.services.config.turn_orphan_grace;
        let log = self.t.emitter.log.clone();
        let mut halted = Box::pin(async move {
            tokio::select! {
                biased;
                () = log.stop_asked() => TurnError::Stopped,
                () = log.unread_for(grace) => TurnError::Orphaned {
                    grace_secs: grace.as_secs(),
                },
            }
        });
        let model = &self.t.services.model;
        let stream = tokio::select! {
            biased;
            s = Box::pin(model.stream_as(self.t.loadout.model, &messages, &self.specs)) => s,
            why = &mut halted => return Err(why),
        };
        let mut stream = stream.map_err(TurnError::ModelCall)?;
        // The request is sent: its messages (the whole history as the model sees it) are not
        // kept for as long as the answer streams (issue #16).
        drop(messages);
        // The request went out while the user message was being committed; its answer is
        // read only once that commit is done.
        self.durable().await?;
        let mut text_id: Option<String> = None;
        // Issue #10: the provider's ids and indexes are not trusted; calls get our ids and
        // what one step can make us hold is bounded (see model::tool_calls).
        let mut calls = StepCalls::default();
        let model_error = TurnError::ModelStream;
        loop {
            // The halt first: a model that always has the next delta ready must not keep a
            // Stop waiting until its answer ends (polling it is a token check and a timer's).
            let event = tokio::select! {
                biased;
                why = &mut halted => return Err(why),
                e = stream.next() => e,
            };
            let Some(event) = event else { break };
            match event.map_err(model_error)? {
                ModelEvent::TextDelta(delta) => {
                    calls.text(&delta).map_err(model_error)?;
                    let id = match &text_id {
                        Some(id) => id.clone(),
                        None => {
                            let id = format!("t{}", uuid::Uuid::new_v4().simple());
                            self.emit(StreamPart::TextStart { id: id.clone() })?;
                            text_id = Some(id.clone());
                            id
                        }
                    };
                    self.emit(StreamPart::TextDelta { id, delta })?;
                }
                ModelEvent::ToolCallStart { index, id, name } => {
                    let Started::New { id } = calls.start(index, &id, &name).map_err(model_error)? else {
                        continue;
                    };
                    if let Some(tid) = text_id.take() {
                        self.emit(StreamPart::TextEnd { id: tid })?;
                    }
                    self.emit(StreamPart::ToolInputStart {
                        tool_call_id: id,
                        tool_name: name,
                        dynamic: true,
                    })?;
                }
                ModelEvent::ToolCallArguments { index, delta } => calls.arguments(index, &delta).map_err(model_error)?,
                ModelEvent::Finished { reason } => self.finish_reason = Some(crate::ui_stream::finish_reason(&reason)),
                ModelEvent::Usage {
                    total_tokens,
                    prompt_tokens,
                } => {
                    self.tokens_used += total_tokens;
                    if let Some(prompt_tokens) = prompt_tokens {
                        self.t.calibration = Calibration::observe(estimated_tokens, prompt_tokens);
                        self.t.emitter.calibrated(self.t.calibration);
                    }
                }
            }
        }
        let calls = calls.finish();
        if let Some(tid) = text_id.take() {
            let end = StreamPart::TextEnd { id: tid };
            // A step without calls is the turn's last (`drive`): only parts that change
            // nothing follow its text's end.
            if calls.is_empty() {
                self.emit_last_change(end)?
            } else {
                self.emit(end)?
            }
        }
        Ok(calls)
    }

    /// What this step sends the model: within the budget (rung 1 and the floor always), with
    /// a new summary first when the view passed half the window (rung 2, once per turn).
    async fn compacted_view(&mut self) -> Result<compaction::View, TurnError> {
        let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
        let fixed = self
            .t
            .loadout
            .system_prompt(context::system_prompt(&today, self.has_workspace, self.t.caller.language.as_ref()));
        let system = context::system_with_context(fixed, &self.facts, None);
        // The history with this turn's message at its end, borrowed rather than copied (a long
        // conversation's history is megabytes); put back on every path.
        let mut history = std::mem::take(&mut self.t.history);
        history.push(self.t.assistant.clone());
        let view = self.fit(&system, &history).await;
        history.pop();
        self.t.history = history;
        view
    }

    async fn fit(&mut self, system: &str, history: &[UiMessage]) -> Result<compaction::View, TurnError> {
        let limits = Limits::for_window(self.t.services.config.model.context_budget());
        let tools_tokens = compaction::tools_tokens(&self.specs);
        let view = compaction::build_view(system, self.t.summary.as_ref(), history, tools_tokens, &limits, self.t.calibration);
        if self.summary_tried {
            return Ok(view);
        }
        let Some(end) = compaction::summary_plan(history, self.t.summary.as_ref(), &view, &limits) else {
            return Ok(view);
        };
        self.summary_tried = true;
        match self.summarise(history, end, &limits).await {
            Ok(summary) => {
                let data = json!({
                    "summarisedMessages": summary.covers_count,
                    "throughMessageId": summary.covers_until_id,
                });
                if !self.t.emitter.summarised(summary.clone()) {
                    return Err(TurnError::Abandoned);
                }
                self.t.summary = Some(summary);
                self.emit(StreamPart::DataCompaction { data })?;
                Ok(compaction::build_view(
                    system,
                    self.t.summary.as_ref(),
                    history,
                    tools_tokens,
                    &limits,
                    self.t.calibration,
                ))
            }
            Err(why) => {
                // The failure path: this turn goes on with rung 1 (and the floor) only.
                tracing::warn!(
                    compaction.failed = true,
                    error = %crate::auth::redact::redact(&why),
                    "summary call failed; continuing with tool-result clearing only"
                );
                Ok(view)
            }
        }
    }

    /// One model call that summarises `history[..end]` (with the previous summary).
    async fn summarise(&self, history: &[UiMessage], end: usize, limits: &Limits) -> Result<Summary, String> {
        let start = compaction::summarised_prefix(history, self.t.summary.as_ref());
        let previous = self.t.summary.as_ref().filter(|_| start > 0).map(|s| s.text.as_str());
        let request = compaction::summary_request(previous, &history[start..end], start + 1, limits);
        let span = tracing::info_span!(
            "compaction.summary",
            from = telemetry_otlp::int(start),
            to = telemetry_otlp::int(end)
        );
        let text = async {
            let mut stream = self.t.services.model.stream(&request, &[]).await.map_err(|e| e.to_string())?;
            let mut text = String::new();
            while let Some(event) = stream.next().await {
                if let ModelEvent::TextDelta(d) = event.map_err(|e| e.to_string())? {
                    text.push_str(&d);
                }
            }
            Ok::<String, String>(text)
        }
        .instrument(span)
        .await?;
        let text = compaction::bounded_summary(&text, limits);
        if text.is_empty() {
            return Err("the model returned an empty summary".into());
        }
        Ok(Summary {
            covers_count: end,
            covers_until_id: history[end - 1].id.clone(),
            text,
        })
    }

    /// Handles one step's calls. Returns true when at least one waits for approval.
    async fn handle_calls(&mut self, calls: Vec<AssembledCall>) -> Result<bool, TurnError> {
        let mut awaiting = false;
        for call in calls {
            let def = self.registry.for_model(&call.name).cloned();
            // Where the call goes, from our registry: the approval card names the server.
            let tool_metadata = def.as_ref().map(|d| Box::new(tool_meta(d)));
            let input: Value = match serde_json::from_str(if call.arguments.trim().is_empty() { "{}" } else { &call.arguments }) {
                Ok(v @ Value::Object(_)) => v,
                _ => {
                    self.audit_malformed_call(&call).await;
                    self.emit(StreamPart::ToolInputAvailable {
                        tool_call_id: call.id.clone(),
                        tool_name: call.name.clone(),
                        input: Value::Null,
                        dynamic: true,
                        tool_metadata,
                    })?;
                    self.emit(StreamPart::ToolOutputError {
                        tool_call_id: call.id,
                        error_text: "The tool arguments were not a JSON object.".into(),
                        dynamic: true,
                    })?;
                    continue;
                }
            };
            self.emit(StreamPart::ToolInputAvailable {
                tool_call_id: call.id.clone(),
                tool_name: call.name.clone(),
                input: input.clone(),
                dynamic: true,
                tool_metadata: tool_metadata.clone(),
            })?;
            let Some(def) = def else {
                // A call to a tool that does not exist for the model (a public-link or mail-send
                // tool an injected document asked for, an app-only tool) is recorded as refused.
                let entry = self
                    .audit_entry(Kind::ToolCall, Outcome::UnknownTool, "", &call.name)
                    .category(Category::Action)
                    .approval(ApprovalState::Refused)
                    .arguments_sha256(arguments_hash(&input))
                    .build();
                self.t.services.audit.record(entry).await;
                self.emit(StreamPart::ToolOutputError {
                    tool_call_id: call.id,
                    error_text: format!("There is no tool named {}.", call.name),
                    dynamic: true,
                })?;
                continue;
            };
            if def.policy.needs_approval {
                // G3: record the exact call and ask; nothing runs until a recorded approval. A
                // tool of a server we do not vouch for always lands here (approval::policy_for):
                // its arguments would leave for a third party.
                let approval = PendingApproval {
                    approval_id: format!("ap_{}", uuid::Uuid::new_v4().simple()),
                    message_id: self.t.assistant.id.clone(),
                    tool_call_id: call.id.clone(),
                    server: def.server.clone(),
                    tool: def.name.clone(),
                    arguments_sha256: arguments_hash(&input),
                    arguments: input,
                };
                // The card the user approves is this record: exactly one part carries the
                // call's id, showing the recorded server, tool and arguments. Our own ids make
                // any other outcome impossible; if it ever happened, asking would be a lie.
                let shown = tool_meta(&def);
                if !self
                    .t
                    .assistant
                    .shows_exactly(&call.id, &def.model_name, &approval.arguments, &shown)
                {
                    tracing::error!(tool = %def.name, "the approval card does not match the recorded call; not asking");
                    self.emit(StreamPart::ToolOutputError {
                        tool_call_id: call.id,
                        error_text: "This call could not be shown for approval, so it was not run.".into(),
                        dynamic: true,
                    })?;
                    continue;
                }
                let entry = self
                    .audit_entry(Kind::ToolCall, Outcome::NotRun, &def.server, &def.name)
                    .category(def.policy.category)
                    .approval(ApprovalState::Requested)
                    .arguments_sha256(approval.arguments_sha256.clone())
                    .build();
                self.t.services.audit.record(entry).await;
                let part = StreamPart::ToolApprovalRequest {
                    approval_id: approval.approval_id.clone(),
                    tool_call_id: call.id,
                };
                self.emit_asking(part, Some(approval))?;
                awaiting = true;
                continue;
            }
            let part = self
                .execute(&def.server, &def.name, &call.id, input, ApprovalState::NotNeeded)
                .await;
            self.emit(part)?;
        }
        Ok(awaiting)
    }

    /// A call whose arguments are not a JSON object runs nothing, and is audited like any
    /// other refused attempt (the hash covers the raw text the model sent).
    async fn audit_malformed_call(&self, call: &AssembledCall) {
        let def = self.registry.for_model(&call.name);
        let entry = self
            .audit_entry(
                Kind::ToolCall,
                Outcome::BadArguments,
                def.map_or("", |d| d.server.as_str()),
                def.map_or(call.name.as_str(), |d| d.name.as_str()),
            )
            .category(def.map_or(Category::Action, |d| d.policy.category))
            .approval(ApprovalState::Refused)
            .arguments_sha256(hex::encode(Sha256::digest(call.arguments.as_bytes())))
            .build();
        self.t.services.audit.record(entry).await;
    }

    /// Calls a tool as the caller and turns the result into an output part.
    async fn execute(&self, server: &str, tool: &str, tool_call_id: &str, input: Value, approval: ApprovalState) -> StreamPart {
        let started = std::time::Instant::now();
        let args_hash = arguments_hash(&input);
        let category = self.registry.find(server, tool).map_or(Category::Action, |d| d.policy.category);
        let part = self
            .execute_inner(server, tool, tool_call_id, input)
            .instrument(crate::telemetry::tool_span(server, tool, approval))
            .await;
        let outcome = match &part {
            StreamPart::ToolOutputAvailable { .. } => Outcome::Ok,
            _ => Outcome::Error,
        };
        let entry = self
            .audit_entry(Kind::ToolCall, outcome, server, tool)
            .category(category)
            .approval(approval)
            .arguments_sha256(args_hash)
            .duration_ms(started.elapsed().as_millis() as i64)
            .build();
        self.t.services.audit.record(entry).await;
        part
    }

    async fn execute_inner(&self, server: &str, tool: &str, tool_call_id: &str, input: Value) -> StreamPart {
        if server == crate::types::LOCAL_SERVER {
            return self.execute_local(tool, tool_call_id, &input).await;
        }
        let arguments = match input {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let result = self
            .t
            .services
            .tool_servers
            .call_tool(server, &self.t.caller, tool, arguments)
            .await;
        let resource_uri = self.registry.find(server, tool).and_then(|d| d.resource_uri.clone());
        match result {
            Ok(r) => {
                let is_error = r.is_error == Some(true);
                let mut output = serde_json::to_value(&r).unwrap_or(Value::Null);
                if is_error {
                    let text = context::output_text(Some(&output));
                    return StreamPart::ToolOutputError {
                        tool_call_id: tool_call_id.to_string(),
                        error_text: text.chars().take(4000).collect(),
                        dynamic: true,
                    };
                }
                if let Value::Object(map) = &mut output {
                    map.insert("server".into(), json!(server));
                    map.insert("tool".into(), json!(tool));
                    if let Some(uri) = resource_uri {
                        map.insert("_meta".into(), json!({"ui": {"resourceUri": uri}}));
                    }
                }
                StreamPart::ToolOutputAvailable {
                    tool_call_id: tool_call_id.to_string(),
                    output,
                    dynamic: true,
                }
            }
            Err(e) => {
                let request_id = &self.t.caller.request_id;
                tracing::warn!(request_id = %request_id, error = %crate::auth::redact::redact(&e.to_string()), "tool call failed");
                // A call that timed out or broke off (its server died mid-call, its answer was
                // lost) may have been carried out: the model and the person are told to look
                // before trying again, never just to retry it (issue 32). Only a call that was
                // never sent may say "try again later". The request id ties the part to the logs.
                let message = match e {
                    crate::mcp::client::McpError::Timeout => crate::error::messages::UPSTREAM_TIMEOUT,
                    crate::mcp::client::McpError::NoCredential => "The tool could not be reached. Try again later.",
                    crate::mcp::client::McpError::Transport(_) | crate::mcp::client::McpError::Refused(_) => {
                        crate::error::messages::UPSTREAM
                    }
                };
                StreamPart::ToolOutputError {
                    tool_call_id: tool_call_id.to_string(),
                    error_text: stream_error_text(message, request_id),
                    dynamic: true,
                }
            }
        }
    }
}

impl TurnState {
    /// Runs one of the orchestrator's own tools (memory); the same part shapes as MCP's.
    async fn execute_local(&self, tool: &str, tool_call_id: &str, input: &Value) -> StreamPart {
        let services = &self.t.services;
        #[cfg(feature = "fault-injection")]
        if services.config.fault_injection {
            crate::memory::fault_hold_before_write(tool, input);
        }
        match crate::memory::call(services.memory.as_ref(), &self.t.conversation, tool, input).await {
            Ok(text) => StreamPart::ToolOutputAvailable {
                tool_call_id: tool_call_id.to_string(),
                output: json!({"content": [{"type": "text", "text": text}], "server": crate::types::LOCAL_SERVER, "tool": tool}),
                dynamic: true,
            },
            Err(error_text) => StreamPart::ToolOutputError {
                tool_call_id: tool_call_id.to_string(),
                error_text,
                dynamic: true,
            },
        }
    }
}

/// What a tool part says about where its call goes (the approval card shows it).
fn tool_meta(def: &ToolDef) -> ToolMeta {
    ToolMeta {
        server: def.server.clone(),
        tool: def.name.clone(),
        third_party: def.trust != crate::config::ServerTrust::Own,
    }
}

/// sha256 of the canonical JSON of a call's arguments (stored with approvals and audits).
pub fn arguments_hash(arguments: &Value) -> String {
    hex::encode(Sha256::digest(canonical_json(arguments).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn future_size<A, F: std::future::Future>(_: &impl Fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// The turn's future is held by its task for as long as its stream is open (10,000 open
    /// streams hold 10,000 of them): the steps that are not live while a stream trickles
    /// (tool listing, approvals, tool calls, the view and a summary call, the model request)
    /// stay boxed, so the future is sized by the streaming loop (issue #16: 3.8 KB before in
    /// a test build, under 1 KB after). A generous bound: it fails when a large step is
    /// inlined again, not when the compiler moves a few bytes.
    #[test]
    fn the_turn_future_is_sized_by_the_streaming_loop() {
        let size = future_size(&run);
        assert!(size <= 1536, "the turn's future is {size} bytes");
    }
}
