//! The one error type of the scripted model, and how each kind reaches the wire.
//!
//! Every HTTP error body has OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`,
//! because the orchestrator's provider client must be tested against exactly what a real
//! provider answers. It must never answer a malformed request with anything but a 4xx.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request broke a rule a strict provider enforces (400, not retryable).
    #[error("{message}")]
    InvalidRequest { message: String, param: Option<String> },
    /// The request named a model nobody serves (404, like OpenAI's `model_not_found`).
    #[error("The model `{0}` does not exist or you do not have access to it.")]
    ModelNotFound(String),
    /// A script step asked for this error (`{"error": {"status", "message"}}`).
    #[error("{message}")]
    Scripted {
        status: StatusCode,
        message: String,
        /// Sent as `Retry-After` (seconds).
        retry_after_secs: Option<u64>,
    },
    /// A rule set sent to `/__scripts` or read from `--scripts` is not valid (400).
    #[error("invalid scripts: {0}")]
    BadScripts(String),
    /// The `--scripts` file could not be read (startup only).
    #[error("cannot read scripts file {path}: {source}")]
    ScriptsFile { path: String, source: std::io::Error },
}

impl Error {
    pub fn invalid(message: impl Into<String>, param: Option<&str>) -> Error {
        Error::InvalidRequest {
            message: message.into(),
            param: param.map(str::to_string),
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            Error::InvalidRequest { .. } | Error::BadScripts(_) => StatusCode::BAD_REQUEST,
            Error::ModelNotFound(_) => StatusCode::NOT_FOUND,
            Error::Scripted { status, .. } => *status,
            Error::ScriptsFile { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// OpenAI's `type` and `code` for the error, so clients can branch on them as they would.
    fn kind_and_code(&self) -> (&'static str, Option<&'static str>) {
        match self {
            Error::InvalidRequest { .. } | Error::BadScripts(_) => ("invalid_request_error", None),
            Error::ModelNotFound(_) => ("invalid_request_error", Some("model_not_found")),
            Error::Scripted { status, .. } => match status.as_u16() {
                401 => ("invalid_request_error", Some("invalid_api_key")),
                429 => ("rate_limit_exceeded", Some("rate_limit_exceeded")),
                400..=499 => ("invalid_request_error", None),
                _ => ("server_error", None),
            },
            Error::ScriptsFile { .. } => ("server_error", None),
        }
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    message: String,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: Option<&'a str>,
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let (kind, code) = self.kind_and_code();
        let param = match &self {
            Error::InvalidRequest { param, .. } => param.as_deref(),
            Error::ModelNotFound(_) => Some("model"),
            Error::Scripted { .. } | Error::BadScripts(_) | Error::ScriptsFile { .. } => None,
        };
        let body = ErrorBody {
            error: ErrorDetail {
                message: self.to_string(),
                kind,
                param,
                code,
            },
        };
        let retry_after = match &self {
            Error::Scripted {
                retry_after_secs: Some(secs),
                ..
            } => Some(secs.to_string()),
            _ => None,
        };
        let mut response = (self.status(), Json(body)).into_response();
        if let Some(value) = retry_after.and_then(|v| axum::http::HeaderValue::from_str(&v).ok()) {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, value);
        }
        response
    }
}
