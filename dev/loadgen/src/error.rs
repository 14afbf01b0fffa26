//! The one error type of the load generator.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag is out of range or points somewhere we refuse to send load (not loopback).
    #[error("invalid option: {0}")]
    Config(String),
    /// The scripted model's control endpoints refused or failed (open-streams setup, replay).
    #[error("scripted model: {0}")]
    Model(String),
    #[error("http: {0}")]
    Http(#[from] reqwest::Error),
    /// `/proc/<pid>/status` could not be read or parsed.
    #[error("reading memory of pid {pid}: {why}")]
    Proc { pid: u32, why: String },
    #[error("histogram: {0}")]
    Histogram(String),
}
