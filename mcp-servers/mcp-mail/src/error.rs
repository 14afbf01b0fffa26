//! The crate's one error enum and how each variant reaches a tool's caller.
//!
//! Tool failures are tool results with `isError: true` and `{"error": {"kind", "message"}}`,
//! the same shape mcp-nextcloud uses. The bridge answers 404 for a message that does not
//! exist and for one that belongs to someone else alike; this crate keeps that answer as it
//! is. Messages never carry upstream bodies or tokens. A send reads failures more carefully
//! than a read ([`Error::from_send_status`], [`Error::send_transport`]): once the request may
//! have reached the bridge, a failure is `outcome_unknown`, never `retryable`.

use serde::Serialize;

/// The text the person sees when the Nextcloud has no usable Mail app.
pub const MAIL_UNAVAILABLE: &str = "Mail is not set up on this Nextcloud";
/// The text the person sees when a send may or may not have happened.
pub const OUTCOME_UNKNOWN: &str = "It is not known whether the mail was sent: the answer from Nextcloud was lost or unclear. Check the Sent folder before sending it again.";
/// What the person sees when the bridge says the account must be set up first (its 409) but
/// gave no reason of its own.
pub const SETUP_REQUIRED: &str = "This mail account is not set up to send in Mail; check its settings there. Nothing was sent.";
/// The bridge's error code for a send whose outcome Mail could not tell (docs/mail-bridge-api.md).
pub const BRIDGE_SEND_OUTCOME_UNKNOWN: &str = "send_outcome_unknown";

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Invalid configuration at startup (exit code 2).
    #[error("{0}")]
    Config(String),
    /// Bad tool input, refused before the bridge is asked (or refused by the bridge's 400).
    #[error("{0}")]
    InvalidArgument(String),
    /// The bridge answered 401: the caller's token is no longer valid.
    #[error("the Nextcloud session expired; sign in again")]
    AuthExpired,
    /// The bridge answered 404 (unknown, or someone else's: never told apart).
    #[error("not found or not accessible")]
    NotFound,
    /// The bridge answered 501: the Mail app is missing or disabled.
    #[error("{MAIL_UNAVAILABLE}")]
    MailUnavailable,
    /// The bridge answered 409: the account is in a state only the person can change (no Sent
    /// mailbox set in Mail). Nothing happened, and trying again unchanged cannot work, so it is
    /// not retryable; the bridge's message says what to fix.
    #[error("{0}")]
    SetupRequired(String),
    /// 5xx, timeouts, connection failures, IMAP/SMTP failures: trying again later may work.
    #[error("{0}")]
    Retryable(String),
    /// A send that may or may not have gone out (the answer was lost after the request left,
    /// or Mail itself could not tell). Never retryable: a retry could send the mail twice.
    #[error("{OUTCOME_UNKNOWN}")]
    OutcomeUnknown,
}

/// The error kinds on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    AuthExpired,
    NotFound,
    Retryable,
    InvalidArgument,
    Unavailable,
    SetupRequired,
    OutcomeUnknown,
}

impl Error {
    /// The wire kind of this error.
    pub fn kind(&self) -> Kind {
        match self {
            Error::InvalidArgument(_) | Error::Config(_) => Kind::InvalidArgument,
            Error::AuthExpired => Kind::AuthExpired,
            Error::NotFound => Kind::NotFound,
            Error::MailUnavailable => Kind::Unavailable,
            Error::SetupRequired(_) => Kind::SetupRequired,
            Error::Retryable(_) => Kind::Retryable,
            Error::OutcomeUnknown => Kind::OutcomeUnknown,
        }
    }

    /// Shorthand for bad input.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }

    /// Maps a bridge answer's HTTP status to an error, `None` for success. `message` is the
    /// bridge's own fixed text for a 400 (it names the bad field, never anyone's data) or a 409
    /// (what the person must set up in Mail).
    pub fn from_status(status: http::StatusCode, message: Option<&str>) -> Option<Self> {
        let code = status.as_u16();
        match code {
            200..=299 => None,
            400 | 422 => Some(Error::InvalidArgument(
                message.map_or_else(|| "the mail bridge refused the request as invalid".into(), |m| cut(m, 300)),
            )),
            401 => Some(Error::AuthExpired),
            // 403 and 404 are one answer, on purpose.
            403 | 404 | 410 => Some(Error::NotFound),
            409 => Some(Error::SetupRequired(message.map_or_else(|| SETUP_REQUIRED.into(), |m| cut(m, 300)))),
            501 => Some(Error::MailUnavailable),
            502 => Some(Error::Retryable("the mail server reported a failure; try again later".into())),
            _ => Some(Error::Retryable(format!(
                "the mail bridge is unavailable right now (HTTP {code}); try again later"
            ))),
        }
    }

