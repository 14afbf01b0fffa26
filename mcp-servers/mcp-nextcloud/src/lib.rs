//! mcp-nextcloud: an MCP server (Streamable HTTP, stateless) for Nextcloud files, calendar,
//! contacts and Deck boards.
//!
//! It holds no credential. Every inbound request carries the caller's own bearer; the server
//! forwards exactly that bearer to Nextcloud and reports Nextcloud's answer. There is no
//! permission logic here: a 403 or 404 from Nextcloud is the answer, and it stands.
//!
//! Module map, in import order (a module imports only from those below it; `index` and
//! `tools` sit side by side, `tools` declaring `files_grep` over the index):
//! - [`server`]: the rmcp handler, the axum router (the shared routes plus the index's
//!   webhook) and the serve loop. No tool logic.
//! - [`tools`]: the tool catalogue: one `#[tool]` function per tool in its domain module,
//!   joined into one router at startup. How to add a tool is in its module doc.
//! - [`index`]: the document index behind `files_grep` (its own module map).
//! - [`convert`]: `files_convert`'s parts: the conversion table, the lent file (`GET
//!   /loan/<token>` on its own listener, `MCP_LOAN_BIND`) and the OnlyOffice ConvertService
//!   client. It never talks to Nextcloud; the tool does, as the caller.
//! - [`extract`]: turning file bytes (HTML, PDF, DOCX, ODT, spreadsheets, presentations, text)
//!   into text for files_read.
//! - [`nextcloud`]: the shared HTTP client, caller-scoped requests, DAV XML and path rules;
//!   also answers the auth gate's "whose token is this".
//! - [`mcp_resource_server`] (a workspace crate, shared with mcp-mail): the caller's
//!   `Bearer` and `Caller`, the JWT audience check, the 401 + RFC 9728 gate, the shared env
//!   settings, the stateless rmcp service and the serve loop.
//! - Leaves: [`output`] (the success and failure shapes of a tool call), [`apps`] (the MCP
//!   Apps, `ui://` resources), [`config`] (the one typed configuration, read at startup),
//!   [`error`] (the crate's error enum and the wire kinds the orchestrator relies on).

pub mod apps;
pub mod config;
pub mod convert;
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
