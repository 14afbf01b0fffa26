//! The probe's one error type. Bad control input is a 400 with a clear message and changes
//! nothing; the MCP side never fails at the protocol level (unknown tools are error results).

use axum::Json;
use axum::response::{IntoResponse, Response};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `POST /__tools` body that does not describe a valid tool set.
    #[error("invalid tool set: {0}")]
    BadTools(String),
    /// The server could not keep serving (bind or accept failure).
    #[error("the server stopped: {0}")]
    Serve(#[from] std::io::Error),
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = match self {
            Error::BadTools(_) => http::StatusCode::BAD_REQUEST,
            Error::Serve(_) => http::StatusCode::INTERNAL_SERVER_ERROR,
        };
        (status, Json(serde_json::json!({"error": self.to_string()}))).into_response()
    }
}
