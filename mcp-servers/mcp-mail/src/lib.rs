//! mcp-mail: an MCP server (Streamable HTTP, stateless) for the user's mail in Nextcloud Mail.
//!
//! Tamebi never holds a mailbox credential and never speaks IMAP or SMTP: every call goes to
//! the tamebi Nextcloud app's mail bridge with the caller's own bearer, and the bridge acts
//! through Nextcloud Mail as that user. There is no permission logic here: the bridge's 404
//! is the answer, and it stands. The model can search, read and compose; only a person's
//! click in the island sends (seed: "cannot send mail").
//!
//! Module map:
//! - [`config`]: the one typed configuration, read from the environment at startup.
//! - [`error`]: the crate's error enum and the wire kinds of tool failures.
//! - [`bridge`]: the bridge's HTTP contract and its client.
//! - [`text`]: HTML bodies to plain text.
//! - [`compose`]: validating an outgoing mail; what is shown is what is sent.
//! - [`tools`]: the tools, each declared once with `#[tool]`.
//! - [`apps`]: the compose app `ui://mail/compose`.
//! - [`server`]: the rmcp handler, the router and the serve loop.

pub mod apps;
pub mod bridge;
pub mod compose;
pub mod config;
pub mod error;
pub mod server;
pub mod text;
pub mod tools;

pub use config::Config;
pub use error::Error;
pub use server::serve;
