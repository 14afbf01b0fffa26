//! The crate's error type and the one mapping from errors to what a user may see.
//!
//! Users see one of a few fixed messages plus the request id (seed decision: a deny-list
//! filter of "technical" strings always misses one), and the body names the kind of refusal
//! with a fixed [`ErrorCode`] for the proxies in front, which show their own text for it.
//! Internals go to the logs, redacted.
//! [`Error`] is a request's failure; [`TurnError`] is why a running turn stopped (it keeps the
//! cause for the logs and the turn span; `TurnError::public_message` is what the user sees).

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
    /// G1: the request is signed in the earlier form, which did not cover the method, path and
    /// query (issue #27). Refused like any wrong signature, under its own code, because the fix
    /// is the operator's: update the Nextcloud app.
    #[error(
        "signature_outdated: signed in the earlier form, without method, path and query: the Nextcloud app is older than this orchestrator"
    )]
    SignatureOutdated,
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
    /// A registry change that clashes: the name is taken, belongs to the operator's
    /// configuration (read-only), or the entry changed since it was looked at (issue #30).
    #[error("registry conflict: {0}")]
    RegistryConflict(String),
    /// A user message under an id another message of the conversation already has.
    #[error("message id {0} is already used in this conversation")]
    MessageIdTaken(String),
    /// G3: a continuation that leaves one of its message's approvals undecided.
    #[error("approval {0} of this message is undecided")]
    ApprovalsUndecided(String),
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
    /// Something this instance needs for every request (the shared replay records) cannot be
    /// reached right now: refused (fail closed), but as a passing outage, with a retry delay.
    #[error("temporarily unavailable: {reason}")]
    Unavailable { reason: String, retry_after_secs: u64 },
    /// Another instance owns this conversation (its lease, `store::lease`): the router
    /// retries there, or here after the delay (when the owner died, its lease expires).
    #[error("conversation owned by another instance")]
    OwnedElsewhere { retry_after_secs: u64 },
    /// A tool server did not answer within `TAMEBI_TOOL_TIMEOUT_SECS` (504): whatever it was
    /// asked may or may not have been done.
    #[error("tool server timed out")]
    UpstreamTimeout,
    /// A tool server could not be reached, or answered with something unusable (502).
    #[error("tool server failed: {0}")]
    Upstream(String),
    #[error("storage: {0}")]
    Storage(#[from] rusqlite::Error),
    #[error("postgres: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    #[error("postgres pool: {0}")]
    PostgresPool(#[from] deadpool_postgres::PoolError),
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

/// Generates [`ErrorCode`] with everything that is one fact per code (wire name, status,
/// message) on one line, so no table of codes can miss one (`ALL` included).
macro_rules! error_codes {
    ($(#[$doc:meta])* pub enum ErrorCode { $($variant:ident = $wire:literal, $status:ident, $message:expr;)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum ErrorCode {
            $($variant,)*
        }

        impl ErrorCode {
            /// Every code, for the docs check and the proxies' tables.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The code on the wire: a contract with the proxies, never renamed.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $wire,)*
                }
            }

            /// The HTTP status every answer with this code has (docs/api.md).
            pub fn status(self) -> StatusCode {
                match self {
                    $(ErrorCode::$variant => StatusCode::$status,)*
                }
            }

            /// The fixed message our own body carries with this code.
            pub fn message(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $message,)*
                }
            }
        }
    };
}