    /// A failed answer to a send (`POST /send`): only what certainly sent nothing keeps its
    /// usual kind. The bridge's own `send_outcome_unknown`, and any 5xx but its `mail_backend`
    /// and `mail_unavailable` (a proxy's 504, a PHP crash half-way), leave the outcome open.
    pub fn from_send_status(status: http::StatusCode, code: Option<&str>, message: Option<&str>) -> Option<Self> {
        let plain = Self::from_status(status, message)?;
        let definite = !status.is_server_error()
            || matches!(
                (status.as_u16(), code),
                (502, Some("mail_backend")) | (501, Some("mail_unavailable"))
            );
        Some(if code == Some(BRIDGE_SEND_OUTCOME_UNKNOWN) || !definite {
            Error::OutcomeUnknown
        } else {
            plain
        })
    }

    /// A transport failure of a send: only a connection that was never made sent nothing.
    pub fn send_transport(e: &reqwest::Error) -> Self {
        if e.is_connect() || e.is_builder() {
            Self::transport(e)
        } else {
            Error::OutcomeUnknown
        }
    }

    /// A transport failure talking to the bridge.
    pub fn transport(e: &reqwest::Error) -> Self {
        let why = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "could not connect"
        } else {
            "the connection failed"
        };
        Error::Retryable(format!("reaching Nextcloud {why}; try again later"))
    }
}

impl From<mcp_resource_server::Error> for Error {
    fn from(e: mcp_resource_server::Error) -> Self {
        match e {
            mcp_resource_server::Error::Config(m) => Error::Config(m),
            mcp_resource_server::Error::Serve(m) => Error::Retryable(m),
        }
    }
}

fn cut(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    #[test]
    fn statuses_map_to_kinds() {
        let k = |c: u16| Error::from_status(StatusCode::from_u16(c).unwrap(), None).map(|e| e.kind());
        assert_eq!(k(200), None);
        assert_eq!(k(400), Some(Kind::InvalidArgument));
        assert_eq!(k(401), Some(Kind::AuthExpired));
        assert_eq!(k(403), Some(Kind::NotFound));
        assert_eq!(k(404), Some(Kind::NotFound));
        assert_eq!(k(409), Some(Kind::SetupRequired));
        assert_eq!(k(501), Some(Kind::Unavailable));
        assert_eq!(k(502), Some(Kind::Retryable));
        assert_eq!(k(503), Some(Kind::Retryable));
    }

    #[test]
    fn a_send_is_only_retryable_when_it_certainly_sent_nothing() {
        let k = |c: u16, code: Option<&str>| Error::from_send_status(StatusCode::from_u16(c).unwrap(), code, None).map(|e| e.kind());
        assert_eq!(k(200, None), None);
        assert_eq!(k(400, Some("invalid_request")), Some(Kind::InvalidArgument));
        assert_eq!(k(404, Some("not_found")), Some(Kind::NotFound));
        assert_eq!(k(501, Some("mail_unavailable")), Some(Kind::Unavailable));
        assert_eq!(k(502, Some("mail_backend")), Some(Kind::Retryable));
        // No Sent mailbox: nothing went out, and only the person can fix it (not retryable).
        assert_eq!(k(409, Some("no_sent_mailbox")), Some(Kind::SetupRequired));
        assert_eq!(k(502, Some("send_outcome_unknown")), Some(Kind::OutcomeUnknown));
        assert_eq!(k(502, None), Some(Kind::OutcomeUnknown)); // a proxy's 502, not the bridge's
        assert_eq!(k(500, Some("internal_error")), Some(Kind::OutcomeUnknown));
        assert_eq!(k(504, None), Some(Kind::OutcomeUnknown));
        let e = Error::OutcomeUnknown;
        assert!(e.to_string().contains("Check the Sent folder"), "{e}");
        assert_eq!(serde_json::to_value(e.kind()).unwrap(), "outcome_unknown");
    }

    #[test]
    fn a_setup_to_fix_keeps_the_bridges_instructions() {
        let said = "This mail account has no Sent folder set, so Mail sends nothing from it. Choose one in Mail (account settings, Default folders), then send again. Nothing was sent.";
        let e = Error::from_send_status(StatusCode::CONFLICT, Some("no_sent_mailbox"), Some(said)).unwrap();
        assert_eq!(e.to_string(), said);
        assert_eq!(serde_json::to_value(e.kind()).unwrap(), "setup_required");
        let bare = Error::from_status(StatusCode::CONFLICT, None).unwrap();
        assert_eq!(bare.to_string(), SETUP_REQUIRED);
    }

    #[test]
    fn mail_missing_says_so() {
        let e = Error::from_status(StatusCode::NOT_IMPLEMENTED, Some("whatever the bridge said")).unwrap();
        assert_eq!(e.to_string(), "Mail is not set up on this Nextcloud");
    }

    #[test]
    fn bad_request_keeps_the_bridges_reason() {
        let e = Error::from_status(StatusCode::BAD_REQUEST, Some("limit must be between 1 and 50")).unwrap();
        assert_eq!(e.to_string(), "limit must be between 1 and 50");
    }
}
