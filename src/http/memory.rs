//! `GET /v1/memory`, `DELETE /v1/memory/{id}` and `DELETE /v1/me/data`, all for the signed
//! user only (G1: the uid comes from the verified signature, never from the path or body).
//!
//! A person's own deletion needs no approval: G3 guards what the model does on their
//! behalf, not what they do themselves. The erasure is the GDPR path: it erases the user's
//! conversations, summaries, memory and personal assistants from disk and leaves audit.db whole, adding one row
//! that says an erasure happened.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use super::{AppState, ask, conversations_supervisor};
use crate::actors::conversation::ConversationMsg;
use crate::actors::conversations::ConversationsMsg;
use crate::auth::Caller;
use crate::error::{ApiError, Error};
use crate::store::audit::{Entry, Kind, Outcome};
use crate::store::key::UserId;

pub async fn list(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> Result<Response, ApiError> {
    let facts = state
        .services
        .memory
        .list(&UserId::of(&caller))
        .await
        .map_err(|e| e.with_request(&caller.request_id))?;
    Ok(Json(serde_json::json!({ "facts": facts })).into_response())
}

pub async fn forget(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let rid = &caller.request_id;
    // Not a number: no such fact, exactly like another user's.
    let Ok(id) = id.parse::<i64>() else {
        return Err(Error::NotFound.with_request(rid));
    };
    match state
        .services
        .memory
        .forget(&UserId::of(&caller), id)
        .await
        .map_err(|e| e.with_request(rid))?
    {
        true => Ok(http::StatusCode::NO_CONTENT.into_response()),
        false => Err(Error::NotFound.with_request(rid)),
    }
}

/// Takes every conversation of the user from whichever instance runs it (store::lease: while
/// the leases name this instance, no other instance writes into them; an owner check, see the
/// caveat on `check_fence`), stops the user's actors here (once more after the rows went, for
/// an actor started meanwhile),
/// erases chat.db's and memory.db's rows of the user with their bytes (twice: see
/// erase_seized; the second time after the user's cancelled turns ended, bounded), gives the
/// conversations back, and audits the erasure.
pub async fn erase_me(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> Result<Response, ApiError> {
    let rid = &caller.request_id;
    let uid = UserId::of(&caller);
    let own = &state.services.ownership;
    own.leases
        .seize_user(&uid, &own.owner, own.ttl)
        .await
        .map_err(|e| e.with_request(rid))?;
    let erased = erase_seized(&state, &caller, &uid).await;
    if let Err(e) = own.leases.release_user(&uid, &own.owner).await {
        tracing::warn!(error = %e, "could not give back an erased user's conversations; their leases expire on their own");
    }
    erased
}

async fn erase_seized(state: &AppState, caller: &Caller, uid: &UserId) -> Result<Response, ApiError> {
    let rid = &caller.request_id;
    let mut conversations = delete_running(state, uid).await.map_err(|e| e.with_request(rid))?;
    let services = &state.services;
    conversations += services.store.erase_user(uid).await.map_err(|e| e.with_request(rid))?;
    let facts = services.memory.erase_user(uid).await.map_err(|e| e.with_request(rid))?;
    // Their personal assistants are their data too (issue #30); shared ones go with them.
    let assistants = services.registry.store().erase_user(uid).await.map_err(|e| e.with_request(rid))?;
    // An actor started while the rows went (a turn that arrived meanwhile) may have read the
    // history before they went, and would write its turn back after: it deletes its
    // conversation too (what it wrote is not counted: it was never the erased data). One
    // started from here on reads chat.db after the erasure.
    delete_running(state, uid).await.map_err(|e| e.with_request(rid))?;
    // That pass reaches only actors still running: one that wrote after the erasure and has
    // stopped since left its rows, and a turn's memory call (turn.rs) writes facts from its own
    // task, which a cancel stops only at its next poll (a poll under way still queues its
    // write). So the user's turn tasks are waited for, bounded: once they have ended, all they
    // wrote is queued ahead of the last pass below. Past the bound (a turn stuck somewhere a
    // cancel does not reach) the pass runs anyway, and the log says so.
    wait_for_turns(state, uid, rid).await;
    // After the running actors were told to delete and their turns ended, the rows go once
    // more (idempotent); what this pass finds was written after the erasure began, so it is
    // not counted in the reply.
    services.store.erase_user(uid).await.map_err(|e| e.with_request(rid))?;
    services.memory.erase_user(uid).await.map_err(|e| e.with_request(rid))?;
    services
        .audit
        .record(
            Entry::of(Kind::Erasure, Outcome::Erased, caller)
                .detail(format!(
                    "{conversations} conversations, {facts} memory facts, {assistants} personal assistants"
                ))
                .build(),
        )
        .await;
    tracing::info!(request_id = %rid, conversations, facts, assistants, "user data erased");
    Ok(Json(serde_json::json!({
        "erased": { "conversations": conversations, "memoryFacts": facts, "personalAssistants": assistants }
    }))
    .into_response())
}

/// How long an erasure waits for the user's cancelled turns to end before its last pass.
const TURNS_END_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits (at most [`TURNS_END_BOUND`]) until no turn task of `uid` that started before now
/// runs here any more: the passes before cancelled them (a turn that started between the
/// last pass's listing and this snapshot is waited for too, at worst up to the bound). One
/// started after (another tab) reads chat.db after the erasure and is not waited for.
async fn wait_for_turns(state: &AppState, uid: &UserId, rid: &str) {
    let running = &state.services.running_turns;
    let cancelled = running.snapshot();
    if running.older_than(uid.as_str(), cancelled) == 0 {
        return;
    }
    let started = std::time::Instant::now();
    let left = running.ended_before(uid.as_str(), cancelled, TURNS_END_BOUND).await;
    if left == 0 {
        tracing::info!(request_id = %rid, waited_ms = started.elapsed().as_millis() as u64, "erasure: the user's cancelled turns ended");
    } else {
        tracing::warn!(
            request_id = %rid,
            turns = telemetry_otlp::int(left),
            bound_secs = telemetry_otlp::int(TURNS_END_BOUND.as_secs()),
            "erasure: turns of the user still running after the bound; erasing once more anyway (a write they make later would outlive the erasure)"
        );
    }
}

/// Has every running actor of `uid` delete its conversation (cancelling its turn) and stop;
/// how many conversations that deleted.
async fn delete_running(state: &AppState, uid: &UserId) -> Result<usize, Error> {
    let actors = ask(&conversations_supervisor(state)?, |reply| ConversationsMsg::OfUser {
        uid: uid.clone(),
        reply,
    })
    .await?;
    let mut deleted = 0;
    for actor in actors {
        // An actor that stopped meanwhile writes nothing more; its rows go with the erasure.
        if let Ok(Ok(true)) = ask(&actor, |reply| ConversationMsg::Delete { reply }).await {
            deleted += 1;
        }
    }
    Ok(deleted)
}
