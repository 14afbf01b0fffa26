//! `POST /v1/chat`, `GET /v1/chat/{id}/stream` and `POST /v1/chat/{id}/stop`.
//!
//! The client may send the whole history; chat.db is the truth, so only the last message is
//! read: a new user message, or the assistant message whose tool parts carry approval
//! decisions (G3: the decision is taken from here, the call itself from our own record).

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use super::fairness::Refusal;
use super::{AppState, ask, ask_conversation, find_conversation, sse, valid_conversation_id};
use crate::actors::conversation::{ConversationMsg, Subscription, TurnStart};
use crate::auth::Caller;
use crate::error::{ApiError, Error, TurnLimit};
use crate::origin::Origin;
use crate::store::key::ConversationKey;
use crate::turn::{ApprovalDecision, TurnInput};
use crate::ui_stream::{Role, ToolState, UiMessage, UiPart};

/// Longest user message accepted, in characters.
pub const MAX_USER_TEXT: usize = 32_000;

#[derive(Deserialize)]
struct ChatRequest {
    id: String,
    messages: Vec<Value>,
    #[serde(default)]
    trigger: Option<String>,
    /// The assistant to talk to: binds a new conversation; must match an existing one's.
    #[serde(default)]
    assistant: Option<String>,
    /// The app whose Smart Picker sends this (issue #29; `crate::origin`): recorded when the
    /// message creates the conversation. A name outside the closed set is a 400.
    #[serde(default)]
    origin: Option<String>,
}

/// What one valid chat request asks for.
#[doc(hidden)]
pub struct Parsed {
    id: String,
    input: TurnInput,
    assistant: Option<String>,
    origin: Option<Origin>,
}

pub async fn post_chat(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(groups): Extension<crate::auth::identity::Groups>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let rid = caller.request_id.clone();
    let Parsed {
        id,
        input,
        assistant,
        origin,
    } = parse(&body).map_err(|e| e.with_request(&rid))?;
    // Which assistant: refused (400 unknown, 409 another one's conversation) before any quota is used.
    let key = ConversationKey::new(&caller, &id).map_err(|e| e.with_request(&rid))?;
    let services = &state.services;
    // The registry as it is now (issue #30): servers added or removed anywhere start or stop
    // here before this turn lists tools, and the assistant is what the caller may use now.
    // One snapshot for all three (PostgreSQL: a single small query while nothing changed).
    let registry = &services.registry;
    let snapshot = registry
        .snapshot(Some(&crate::store::key::UserId::of(&caller)))
        .await
        .map_err(|e| e.with_request(&rid))?;
    super::registry::sync_servers_to(&state, registry.servers_in(&snapshot).active)
        .await
        .map_err(|e| e.with_request(&rid))?;
    let assistants = registry.for_caller_in(&snapshot, &caller, &groups);
    let policy = crate::registry::Registry::policy_in(&snapshot);
    let resolved = super::assistants::resolve_cached(
        &assistants,
        services.store.as_ref(),
        &services.bindings,
        &key,
        assistant.as_deref(),
        policy.fallback_to_default,
    )
    .await;
    let resolved = match resolved {
        Ok(a) => a,
        Err(e) => {
            if let Error::AssistantGone(name) = &e {
                let row = crate::store::audit::Entry::of(
                    crate::store::audit::Kind::AssistantRefused,
                    crate::store::audit::Outcome::Refused,
                    &caller,
                )
                .conversation(&key)
                .detail(format!("assistant {name} is no longer offered to this user"))
                .build();
                services.audit.record(row).await;
            }
            return Err(e.with_request(&rid));
        }
    };
    let (permit, admitted) = admit(&state, &caller.uid).map_err(|e| e.with_request(&rid))?;
    let turn = TurnStart {
        caller: caller.clone(),
        input,
        assistant: resolved,
        origin,
        parent: tracing::Span::current(),
        // B6: held by the turn itself (`turn::Turn::admission`) and let go just before its end
        // can show, not when the client goes away: dropping requests never frees a slot while
        // their turns keep running. A resumed stream takes none.
        held: std::sync::Arc::new((permit, admitted)),
    };
    let subscription = start_turn(&state, key, turn).await.map_err(|e| e.with_request(&rid))?;
    Ok(sse::response(subscription, rid, state.services.shutdown.clone()))
}

