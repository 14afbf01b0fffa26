//! mcp-nextcloud: an MCP server (Streamable HTTP, stateless) for Nextcloud files, calendar,
//! contacts and Deck boards.
//!
//! It holds no credential. Every inbound request carries the caller's own bearer; the server
//! forwards exactly that bearer to Nextcloud and reports Nextcloud's answer. There is no
//! permission logic here: a 403 or 404 from Nextcloud is the answer, and it stands.
//!
//! Module map:
//! - [`config`]: the one typed configuration, read from the environment at startup.
//! - [`error`]: the crate's error enum and the wire kinds the orchestrator relies on.
//! - [`mcp_resource_server`] (a workspace crate, shared with mcp-mail): the caller's bearer
//!   and uid, the JWT audience check, the 401 + RFC 9728 gate, the shared env settings and
//!   the serve loop.
//! - [`nextcloud`]: the shared HTTP client, caller-scoped requests, DAV XML and path rules.
//! - [`extract`]: turning file bytes (HTML, PDF, DOCX, ODT, text) into text.
//! - [`tools`]: the tool catalogue and dispatch (the one place tools are registered).
//! - [`apps`]: the MCP Apps (`ui://` resources) served to hosts.
//! - [`server`]: the rmcp handler, the axum router and the serve loop with graceful shutdown.

pub mod apps;
pub mod config;
pub mod error;
pub mod extract;
pub mod index;
pub mod nextcloud;
pub mod output;
pub mod server;
pub mod tools;

pub use config::Config;
pub use error::Error;
pub use server::{app, serve};
