//! The one error type of the document index.
//!
//! Each variant says how it is handled: bad input is the caller's to fix, a Nextcloud
//! failure (the server's own [`crate::error::Error`]) fails the whole search closed
//! (nothing is returned), an extraction failure is
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

#[derive(Debug, Error)]
pub enum IndexError {
    /// The query or arguments cannot be searched; the message says why.
    #[error("{0}")]
    InvalidArgument(String),
    /// Nextcloud refused or failed a request made with the caller's token; the server's
    /// own error, so the wire kind (auth_expired, not_found, retryable) is the usual one.
    #[error(transparent)]
    Nextcloud(crate::error::Error),
    #[error(transparent)]
    Extract(#[from] ExtractError),
    #[error("index storage error: {0}")]
    Storage(#[from] rusqlite::Error),
    #[error("index task failed: {0}")]
    Task(String),
}

impl IndexError {
    /// True when Nextcloud said the caller cannot open it (403/404, one answer).
    pub fn is_not_found(&self) -> bool {
        matches!(self, IndexError::Nextcloud(crate::error::Error::NotFound))
    }

    /// True when Nextcloud was unavailable for this request (worth trying later).
    pub fn is_retryable(&self) -> bool {
        matches!(self, IndexError::Nextcloud(crate::error::Error::Retryable(_)))
    }
}

/// How index errors reach the wire: through the server's error kinds. Internal failures
/// say nothing about their cause (it is logged) and are worth retrying.
impl From<IndexError> for crate::error::Error {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::InvalidArgument(m) => crate::error::Error::InvalidArgument(m),
            IndexError::Nextcloud(e) => e,
            other => {
                tracing::error!(error = %other, "document index failure");
                crate::error::Error::Retryable("the document index failed; try again".into())
            }
        }
    }
}