error_codes! {
    /// The machine-readable kind of a refusal: `error.code` in every error body (docs/api.md). A
    /// closed set on purpose: a proxy in front (the Nextcloud app, the dev host) may only show its
    /// own fixed text, never ours, so it needs a key it can look up in its own table, one that can
    /// never carry anything variable. Several errors share a code when the user sees one text.
    pub enum ErrorCode {
        BadRequest = "bad_request", BAD_REQUEST, messages::BAD_REQUEST;
        Unauthorized = "unauthorized", UNAUTHORIZED, messages::UNAUTHORIZED;
        SignatureOutdated = "signature_outdated", UNAUTHORIZED, messages::SIGNATURE_OUTDATED;
        Forbidden = "forbidden", FORBIDDEN, messages::FORBIDDEN;
        NotFound = "not_found", NOT_FOUND, messages::NOT_FOUND;
        MethodNotAllowed = "method_not_allowed", METHOD_NOT_ALLOWED, messages::METHOD_NOT_ALLOWED;
        RequestTimeout = "request_timeout", REQUEST_TIMEOUT, messages::TIMEOUT;
        ReplyInProgress = "reply_in_progress", CONFLICT, messages::CONFLICT;
        AssistantBound = "assistant_bound", CONFLICT, messages::ASSISTANT_BOUND;
        AssistantGone = "assistant_gone", CONFLICT, messages::ASSISTANT_GONE;
        MessageIdTaken = "message_id_taken", CONFLICT, messages::MESSAGE_ID_TAKEN;
        RegistryConflict = "registry_conflict", CONFLICT, messages::REGISTRY_CONFLICT;
        ApprovalsUndecided = "approvals_undecided", BAD_REQUEST, messages::APPROVALS_UNDECIDED;
        TooLarge = "too_large", PAYLOAD_TOO_LARGE, messages::TOO_LARGE;
        HeadersTooLarge = "headers_too_large", REQUEST_HEADER_FIELDS_TOO_LARGE, messages::HEADERS_TOO_LARGE;
        Overloaded = "overloaded", TOO_MANY_REQUESTS, messages::OVERLOADED;
        TooManyRunning = "too_many_running", TOO_MANY_REQUESTS, messages::TOO_MANY_RUNNING;
        TooFast = "too_fast", TOO_MANY_REQUESTS, messages::TOO_FAST;
        Unavailable = "unavailable", SERVICE_UNAVAILABLE, messages::UNAVAILABLE;
        OwnedElsewhere = "owned_elsewhere", SERVICE_UNAVAILABLE, messages::MOVING;
        ToolTimeout = "tool_timeout", GATEWAY_TIMEOUT, messages::UPSTREAM_TIMEOUT;
        ToolUnreachable = "tool_unreachable", BAD_GATEWAY, messages::UPSTREAM;
        Internal = "internal", INTERNAL_SERVER_ERROR, messages::INTERNAL;
    }
}

impl ErrorCode {
    /// The code of a status produced outside our handlers (a framework rejection).
    fn for_status(status: StatusCode) -> ErrorCode {
        match status.as_u16() {
            401 => ErrorCode::Unauthorized,
            403 => ErrorCode::Forbidden,
            404 => ErrorCode::NotFound,
            405 => ErrorCode::MethodNotAllowed,
            408 => ErrorCode::RequestTimeout,
            409 => ErrorCode::ReplyInProgress,
            413 => ErrorCode::TooLarge,
            431 => ErrorCode::HeadersTooLarge,
            429 => ErrorCode::Overloaded,
            503 => ErrorCode::Unavailable,
            s if s >= 500 => ErrorCode::Internal,
            _ => ErrorCode::BadRequest,
        }
    }
}

/// The fixed user-facing message for each kind of failure.
pub mod messages {
    pub const BAD_REQUEST: &str = "The request was not understood.";
    pub const UNAUTHORIZED: &str = "Not signed in.";
    /// For the person, who cannot fix it, and for the operator, who reads it in the logs.
    pub const SIGNATURE_OUTDATED: &str =
        "The Tamebi app in Nextcloud is older than its server and must be updated. Please tell your administrator.";
    pub const FORBIDDEN: &str = "This action is not allowed.";
    pub const NOT_FOUND: &str = "Not found.";
    pub const CONFLICT: &str = "A reply is already being written in this conversation.";
    pub const ASSISTANT_BOUND: &str =
        "This conversation belongs to another assistant. Start a new conversation to talk to a different one.";
    pub const ASSISTANT_GONE: &str = "The assistant of this conversation is no longer offered. Start a new conversation.";
    pub const MESSAGE_ID_TAKEN: &str = "Another message of this conversation already has this id. Send the message under a new id.";
    pub const REGISTRY_CONFLICT: &str =
        "This name is already taken, is set in the server's own configuration, or the entry changed meanwhile. Reload and try again.";
    pub const APPROVALS_UNDECIDED: &str = "Decide every approval this reply asked for, then send them together.";
    pub const TOO_LARGE: &str = "The request is too large.";
    pub const HEADERS_TOO_LARGE: &str = "The request headers are too large.";
    pub const METHOD_NOT_ALLOWED: &str = "This method is not allowed here.";
    pub const TIMEOUT: &str = "The request took too long to arrive.";
    pub const OVERLOADED: &str = "Too many requests. Please wait a moment.";
    pub const TOO_MANY_RUNNING: &str = "You already have several replies being written. Wait for one to finish, then send again.";
    pub const TOO_FAST: &str = "You are sending messages faster than allowed. Wait a moment, then send again.";
    pub const UNAVAILABLE: &str = "The service is restarting. Please try again in a moment.";
    pub const MOVING: &str = "This conversation is being served by another server. Please try again in a moment.";
    pub const INTERNAL: &str = "Something went wrong. Please try again.";
    /// A reply cut off because this server no longer holds its conversation: true whether it
    /// moved to another server, was deleted or erased there, or the lease could not be
    /// confirmed (the database unreachable): so it names no single cause.
    pub const STOPPED_ELSEWHERE: &str = "This reply was stopped: this server no longer holds the conversation (it moved to another server or was deleted). Reload the conversation in a moment.";
    /// Not "try again": a request that may have had an effect (a mail sent) must be checked first.
    pub const UPSTREAM_TIMEOUT: &str = "The tool did not answer in time. It is not known whether it did anything: check (for a mail: your Sent folder) before trying again.";
    pub const UPSTREAM: &str = "The tool could not be reached or gave no usable answer. It is not known whether it did anything: check (for a mail: your Sent folder) before trying again.";
    /// A turn stopped at the operator's token bound (`TAMEBI_TURN_MAX_TOKENS`).
    pub const TOKEN_BOUND: &str = "This answer stopped here: it reached the token limit set for one turn. Ask again to continue.";
    /// A turn stopped because no client read its stream for `TAMEBI_TURN_ORPHAN_GRACE_SECS`
    /// (the page was closed, or Stop pressed): stored on the message as well.
    pub const STOPPED_UNREAD: &str = "This reply was stopped: it was no longer being read (the page was closed or lost its connection). Send your message again to continue.";
    /// A turn stopped by its person (`POST /v1/chat/{id}/stop`, the island's Stop button):
    /// stored on the message as well.
    pub const STOPPED_BY_USER: &str = "You stopped this reply. Send your message again to continue.";
}