/// B6: a turn's admission, for `uid`: the user's own share first, so one person's flood is
/// refused before it can take the machine-wide permits from everyone else, then a permit of
/// the bounded concurrency (beyond the limit a turn is refused, never queued without bound).
/// Held for as long as the turn runs. Room turns (`http::talk`) are admitted the same way.
pub(super) fn admit(state: &AppState, uid: &str) -> Result<(tokio::sync::OwnedSemaphorePermit, super::fairness::Admitted), Error> {
    let admitted = state.fairness.admit(uid).map_err(|refusal| {
        let which = match refusal {
            Refusal::TooManyRunning => TurnLimit::Running,
            Refusal::TooFast(_) => TurnLimit::Rate,
        };
        Error::UserTurnLimit {
            which,
            retry_after_secs: refusal.retry_after_secs(),
        }
    })?;
    let permit = state.turn_permits.clone().try_acquire_owned().map_err(|_| Error::Overloaded)?;
    if state.services.shutdown.is_cancelled() {
        return Err(Error::ShuttingDown);
    }
    Ok((permit, admitted))
}

/// Starts the turn in the conversation's actor. A running one is reached directly (no round
/// trip through the conversations supervisor, issue #16); one that is not running through
/// the supervisor, which starts it once it holds the lease. One that stops between the two
/// (an idle stop) is replaced once, never a failed request ([`super::ask_conversation`]).
async fn start_turn(state: &AppState, key: ConversationKey, turn: TurnStart) -> Result<Subscription, Error> {
    let running = state.actors.running_conversation(&key);
    // Built up to twice (see `ask_conversation`), so the start is cloned for each message.
    let message = |reply| ConversationMsg::StartTurn {
        start: Box::new(turn.clone()),
        reply,
    };
    ask_conversation(state, &key, running, message).await?
}

pub async fn resume(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let rid = caller.request_id.clone();
    let Ok(key) = ConversationKey::new(&caller, &id) else {
        return Err(Error::NotFound.with_request(&rid));
    };
    // Another user's conversation is keyed under their uid: it is simply not found here.
    let Some(actor) = find_conversation(&state, &key).await.map_err(|e| e.with_request(&rid))? else {
        // A turn running on another instance is resumed there (the router retries there).
        state
            .services
            .ownership
            .refuse_if_owned_elsewhere(&key)
            .await
            .map_err(|e| e.with_request(&rid))?;
        return Ok(http::StatusCode::NO_CONTENT.into_response());
    };
    let sub = ask(&actor, |reply| ConversationMsg::Subscribe { reply })
        .await
        .map_err(|e| e.with_request(&rid))?;
    match sub {
        Some(sub) => Ok(sse::response(sub, rid, state.services.shutdown.clone())),
        None => Ok(http::StatusCode::NO_CONTENT.into_response()),
    }
}

