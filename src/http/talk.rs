//! `POST /v1/talk/turn`: a room turn for the person who mentioned Tamebi in a Talk room.
//!
//! G1 as on every route: the app proves itself and signs the mentioning person's uid. What is
//! different: the request must carry NO credentials (a Talk webhook has none, and a room turn
//! must not borrow anyone's authority even if the app had one), and the answer is the whole
//! text at once (JSON), not a stream: the app posts it to the room in one message.
//! `wantedTools` says the model tried to use a tool (none was offered): the question needs the
//! person's workspace, and the app says so in their language.
//! The turn itself lives in `crate::talk`.

use axum::body::Bytes;
use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::chat::{MAX_USER_TEXT, admit};
use crate::auth::Caller;
use crate::error::{ApiError, Error};
use crate::talk::{self, RoomTurn};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnRequest {
    room: String,
    message: String,
}

pub async fn turn(State(state): State<AppState>, Extension(caller): Extension<Caller>, body: Bytes) -> Result<Json<Value>, ApiError> {
    let rid = caller.request_id.clone();
    let turn = parse(&caller, &body).map_err(|e| e.with_request(&rid))?;
    // B6: the same per-user share and machine-wide permits as any turn, held until it ends.
    let _held = admit(&state, &caller.uid).map_err(|e| e.with_request(&rid))?;
    let reply = talk::run(&state.services, &caller, turn).await.map_err(|e| {
        tracing::error!(request_id = %rid, error = %crate::auth::redact::redact(&e.to_string()), "room turn failed");
        e.with_request(&rid)
    })?;
    Ok(Json(
        json!({"text": reply.text, "wantedTools": reply.wanted_tools, "requestId": rid}),
    ))
}

fn parse(caller: &Caller, body: &[u8]) -> Result<RoomTurn, Error> {
    // Checked before anything else: a room turn acts for nobody, whatever the app sent.
    if !caller.credentials.is_empty() {
        return Err(Error::BadRequest("a room turn carries no credentials".into()));
    }
    let req: TurnRequest = serde_json::from_slice(body).map_err(|e| Error::BadRequest(format!("room turn body: {e}")))?;
    if !talk::valid_room(&req.room) {
        return Err(Error::BadRequest("room must be 1-32 characters of [A-Za-z0-9]".into()));
    }
    if req.message.trim().is_empty() || req.message.chars().count() > MAX_USER_TEXT {
        return Err(Error::BadRequest("message must be 1-32000 characters".into()));
    }
    Ok(RoomTurn {
        room: req.room,
        message: req.message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::identity::Credentials;
    use crate::store::key::test_caller;

    #[test]
    fn a_room_turn_with_credentials_is_refused() {
        let mut caller = test_caller("alice");
        caller.credentials = Credentials::parse("nextcloud=abc").unwrap();
        let body = br#"{"room":"abc","message":"hi"}"#;
        assert!(matches!(parse(&caller, body), Err(Error::BadRequest(m)) if m.contains("no credentials")));
        assert!(parse(&test_caller("alice"), body).is_ok());
    }

    #[test]
    fn bad_bodies_are_refused() {
        let c = test_caller("alice");
        for b in [
            &br#"{"room":"a/b","message":"hi"}"#[..],
            br#"{"room":"abc","message":"  "}"#,
            br#"{"room":"abc","message":"hi","extra":1}"#,
            br#"{"room":"abc"}"#,
            b"nope",
        ] {
            assert!(parse(&c, b).is_err(), "{}", String::from_utf8_lossy(b));
        }
    }
}
