//! The one error type of the document index.
//!
//! Each variant says how it is handled: bad input is the caller's to fix, a Nextcloud
//! failure fails the whole search closed (nothing is returned), an extraction failure is
//! recorded against the file's etag and never retried until the etag changes, and storage
//! errors are internal (logged, never shown with their details).

use thiserror::Error;

/// Why a document could not be turned into text. Recorded per file id and etag.
#[derive(Debug, Error)]
pub enum ExtractError {
    #[error("unsupported format")]
    Unsupported,
    #[error("file is larger than the extraction limit")]
    TooLarge,
    #[error("malformed document: {0}")]
    Malformed(String),
}

impl ExtractError {
    /// A short stable label for the `files.status_detail` column (no document content).
    pub fn label(&self) -> &'static str {
        match self {
            ExtractError::Unsupported => "unsupported",
            ExtractError::TooLarge => "too-large",
            ExtractError::Malformed(_) => "malformed",
        }
    }
}

/// How a request to Nextcloud under the caller's token went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextcloudFailure {
    /// 401: the caller's credential was refused.
    Unauthorized,
    /// 403 or 404: not the caller's to see (Nextcloud's answer stands).
    NotFound,
    /// Network error, timeout, 5xx or an answer we could not read.
    Unavailable,
}

#[derive(Debug, Error)]
pub enum IndexError {
    /// The query or arguments cannot be searched; the message says why.
    #[error("{0}")]
    InvalidArgument(String),
    /// Nextcloud refused or failed a request made with the caller's token.
    #[error("Nextcloud request failed: {message}")]
    Nextcloud {
        failure: NextcloudFailure,
        message: String,
    },
    #[error(transparent)]
    Extract(#[from] ExtractError),
    #[error("index storage error: {0}")]
    Storage(#[from] rusqlite::Error),
    #[error("index task failed: {0}")]
    Task(String),
}

impl IndexError {
    pub fn nextcloud(failure: NextcloudFailure, message: impl Into<String>) -> Self {
        IndexError::Nextcloud {
            failure,
            message: message.into(),
        }
    }
}