/// Stop pressed: the caller's running turn in this conversation stops before its next read of
/// the model (a tool call under way finishes first), keeps its partial answer and commits it
/// with a `data-interrupted` part (`turn::model_step`, as an orphaned turn does). Answers 204
/// once the turn is over, so the next message is accepted at once; 204 as well when no turn
/// runs (a turn waiting for an approval runs nothing). The conversation is found as `resume`
/// finds it: keyed by the signed uid, so another user's is unknown here, 404 like any other.
pub async fn stop(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let rid = caller.request_id.clone();
    let Ok(key) = ConversationKey::new(&caller, &id) else {
        return Err(Error::NotFound.with_request(&rid));
    };
    match find_conversation(&state, &key).await.map_err(|e| e.with_request(&rid))? {
        Some(actor) => {
            // An actor that stops before it answers (an idle stop, a lost lease) runs no turn
            // any more: whatever it ran ended with it.
            let running = match actor.call(|reply| ConversationMsg::Stop { reply }, Some(STOP_CALL_TIMEOUT)).await {
                Ok(ractor::rpc::CallResult::Success(running)) => running,
                Ok(ractor::rpc::CallResult::SenderError) | Err(ractor::MessagingErr::SendErr(_)) => None,
                Ok(ractor::rpc::CallResult::Timeout) => {
                    return Err(Error::Internal("the conversation did not answer the stop in time".into()).with_request(&rid));
                }
                Err(e) => return Err(Error::Internal(e.to_string()).with_request(&rid)),
            };
            if let Some(log) = running {
                // Answered once the turn's end is committed: a message sent after this 204
                // reaches the conversation after the turn has ended, never a 409.
                log.ended().await;
                return Ok(http::StatusCode::NO_CONTENT.into_response());
            }
        }
        // A turn running on another instance is stopped there (the router retries there).
        None => state
            .services
            .ownership
            .refuse_if_owned_elsewhere(&key)
            .await
            .map_err(|e| e.with_request(&rid))?,
    }
    // Nothing runs: idempotent for a conversation that exists, 404 for one that does not.
    match state.services.store.assistant_of(&key).await.map_err(|e| e.with_request(&rid))? {
        Some(_) => Ok(http::StatusCode::NO_CONTENT.into_response()),
        None => Err(Error::NotFound.with_request(&rid)),
    }
}

/// How long a conversation may take to take a stop in (the mailbox's wait, not the turn's end).
const STOP_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Validates the request and extracts what this turn acts on.
/// Reads a chat request body. Public for the `chat_request` fuzz target (issue #32) only.
#[doc(hidden)]
pub fn parse(body: &[u8]) -> Result<Parsed, Error> {
    let req: ChatRequest = serde_json::from_slice(body).map_err(|e| Error::BadRequest(format!("chat body: {e}")))?;
    if !valid_conversation_id(&req.id) {
        return Err(Error::BadRequest("conversation id must be 1-64 characters of [A-Za-z0-9_-]".into()));
    }
    // A Talk room's conversation is answered without any authority (`crate::talk`): it never
    // continues here with the person's tools and memory.
    if crate::talk::is_room_conversation(&req.id) {
        return Err(Error::BadRequest(
            "a Talk room conversation cannot be continued here: start a new conversation".into(),
        ));
    }
    if let Some(t) = req.trigger.as_deref().filter(|t| *t != "submit-message") {
        return Err(Error::BadRequest(format!("unsupported trigger {t}")));
    }
    let last = req
        .messages
        .into_iter()
        .last()
        .ok_or_else(|| Error::BadRequest("no messages".into()))?;
    let message: UiMessage = serde_json::from_value(last).map_err(|e| Error::BadRequest(format!("last message: {e}")))?;
    let input = match message.role {
        Role::User => TurnInput::User(user_message(message)?),
        Role::Assistant => TurnInput::Approvals(approval_decisions(&message)?),
        Role::System => return Err(Error::BadRequest("a system message cannot start a turn".into())),
    };
    let origin = match req.origin.as_deref() {
        None => None,
        Some(name) => Some(Origin::parse(name).ok_or_else(|| Error::BadRequest(format!("unknown origin {name:?}")))?),
    };
    Ok(Parsed {
        id: req.id,
        input,
        assistant: req.assistant,
        origin,
    })
}

fn user_message(message: UiMessage) -> Result<UiMessage, Error> {
    let text = message.text();
    if text.trim().is_empty() {
        return Err(Error::BadRequest("empty message".into()));
    }
    if text.chars().count() > MAX_USER_TEXT {
        return Err(Error::BadRequest("message too long".into()));
    }
    let id = if !message.id.is_empty() && message.id.len() <= 128 && message.id.bytes().all(|b| b.is_ascii_graphic()) {
        message.id
    } else {
        uuid::Uuid::new_v4().simple().to_string()
    };
    // Only text is kept from a user message; other part types are not interpreted.
    Ok(UiMessage {
        id,
        role: Role::User,
        parts: vec![UiPart::Text { text, state: None }],
    })
}