/// Why a turn ended before its finish. The variant and its cause go to the logs and the turn
/// span; the user sees only [`TurnError::public_message`] (with the request id).
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error("the model call failed: {0}")]
    ModelCall(crate::model::ModelError),
    #[error("the model stream failed: {0}")]
    ModelStream(crate::model::ModelError),
    /// Nobody consumes the turn's events any more: its conversation crashed or was deleted.
    #[error("the conversation stopped listening to this turn")]
    Abandoned,
    /// A bug; the turn still ends cleanly (the conversation is never left waiting).
    #[error("the turn panicked")]
    Panicked,
    /// Shutdown began, or the conversation was deleted while the turn ran.
    #[error("the turn was cancelled")]
    Cancelled,
    #[error("the turn used {used} tokens, its bound is {max}")]
    TokenBound { used: u64, max: u64 },
    /// No client read the turn's stream for the orphan grace while it waited for the model
    /// (`TAMEBI_TURN_ORPHAN_GRACE_SECS`).
    #[error("nobody read the turn's stream for {grace_secs} s")]
    Orphaned { grace_secs: u64 },
    /// Its person asked it to stop (`POST /v1/chat/{id}/stop`) while it waited for the model.
    #[error("the person stopped the turn")]
    Stopped,
}

impl TurnError {
    /// The fixed message a user sees for this failure.
    pub fn public_message(&self) -> &'static str {
        match self {
            // Every endpoint (and the fallback) rate-limited us: the person may send again soon.
            TurnError::ModelCall(crate::model::ModelError::RateLimited(_)) => messages::OVERLOADED,
            TurnError::ModelCall(_) | TurnError::ModelStream(_) | TurnError::Abandoned | TurnError::Panicked => messages::INTERNAL,
            TurnError::Cancelled => messages::UNAVAILABLE,
            TurnError::TokenBound { .. } => messages::TOKEN_BOUND,
            TurnError::Orphaned { .. } => messages::STOPPED_UNREAD,
            TurnError::Stopped => messages::STOPPED_BY_USER,
        }
    }

    /// The `error.type` of the turn span.
    pub fn kind(&self) -> &'static str {
        match self {
            TurnError::ModelCall(_) => "turn.model_call",
            TurnError::ModelStream(_) => "turn.model_stream",
            TurnError::Abandoned => "turn.abandoned",
            TurnError::Panicked => "turn.panic",
            TurnError::Cancelled => "turn.cancelled",
            TurnError::TokenBound { .. } => "turn.token_bound",
            TurnError::Orphaned { .. } => "turn.orphaned",
            TurnError::Stopped => "turn.stopped",
        }
    }

    /// Whether this is an incident (logged as an error) rather than an expected stop. A turn
    /// abandoned by a crashed conversation is not one: the crash itself is reported.
    pub fn is_incident(&self) -> bool {
        matches!(self, TurnError::ModelCall(_) | TurnError::ModelStream(_) | TurnError::Panicked)
    }
}

