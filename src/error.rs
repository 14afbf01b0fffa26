//! The crate's error type and the one mapping from errors to what a user may see.
//!
//! Users see one of a few fixed messages plus the request id (seed decision: a deny-list
//! filter of "technical" strings always misses one). Internals go to the logs, redacted.

use axum::Json;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// What went wrong, by how it is handled.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("bad request: {0}")]
    BadRequest(String),
    #[error("not signed in: {0}")]
    Unauthorized(String),
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("not found")]
    NotFound,
    #[error("conflict: {0}")]
    Conflict(String),
    /// A conversation keeps the assistant it was created with.
    #[error("conversation is bound to assistant {0}")]
    AssistantBound(String),
    /// The conversation's assistant is no longer in the operator's file.
    #[error("assistant {0} is no longer configured")]
    AssistantGone(String),
    #[error("payload too large")]
    TooLarge,
    #[error("the request body did not arrive in time")]
    BodyTimeout,
    #[error("overloaded")]
    Overloaded,
    /// B6: this user's own share is used up (see `http::fairness`); try again after the delay.
    #[error("user turn limit ({which})")]
    UserTurnLimit { which: TurnLimit, retry_after_secs: u64 },
    #[error("shutting down")]
    ShuttingDown,
    #[error("storage: {0}")]
    Storage(#[from] rusqlite::Error),
    #[error("internal: {0}")]
    Internal(String),
}

/// Which per-user limit refused a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnLimit {
    /// Too many of the user's turns are running at once.
    Running,
    /// The user's turn rate is used up for now.
    Rate,
}

impl std::fmt::Display for TurnLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TurnLimit::Running => "running turns",
            TurnLimit::Rate => "turn rate",
        })
    }
}

/// The fixed user-facing message for each kind of failure.
pub mod messages {
    pub const BAD_REQUEST: &str = "The request was not understood.";
    pub const UNAUTHORIZED: &str = "Not signed in.";
    pub const FORBIDDEN: &str = "This action is not allowed.";
    pub const NOT_FOUND: &str = "Not found.";
    pub const CONFLICT: &str = "A reply is already being written in this conversation.";
    pub const ASSISTANT_BOUND: &str =
        "This conversation belongs to another assistant. Start a new conversation to talk to a different one.";
    pub const ASSISTANT_GONE: &str = "The assistant of this conversation is no longer offered. Start a new conversation.";
    pub const TOO_LARGE: &str = "The request is too large.";
    pub const METHOD_NOT_ALLOWED: &str = "This method is not allowed here.";
    pub const TIMEOUT: &str = "The request took too long to arrive.";
    pub const OVERLOADED: &str = "Too many requests. Please wait a moment.";
    pub const TOO_MANY_RUNNING: &str = "You already have several replies being written. Wait for one to finish, then send again.";
    pub const TOO_FAST: &str = "You are sending messages faster than allowed. Wait a moment, then send again.";
    pub const UNAVAILABLE: &str = "The service is restarting. Please try again in a moment.";
    pub const INTERNAL: &str = "Something went wrong. Please try again.";
}

impl Error {
    pub fn status(&self) -> StatusCode {
        match self {
            Error::BadRequest(_) => StatusCode::BAD_REQUEST,
            Error::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Error::Forbidden(_) => StatusCode::FORBIDDEN,
            Error::NotFound => StatusCode::NOT_FOUND,
            Error::Conflict(_) | Error::AssistantBound(_) | Error::AssistantGone(_) => StatusCode::CONFLICT,
            Error::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Error::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            Error::Overloaded | Error::UserTurnLimit { .. } => StatusCode::TOO_MANY_REQUESTS,
            Error::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            Error::Storage(_) | Error::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    pub fn public_message(&self) -> &'static str {
        match self {
            Error::BadRequest(_) => messages::BAD_REQUEST,
            Error::Unauthorized(_) => messages::UNAUTHORIZED,
            Error::Forbidden(_) => messages::FORBIDDEN,
            Error::NotFound => messages::NOT_FOUND,
            Error::Conflict(_) => messages::CONFLICT,
            Error::AssistantBound(_) => messages::ASSISTANT_BOUND,
            Error::AssistantGone(_) => messages::ASSISTANT_GONE,
            Error::TooLarge => messages::TOO_LARGE,
            Error::BodyTimeout => messages::TIMEOUT,
            Error::Overloaded => messages::OVERLOADED,
            Error::UserTurnLimit {
                which: TurnLimit::Running, ..
            } => messages::TOO_MANY_RUNNING,
            Error::UserTurnLimit {
                which: TurnLimit::Rate, ..
            } => messages::TOO_FAST,
            Error::ShuttingDown => messages::UNAVAILABLE,
            Error::Storage(_) | Error::Internal(_) => messages::INTERNAL,
        }
    }

    /// Attaches the request id, making it something an HTTP handler can return.
    pub fn with_request(self, request_id: &str) -> ApiError {
        ApiError {
            error: self,
            request_id: request_id.to_string(),
        }
    }
}

/// An error on its way to an HTTP response: fixed message, request id, nothing else.
#[derive(Debug)]
pub struct ApiError {
    pub error: Error,
    pub request_id: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.error.status();
        // Bad input is the caller's problem, not an incident: log it quietly.
        if status.is_server_error() {
            tracing::error!(request_id = %self.request_id, error = %crate::auth::redact::redact(&self.error.to_string()), "request failed");
        } else {
            tracing::info!(request_id = %self.request_id, status = status.as_u16(), error = %crate::auth::redact::redact(&self.error.to_string()), "request refused");
        }
        let retry_after = match self.error {
            Error::UserTurnLimit { retry_after_secs, .. } => Some(retry_after_secs),
            _ => None,
        };
        let mut response = shaped(status, self.error.public_message(), &self.request_id, retry_after);
        if let Some(secs) = retry_after {
            response.headers_mut().insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// The fixed message for a status produced outside our handlers (a framework rejection).
pub fn message_for_status(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => messages::UNAUTHORIZED,
        403 => messages::FORBIDDEN,
        404 => messages::NOT_FOUND,
        405 => messages::METHOD_NOT_ALLOWED,
        408 => messages::TIMEOUT,
        409 => messages::CONFLICT,
        413 => messages::TOO_LARGE,
        429 => messages::OVERLOADED,
        503 => messages::UNAVAILABLE,
        s if s >= 500 => messages::INTERNAL,
        _ => messages::BAD_REQUEST,
    }
}

/// An error response for `status` in the fixed shape, for errors that were not an [`Error`].
pub fn error_response(status: StatusCode, request_id: &str) -> Response {
    shaped(status, message_for_status(status), request_id, None)
}

fn shaped(status: StatusCode, message: &str, request_id: &str, retry_after: Option<u64>) -> Response {
    let mut body = serde_json::json!({
        "error": { "message": message, "requestId": request_id }
    });
    if let Some(secs) = retry_after {
        // Also in the body: the chat transport in the browser only sees the body.
        body["error"]["retryAfter"] = secs.into();
    }
    let mut response = (status, Json(body)).into_response();
    if let Ok(v) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert("x-request-id", v);
    }
    response
}

/// The text of an SSE `error` part: a fixed message and the request id, nothing else.
pub fn stream_error_text(message: &str, request_id: &str) -> String {
    format!("{message} (request id: {request_id})")
}
