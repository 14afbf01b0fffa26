//! The crate's one error enum. Tool errors are each server's own business; these are the
//! failures of the shared parts: configuration at startup, and the serve loop itself.

/// Everything that can go wrong in the shared parts.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Invalid configuration at startup; the message names the variable and what it takes.
    #[error("{0}")]
    Config(String),
    /// The listener or the serve loop failed.
    #[error("{0}")]
    Serve(String),
}