impl Error {
    /// The status of the answer: the one of its code, so the two never disagree.
    pub fn status(&self) -> StatusCode {
        self.code().status()
    }

    /// What kind of refusal this is, for the body's `code`.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::BadRequest(_) => ErrorCode::BadRequest,
            Error::Unauthorized(_) => ErrorCode::Unauthorized,
            Error::SignatureOutdated => ErrorCode::SignatureOutdated,
            Error::Forbidden(_) => ErrorCode::Forbidden,
            Error::NotFound => ErrorCode::NotFound,
            Error::Conflict(_) => ErrorCode::ReplyInProgress,
            Error::AssistantBound(_) => ErrorCode::AssistantBound,
            Error::AssistantGone(_) => ErrorCode::AssistantGone,
            Error::MessageIdTaken(_) => ErrorCode::MessageIdTaken,
            Error::RegistryConflict(_) => ErrorCode::RegistryConflict,
            Error::ApprovalsUndecided(_) => ErrorCode::ApprovalsUndecided,
            Error::TooLarge => ErrorCode::TooLarge,
            Error::BodyTimeout => ErrorCode::RequestTimeout,
            Error::Overloaded => ErrorCode::Overloaded,
            Error::UserTurnLimit {
                which: TurnLimit::Running, ..
            } => ErrorCode::TooManyRunning,
            Error::UserTurnLimit {
                which: TurnLimit::Rate, ..
            } => ErrorCode::TooFast,
            Error::ShuttingDown | Error::Unavailable { .. } => ErrorCode::Unavailable,
            Error::OwnedElsewhere { .. } => ErrorCode::OwnedElsewhere,
            Error::UpstreamTimeout => ErrorCode::ToolTimeout,
            Error::Upstream(_) => ErrorCode::ToolUnreachable,
            Error::Storage(_) | Error::Postgres(_) | Error::PostgresPool(_) | Error::Internal(_) => ErrorCode::Internal,
        }
    }

    pub fn public_message(&self) -> &'static str {
        self.code().message()
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
            Error::UserTurnLimit { retry_after_secs, .. }
            | Error::OwnedElsewhere { retry_after_secs }
            | Error::Unavailable { retry_after_secs, .. } => Some(retry_after_secs),
            _ => None,
        };
        let mut response = shaped(status, self.error.code(), &self.request_id, retry_after);
        if let Some(secs) = retry_after {
            response.headers_mut().insert(http::header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Error::OwnedElsewhere { .. } = self.error {
            // Tells a router this 503 is "try another instance", not "this one is down".
            response.headers_mut().insert(OWNED_ELSEWHERE_HEADER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// Set on the 503 of [`Error::OwnedElsewhere`] (docs/api.md, docs/scale-out.md).
pub const OWNED_ELSEWHERE_HEADER: &str = "x-tamebi-owned-elsewhere";

/// An error response for `status` in the fixed shape, for errors that were not an [`Error`].
pub fn error_response(status: StatusCode, request_id: &str) -> Response {
    shaped(status, ErrorCode::for_status(status), request_id, None)
}

/// The body of [`error_response`] as bytes, for an answer written below the router (the
/// refusals of hyper's parser, `http::server`).
pub fn error_body(status: StatusCode, request_id: &str) -> Vec<u8> {
    body_of(ErrorCode::for_status(status), request_id).to_string().into_bytes()
}

fn body_of(code: ErrorCode, request_id: &str) -> serde_json::Value {
    serde_json::json!({
        "error": { "message": code.message(), "requestId": request_id, "code": code.as_str() }
    })
}

fn shaped(status: StatusCode, code: ErrorCode, request_id: &str, retry_after: Option<u64>) -> Response {
    let mut body = body_of(code, request_id);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelError;

    #[test]
    fn a_passing_outage_is_a_503_with_a_delay_and_no_detail() {
        let response = Error::Unavailable {
            reason: "replay records: connection refused to db.internal".into(),
            retry_after_secs: 1,
        }
        .with_request("req_1")
        .into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers().get(http::header::RETRY_AFTER).unwrap(), "1");
        assert!(
            response.headers().get(OWNED_ELSEWHERE_HEADER).is_none(),
            "not a 'try another instance'"
        );
    }

    async fn body_of(error: Error) -> (StatusCode, serde_json::Value) {
        let response = error.with_request("req_7").into_response();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), 4096).await.unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn each_refusal_names_its_own_code_beside_its_fixed_message() {
        let cases = [
            (Error::MessageIdTaken("m1 of /etc/passwd".into()), 409, "message_id_taken"),
            (Error::ApprovalsUndecided("call_9".into()), 400, "approvals_undecided"),
            (Error::Conflict("a turn is already running".into()), 409, "reply_in_progress"),
            (Error::AssistantBound("hr".into()), 409, "assistant_bound"),
            (
                Error::UserTurnLimit {
                    which: TurnLimit::Rate,
                    retry_after_secs: 3,
                },
                429,
                "too_fast",
            ),
            (Error::OwnedElsewhere { retry_after_secs: 1 }, 503, "owned_elsewhere"),
            (Error::UpstreamTimeout, 504, "tool_timeout"),
            (Error::SignatureOutdated, 401, "signature_outdated"),
            (Error::Internal("disk full at /var/lib".into()), 500, "internal"),
        ];
        for (error, status, code) in cases {
            let message = error.public_message();
            let (got_status, body) = body_of(error).await;
            assert_eq!(got_status.as_u16(), status, "{code}");
            assert_eq!(body["error"]["code"], code);
            assert_eq!(body["error"]["message"], message);
            assert_eq!(body["error"]["requestId"], "req_7");
            let keys: Vec<&String> = body["error"].as_object().unwrap().keys().collect();
            assert!(
                keys.iter()
                    .all(|k| ["code", "message", "requestId", "retryAfter"].contains(&k.as_str())),
                "nothing but the fixed fields: {body}"
            );
        }
    }

    #[tokio::test]
    async fn a_framework_rejection_gets_the_code_of_its_status() {
        let response = error_response(StatusCode::METHOD_NOT_ALLOWED, "req_8");
        let bytes = axum::body::to_bytes(response.into_body(), 4096).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["error"]["code"], "method_not_allowed");
        assert_eq!(body["error"]["message"], messages::METHOD_NOT_ALLOWED);
    }

    #[test]
    fn codes_are_distinct_snake_case_and_documented() {
        let api = include_str!("../docs/api.md");
        let mut seen = std::collections::HashSet::new();
        for &code in ErrorCode::ALL {
            let name = code.as_str();
            assert!(seen.insert(name), "{name} twice");
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{name}");
            assert!(api.contains(&format!("| `{name}` |")), "docs/api.md lists no row for {name}");
        }
    }

    #[test]
    fn each_documented_code_has_the_status_of_its_row() {
        let api = include_str!("../docs/api.md");
        for &code in ErrorCode::ALL {
            let cell = format!("| `{}` |", code.as_str());
            for row in api.lines().filter(|l| l.starts_with("| ") && l.contains(&cell)) {
                let status_cell = row.trim_start_matches("| ").split(" | ").next().unwrap_or_default();
                let status = code.status().as_u16();
                // "429 + Retry-After (...)" names its status; "other 5xx" names its class.
                let named: String = status_cell.chars().take_while(char::is_ascii_digit).collect();
                let ok = if named.is_empty() {
                    status_cell.contains(&format!("{}xx", status / 100))
                } else {
                    named == status.to_string()
                };
                assert!(
                    ok,
                    "docs/api.md row of {} says {status_cell:?}, the code has {status}",
                    code.as_str()
                );
                assert!(
                    row.contains(&format!("`{}`", code.message())),
                    "docs/api.md row of {} does not give its message",
                    code.as_str()
                );
            }
        }
    }

    #[test]
    fn turn_errors_keep_their_cause_but_show_only_fixed_messages() {
        let failed = TurnError::ModelStream(ModelError::Protocol("bearer abc.def leaked in a chunk".into()));
        assert_eq!(failed.public_message(), messages::INTERNAL);
        assert!(failed.to_string().contains("malformed"), "the cause stays for the logs: {failed}");
        assert!(failed.is_incident());
        assert_eq!(TurnError::Cancelled.public_message(), messages::UNAVAILABLE);
        assert_eq!(TurnError::TokenBound { used: 9, max: 5 }.public_message(), messages::TOKEN_BOUND);
        assert_eq!(TurnError::Orphaned { grace_secs: 30 }.public_message(), messages::STOPPED_UNREAD);
        assert_eq!(TurnError::Stopped.public_message(), messages::STOPPED_BY_USER);
        for quiet in [
            TurnError::Abandoned,
            TurnError::Cancelled,
            TurnError::TokenBound { used: 9, max: 5 },
            TurnError::Orphaned { grace_secs: 30 },
            TurnError::Stopped,
        ] {
            assert!(!quiet.is_incident(), "{quiet}");
        }
        assert_eq!(TurnError::Panicked.kind(), "turn.panic");
    }
}
