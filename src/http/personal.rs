//! A person's own assistants (issue #30): `POST /v1/assistants`, `PUT|DELETE
//! /v1/assistants/{id}`, `POST /v1/assistants/{id}/share` (listing is `GET /v1/assistants`,
//! `http::assistants`). Signed as the user (G1): the owner is the signed uid, never a field.
//!
//! What it enforces, server side: an allow-list within what the admin allows personal
//! assistants (`registry::Registry::check_personal`); an edit starts a new version, so a
//! shared assistant needs approval again before its group sees the change; a proposal goes
//! only to a group the app says the person is in on this request. Another person's assistant
//! is "not found", exactly like one that does not exist. Every refusal is audited.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;

use super::AppState;
use super::registry::ProposalView;
use crate::auth::Caller;
use crate::error::{ApiError, Error};
use crate::registry::{MAX_PERSONAL, PersonalSpec, is_personal_id, new_personal_id};
use crate::store::audit::{Entry, Kind, Outcome};
use crate::store::key::UserId;

async fn audit(state: &AppState, caller: &Caller, outcome: Outcome, what: &str, detail: String) {
    let row = Entry::of(Kind::Registry, outcome, caller)
        .tool("personal", what)
        .detail(detail)
        .build();
    state.services.audit.record(row).await;
}

/// Refuses with `error`; the reason goes to audit.db, the caller gets the code's fixed message.
async fn refuse(state: &AppState, caller: &Caller, what: &str, error: Error) -> ApiError {
    audit(state, caller, Outcome::Refused, what, error.to_string()).await;
    tracing::info!(request_id = %caller.request_id, refused = %error, "personal assistant change refused");
    error.with_request(&caller.request_id)
}

async fn spec(state: &AppState, caller: &Caller, what: &str, body: &[u8]) -> Result<PersonalSpec, ApiError> {
    let spec: PersonalSpec = match serde_json::from_slice(body) {
        Ok(s) => s,
        Err(e) => return Err(refuse(state, caller, what, Error::BadRequest(format!("body: {e}"))).await),
    };
    if let Err(why) = state.services.registry.check_personal(&spec).await {
        return Err(refuse(state, caller, what, Error::BadRequest(why)).await);
    }
    Ok(spec)
}

/// The caller's own assistant `id` (None: not theirs, or none at all).
async fn own(state: &AppState, caller: &Caller, id: &str) -> Result<Option<crate::store::registry::PersonalRow>, ApiError> {
    if !is_personal_id(id) {
        return Ok(None);
    }
    let row = state
        .services
        .registry
        .store()
        .personal(id)
        .await
        .map_err(|e| e.with_request(&caller.request_id))?;
    Ok(row.filter(|r| r.uid == caller.uid))
}

/// `{"assistant": …}`: the assistant as it is stored now.
async fn view(state: &AppState, caller: &Caller, id: &str) -> Result<serde_json::Value, ApiError> {
    let row = state
        .services
        .registry
        .store()
        .personal(id)
        .await
        .map_err(|e| e.with_request(&caller.request_id))?;
    Ok(serde_json::json!({ "assistant": row.as_ref().and_then(ProposalView::of) }))
}

pub async fn create(State(state): State<AppState>, Extension(caller): Extension<Caller>, body: Bytes) -> Result<Response, ApiError> {
    let spec = spec(&state, &caller, "create", &body).await?;
    let store = state.services.registry.store();
    let uid = UserId::of(&caller);
    let count = store.personal_of(&uid).await.map_err(|e| e.with_request(&caller.request_id))?.len();
    if count >= MAX_PERSONAL {
        return Err(refuse(
            &state,
            &caller,
            "create",
            Error::BadRequest(format!("at most {MAX_PERSONAL} personal assistants")),
        )
        .await);
    }
    let id = new_personal_id();
    let json = serde_json::to_string(&spec).map_err(|e| Error::Internal(e.to_string()).with_request(&caller.request_id))?;
    store
        .create_personal(&uid, &id, &json)
        .await
        .map_err(|e| e.with_request(&caller.request_id))?;
    audit(
        &state,
        &caller,
        Outcome::Ok,
        &id,
        format!("created; tools {}", spec.tools.join(" ")),
    )
    .await;
    Ok((StatusCode::CREATED, Json(view(&state, &caller, &id).await?)).into_response())
}

pub async fn update(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    if own(&state, &caller, &id).await?.is_none() {
        return Err(refuse(&state, &caller, &id, Error::NotFound).await);
    }
    let spec = spec(&state, &caller, &id, &body).await?;
    let store = state.services.registry.store();
    let json = serde_json::to_string(&spec).map_err(|e| Error::Internal(e.to_string()).with_request(&caller.request_id))?;
    if !store
        .update_personal(&UserId::of(&caller), &id, &json)
        .await
        .map_err(|e| e.with_request(&caller.request_id))?
    {
        return Err(refuse(&state, &caller, &id, Error::NotFound).await);
    }
    audit(&state, &caller, Outcome::Ok, &id, format!("edited; tools {}", spec.tools.join(" "))).await;
    Ok(Json(view(&state, &caller, &id).await?).into_response())
}

pub async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let removed = is_personal_id(&id)
        && state
            .services
            .registry
            .store()
            .delete_personal(&UserId::of(&caller), &id)
            .await
            .map_err(|e| e.with_request(&caller.request_id))?;
    if !removed {
        return Err(refuse(&state, &caller, &id, Error::NotFound).await);
    }
    audit(&state, &caller, Outcome::Ok, &id, "deleted".into()).await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ShareBody {
    /// The group to propose it to; null withdraws the proposal.
    group: Option<String>,
}

pub async fn share(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(groups): Extension<crate::auth::identity::Groups>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: ShareBody = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return Err(refuse(&state, &caller, &id, Error::BadRequest(format!("body: {e}"))).await),
    };
    if own(&state, &caller, &id).await?.is_none() {
        return Err(refuse(&state, &caller, &id, Error::NotFound).await);
    }
    // Only to a group the app says the person is in now (never one they merely name).
    if let Some(group) = &req.group
        && !groups.0.contains(group)
    {
        return Err(refuse(&state, &caller, &id, Error::Forbidden(format!("not a member of group {group:?}"))).await);
    }
    let store = state.services.registry.store();
    store
        .share_personal(&UserId::of(&caller), &id, req.group.as_deref())
        .await
        .map_err(|e| e.with_request(&caller.request_id))?;
    audit(
        &state,
        &caller,
        Outcome::Ok,
        &id,
        match &req.group {
            Some(g) => format!("proposed to group {g}; waits for an admin's approval"),
            None => "proposal withdrawn".into(),
        },
    )
    .await;
    Ok(Json(view(&state, &caller, &id).await?).into_response())
}
