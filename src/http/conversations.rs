//! `GET /v1/conversations`, `GET|DELETE /v1/conversations/{id}`. Every query is keyed by the
//! signed uid, so another user's conversation answers 404 exactly like an unknown one.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use super::AppState;
use crate::actors::conversation::ConversationMsg;
use crate::auth::Caller;
use crate::error::{ApiError, Error};
use crate::store::key::{ConversationKey, UserId};

pub async fn list(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> Result<Response, ApiError> {
    let rows = state
        .services
        .store
        .list(&UserId::of(&caller))
        .await
        .map_err(|e| e.with_request(&caller.request_id))?;
    Ok(Json(serde_json::json!({ "conversations": rows })).into_response())
}

pub async fn get_one(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let rid = &caller.request_id;
    // A malformed id names no conversation: 404, like any unknown one.
    let Ok(key) = ConversationKey::new(&caller, &id) else {
        return Err(Error::NotFound.with_request(rid));
    };
    match state.services.store.load(&key).await.map_err(|e| e.with_request(rid))? {
        Some(c) => Ok(Json(c).into_response()),
        None => Err(Error::NotFound.with_request(rid)),
    }
}

pub async fn delete_one(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let rid = &caller.request_id;
    let Ok(key) = ConversationKey::new(&caller, &id) else {
        return Err(Error::NotFound.with_request(rid));
    };
    // The conversation's actor deletes it, started for the delete if it is not running. So a
    // delete and a turn of the same conversation are two messages to one actor, never two
    // paths that interleave: a turn that started first is stopped, its later commits are
    // dropped, and the actor answers and then stops; a turn that asks after it reaches either
    // the stopping actor (refused, and asked once more of a fresh one: ask_conversation) or a
    // fresh actor, and a fresh one finds nothing in chat.db. Starting the actor takes the conversation's
    // lease: refused while another instance's live actor holds it (the router retries there,
    // where that actor deletes), and once taken no previous owner can write the conversation
    // back (store::lease, the fence).
    let existed = super::ask_conversation(&state, &key, None, |reply| ConversationMsg::Delete { reply })
        .await
        .and_then(|deleted| deleted)
        .map_err(|e| e.with_request(rid))?;
    if existed {
        Ok(http::StatusCode::NO_CONTENT.into_response())
    } else {
        Err(Error::NotFound.with_request(rid))
    }
}