/// The approval decisions the client recorded on the assistant message's tool parts.
/// Only the decision is read: the tool, its input and anything else echoed back are ignored.
fn approval_decisions(message: &UiMessage) -> Result<Vec<ApprovalDecision>, Error> {
    let decisions: Vec<ApprovalDecision> = message
        .parts
        .iter()
        .filter_map(|p| match p {
            UiPart::DynamicTool(t) if t.state == ToolState::ApprovalResponded => t.approval.as_ref(),
            _ => None,
        })
        .filter_map(|a| {
            a.approved.map(|approved| ApprovalDecision {
                approval_id: a.id.clone(),
                approved,
                reason: a.reason.clone(),
            })
        })
        .collect();
    if decisions.is_empty() {
        return Err(Error::BadRequest("an assistant message must carry approval decisions".into()));
    }
    Ok(decisions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn only_the_last_user_message_is_taken() {
        let Parsed { id, input, assistant, .. } = parse(&body(json!({"id": "c1", "assistant": "cal", "messages": [
            {"id": "old", "role": "user", "parts": [{"type": "text", "text": "old"}]},
            {"id": "m2", "role": "user", "parts": [{"type": "text", "text": "new"}, {"type": "file", "url": "x"}]}
        ]})))
        .unwrap();
        assert_eq!(id, "c1");
        assert_eq!(assistant.as_deref(), Some("cal"));
        let TurnInput::User(m) = input else { panic!() };
        assert_eq!(m.text(), "new");
        assert_eq!(m.parts.len(), 1);
    }

    #[test]
    fn an_origin_from_the_closed_set_is_taken() {
        let user = json!([{"id": "m", "role": "user", "parts": [{"type": "text", "text": "x"}]}]);
        for (name, origin) in [("talk", Origin::Talk), ("mail", Origin::Mail), ("collectives", Origin::Collectives)] {
            let parsed = parse(&body(json!({"id": "c", "origin": name, "messages": user}))).unwrap();
            assert_eq!(parsed.origin, Some(origin));
        }
        assert_eq!(parse(&body(json!({"id": "c", "messages": user}))).unwrap().origin, None);
    }

    #[test]
    fn approvals_take_only_the_decision() {
        let Parsed { input, .. } = parse(&body(json!({"id": "c1", "messages": [
            {"id": "a1", "role": "assistant", "parts": [
                {"type": "dynamic-tool", "toolName": "files_move", "toolCallId": "call_1", "state": "approval-responded",
                 "input": {"from": "TAMPERED"}, "approval": {"id": "ap_1", "approved": true}}
            ]}
        ]})))
        .unwrap();
        assert_eq!(
            input_decisions(input),
            vec![ApprovalDecision {
                approval_id: "ap_1".into(),
                approved: true,
                reason: None
            }]
        );
    }

    fn input_decisions(i: TurnInput) -> Vec<ApprovalDecision> {
        match i {
            TurnInput::Approvals(d) => d,
            TurnInput::User(_) => panic!("expected approvals"),
        }
    }

    #[test]
    fn bad_requests_are_refused() {
        for b in [
            json!({"id": "", "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "x"}]}]}),
            json!({"id": "../x", "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "x"}]}]}),
            json!({"id": "c", "messages": []}),
            json!({"id": "c", "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "  "}]}]}),
            json!({"id": "c", "messages": [{"id": "m", "role": "user", "parts": []}]}),
            json!({"id": "c", "messages": [{"id": "m", "role": "assistant", "parts": [{"type": "text", "text": "hi"}]}]}),
            json!({"id": "c", "trigger": "regenerate-message", "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "x"}]}]}),
            json!({"messages": []}),
            // Issue #29: only the closed set of origins, spelt exactly.
            json!({"id": "c", "origin": "spreed", "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "x"}]}]}),
            json!({"id": "c", "origin": "Talk", "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "x"}]}]}),
            json!({"id": "c", "origin": "", "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "x"}]}]}),
            json!({"id": "c", "origin": 1, "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "x"}]}]}),
            // A Talk room's conversation (crate::talk) is never continued with the person's authority.
            json!({"id": "talk-k3x9ab2q", "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": "x"}]}]}),
        ] {
            assert!(matches!(parse(&body(b.clone())), Err(Error::BadRequest(_))), "{b}");
        }
        assert!(parse(b"not json").is_err());
    }
}
