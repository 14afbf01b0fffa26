//! `POST /webhooks/nextcloud`: Nextcloud's webhook_listeners tell the index that a file
//! changed or went away.
//!
//! The request is authenticated by a shared secret in `X-Tamebi-Webhook-Secret`
//! (compared in constant time with `MCP_WEBHOOK_SECRET`; 401 when wrong or missing, and
//! nothing changes). A written or renamed file is marked stale, a deleted one is removed,
//! by file id only.
//!
//! It must never fetch anything (the payload carries no token, and the index fills only
//! through searches of people who can open the file) and never keep the payload's user or
//! path: only the node id is read, the rest is not even deserialised.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::Index;

pub const PATH: &str = "/webhooks/nextcloud";
pub const SECRET_HEADER: &str = "x-tamebi-webhook-secret";

/// What the handler needs: the index and the configured secret (`None`: every call is
/// refused, because an unauthenticated webhook would let anyone churn the index).
#[derive(Clone)]
pub struct WebhookState {
    pub index: Index,
    pub secret: Option<Arc<str>>,
}

/// The route, ready to be merged into the server's router (outside the bearer layer:
/// Nextcloud's webhook carries no user token, only the shared secret).
pub fn router<S: Clone + Send + Sync + 'static>(state: WebhookState) -> Router<S> {
    Router::new().route(PATH, post(handle)).with_state(state)
}

/// The parts of a webhook_listeners payload we read. Unknown fields (the user, paths,
/// times) are skipped by serde, never held.
#[derive(Deserialize)]
struct Payload {
    event: Event,
}

#[derive(Deserialize)]
struct Event {
    class: String,
    node: Option<Node>,
    source: Option<Node>,
}

#[derive(Deserialize)]
struct Node {
    id: Option<NodeId>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum NodeId {
    Number(i64),
    Text(String),
}

impl NodeId {
    fn value(&self) -> Option<i64> {
        match self {
            NodeId::Number(n) => Some(*n),
            NodeId::Text(s) => s.parse().ok(),
        }
    }
}

/// What a payload asks of the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Stale(i64),
    Gone(i64),
    Ignore,
}

fn action(p: &Payload) -> Action {
    // The short class name: OCP\Files\Events\Node\NodeWrittenEvent → NodeWrittenEvent.
    let class = p.event.class.rsplit('\\').next().unwrap_or("");
    let id = |n: &Option<Node>| n.as_ref().and_then(|n| n.id.as_ref()).and_then(NodeId::value);
    match class {
        "NodeWrittenEvent" | "NodeTouchedEvent" => id(&p.event.node).map_or(Action::Ignore, Action::Stale),
        // Nextcloud's NodeDeletedEvent cannot name the id of a node that is gone; the
        // BeforeNodeDeletedEvent can, so that is the one to register for deletions.
        "BeforeNodeDeletedEvent" | "NodeDeletedEvent" => id(&p.event.node).map_or(Action::Ignore, Action::Gone),
        // A rename keeps the id (the index holds no paths); a copy makes a new id the
        // warm-up will find. Marking the source stale is harmless and covers moves
        // across storages that change content handling.
        "NodeRenamedEvent" | "NodeCopiedEvent" => id(&p.event.source).map_or(Action::Ignore, Action::Stale),
        _ => Action::Ignore,
    }
}

fn secret_ok(expected: Option<&str>, headers: &HeaderMap) -> bool {
    let (Some(expected), Some(given)) = (expected, headers.get(SECRET_HEADER)) else {
        return false;
    };
    // Hash both sides so the comparison is over equal lengths and takes the same time
    // whatever the given value is.
    let a = Sha256::digest(expected.as_bytes());
    let b = Sha256::digest(given.as_bytes());
    bool::from(a.as_slice().ct_eq(b.as_slice()))
}

async fn handle(State(state): State<WebhookState>, headers: HeaderMap, body: Bytes) -> Response {
    if !secret_ok(state.secret.as_deref(), &headers) {
        return (StatusCode::UNAUTHORIZED, axum::Json(serde_json::json!({"error": "unauthorized"}))).into_response();
    }
    let payload: Payload = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(_) => {
            return (
                StatusCode::BAD_REQUEST,
                axum::Json(serde_json::json!({"error": "the body is not a webhook_listeners event"})),
            )
                .into_response();
        }
    };
    let action = action(&payload);
    let result = match action {
        Action::Stale(id) => state.index.with(move |s| s.mark_stale(id)).await.map(|known| ("stale", known)),
        Action::Gone(id) => state.index.with(move |s| s.mark_gone(id)).await.map(|known| ("gone", known)),
        Action::Ignore => Ok(("ignored", false)),
    };
    match result {
        Ok((what, known)) => axum::Json(serde_json::json!({"action": what, "known": known})).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "webhook could not update the index");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                axum::Json(serde_json::json!({"error": "internal error"})),
            )
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Action {
        action(&serde_json::from_str::<Payload>(json).expect("payload"))
    }

    #[test]
    fn events_map_to_marks_by_id() {
        assert_eq!(
            parse(
                r#"{"user":{"uid":"alice"},"time":1,"event":{"class":"OCP\\Files\\Events\\Node\\NodeWrittenEvent","node":{"id":42,"path":"/alice/files/a.md"}}}"#
            ),
            Action::Stale(42)
        );
        assert_eq!(
            parse(r#"{"event":{"class":"OCP\\Files\\Events\\Node\\NodeDeletedEvent","node":{"id":"7","path":"/x"}}}"#),
            Action::Gone(7)
        );
        assert_eq!(
            parse(r#"{"event":{"class":"OCP\\Files\\Events\\Node\\BeforeNodeDeletedEvent","node":{"id":8,"path":"/x"}}}"#),
            Action::Gone(8)
        );
        assert_eq!(
            parse(r#"{"event":{"class":"OCP\\Files\\Events\\Node\\NodeDeletedEvent","node":{"path":"/x"}}}"#),
            Action::Ignore
        );
        assert_eq!(
            parse(r#"{"event":{"class":"OCP\\Files\\Events\\Node\\NodeRenamedEvent","source":{"id":5},"target":{"id":5}}}"#),
            Action::Stale(5)
        );
        assert_eq!(
            parse(r#"{"event":{"class":"OCP\\Files\\Events\\Node\\NodeCreatedEvent","node":{"id":9}}}"#),
            Action::Ignore
        );
        assert_eq!(
            parse(r#"{"event":{"class":"OCP\\Files\\Events\\Node\\NodeWrittenEvent","node":{"path":"/x"}}}"#),
            Action::Ignore
        );
    }

    #[test]
    fn the_secret_must_match_exactly() {
        let mut h = HeaderMap::new();
        assert!(!secret_ok(Some("s3cret"), &h));
        h.insert(SECRET_HEADER, "s3cre".parse().expect("header"));
        assert!(!secret_ok(Some("s3cret"), &h));
        h.insert(SECRET_HEADER, "s3cret".parse().expect("header"));
        assert!(secret_ok(Some("s3cret"), &h));
        assert!(!secret_ok(None, &h), "no configured secret refuses everything");
    }
}
