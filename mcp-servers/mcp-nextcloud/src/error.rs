//! The crate's one error enum and its mapping to the wire.
//!
//! Each variant says how it is handled. Tool failures reach the caller as a tool result with
//! `isError: true` and `{"error": {"kind", "message"}}`; the orchestrator relies on the five
//! kinds; a write whose read-back contradicts Nextcloud's success is one of them too
//! (`conflict`). 403 and 404 from Nextcloud are deliberately the same `not_found`: telling them apart
//! would confirm that something the caller may not see exists. Messages never carry upstream
//! bodies, tokens or internal details; those go to the logs (without credentials) only.

use serde::Serialize;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Invalid configuration at startup (exit code 2).
    #[error("{0}")]
    Config(String),
    /// Bad tool input, refused before any request reaches Nextcloud.
    #[error("{0}")]
    InvalidArgument(String),
    /// Nextcloud answered 401: the caller's session or token is no longer valid.
    #[error("the Nextcloud session expired; sign in again")]
    AuthExpired,
    /// Nextcloud answered 403 or 404 (never told apart).
    #[error("not found or not accessible")]
    NotFound,
    /// Nextcloud answered 409 or 412, e.g. the target already exists.
    #[error("{0}")]
    Conflict(String),
    /// 5xx, timeouts and connection failures: trying again later may work.
    #[error("{0}")]
    Retryable(String),
    /// Nextcloud answered a write with success, but reading back what it now holds shows
    /// something else, or the read-back itself failed. The message says what Nextcloud holds.
    /// On the wire it is `conflict`, never `retryable`: the write may have happened, and
    /// trying it again could do it twice.
    #[error("{0}")]
    Unconfirmed(String),
}

/// The error kinds on the wire, exactly as the orchestrator matches them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    AuthExpired,
    NotFound,
    Retryable,
    InvalidArgument,
    Conflict,
}

impl From<mcp_resource_server::Error> for Error {
    fn from(e: mcp_resource_server::Error) -> Self {
        match e {
            mcp_resource_server::Error::Config(m) => Error::Config(m),
            mcp_resource_server::Error::Serve(m) => Error::Retryable(m),
        }
    }
}

impl Error {
    /// The wire kind of this error.
    pub fn kind(&self) -> Kind {
        match self {
            Error::InvalidArgument(_) | Error::Config(_) => Kind::InvalidArgument,
            Error::AuthExpired => Kind::AuthExpired,
            Error::NotFound => Kind::NotFound,
            Error::Conflict(_) | Error::Unconfirmed(_) => Kind::Conflict,
            Error::Retryable(_) => Kind::Retryable,
        }
    }

    /// What an error met while reading back a write becomes: the write was answered with
    /// success, so whatever went wrong afterwards says only that it could not be confirmed
    /// (`did` names the write, e.g. "Nextcloud accepted creating card 7").
    pub fn unconfirmed(did: &str, e: Error) -> Self {
        match e {
            Error::Unconfirmed(m) => Error::Unconfirmed(m),
            other => Error::Unconfirmed(format!(
                "{did}, but reading it back failed ({other}); look before trying again, it may have happened"
            )),
        }
    }

    /// What a failure to hear the answer to a write that must not happen twice becomes
    /// (see `Session::send_once`): it may have happened, so it is unconfirmed, not retryable.
    pub fn answer_lost(what: &str, e: &Error) -> Self {
        let cause = e.to_string();
        let cause = cause.trim_end_matches("; try again later");
        Error::Unconfirmed(format!(
            "{what}: the answer from Nextcloud was lost ({cause}), so it may have happened; look before trying again"
        ))
    }

    /// Shorthand for bad input.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }

    /// Maps a Nextcloud HTTP status to an error, `None` for success (2xx and 207).
    ///
    /// `what` names the operation for messages of the kinds that carry one.
    pub fn from_status(status: http::StatusCode, what: &str) -> Option<Self> {
        let code = status.as_u16();
        match code {
            200..=299 => None,
            401 => Some(Error::AuthExpired),
            // 403 and 404 are one answer, on purpose.
            403 | 404 | 410 => Some(Error::NotFound),
            409 | 412 | 423 => Some(Error::Conflict(format!(
                "{what}: the target already exists or was changed meanwhile"
            ))),
            413 => Some(Error::InvalidArgument(format!(
                "{what}: Nextcloud refused the content as too large"
            ))),
            408 | 429 | 500..=599 => Some(Error::Retryable(format!(
                "{what}: Nextcloud is unavailable right now (HTTP {code}); try again later"
            ))),
            _ => Some(Error::Retryable(format!(
                "{what}: Nextcloud gave an unexpected answer (HTTP {code})"
            ))),
        }
    }

    /// Maps a transport failure (connect, timeout, body) to an error, without the URL or
    /// anything else from the request.
    pub fn from_transport(e: &reqwest::Error, what: &str) -> Self {
        let why = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "could not connect"
        } else {
            "the connection failed"
        };
        Error::Retryable(format!("{what}: reaching Nextcloud {why}; try again later"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    #[test]
    fn forbidden_and_missing_are_the_same_answer() {
        let a = Error::from_status(StatusCode::FORBIDDEN, "x").unwrap();
        let b = Error::from_status(StatusCode::NOT_FOUND, "x").unwrap();
        assert_eq!(a.kind(), Kind::NotFound);
        assert_eq!(a.to_string(), b.to_string());
    }

    #[test]
    fn statuses_map_to_kinds() {
        let k = |c: u16| Error::from_status(StatusCode::from_u16(c).unwrap(), "x").map(|e| e.kind());
        assert_eq!(k(207), None);
        assert_eq!(k(401), Some(Kind::AuthExpired));
        assert_eq!(k(412), Some(Kind::Conflict));
        assert_eq!(k(409), Some(Kind::Conflict));
        assert_eq!(k(503), Some(Kind::Retryable));
        assert_eq!(serde_json::to_string(&Kind::AuthExpired).unwrap(), "\"auth_expired\"");
    }
}
