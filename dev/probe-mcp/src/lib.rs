//! `probe-mcp`: an MCP server for policy tests, whose tools are whatever the test says.
//!
//! The orchestrator derives its G3 policy from the annotations an MCP server declares and
//! wraps every tool result and error in the G2 envelope. To prove both against hostile or
//! careless servers, a test needs a server it controls completely: one that serves tools
//! with no annotations, partial or contradictory ones, app-only visibility, definitions that
//! change between turns, and error results carrying attacker text. And it needs proof that a
//! call did NOT happen, so every `tools/call` is recorded.
//!
//! - [`catalogue`]: the tool set a test installs (`POST /__tools`), and each tool's reply.
//! - [`calls`]: the log of every `tools/call` received (`GET /__calls`).
//! - [`server`]: the rmcp handler (stateless Streamable HTTP), the router, the serve loop.
//! - [`error`]: the crate's one error type.
//!
//! This is test equipment: it accepts any bearer (recording only a hash of it), binds where
//! it is told, and must never be deployed next to real data.

pub mod calls;
pub mod catalogue;
pub mod error;
pub mod server;

pub use error::Error;
pub use server::{app, serve};
