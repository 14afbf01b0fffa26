//! MCP: how the orchestrator reaches tool servers, and what it knows about their tools.
//!
//! - [`client`]: one short-lived rmcp client per call, carrying the caller's bearer, on the
//!   connection pool of that server's `ToolServerActor` (which also keeps its health and its
//!   converted definitions, see `crate::actors::tool_server`). No client outlives the call,
//!   so no bearer outlives the turn that brought it.
//! - [`registry`]: a turn's view of the tools: visibility split, policy, fingerprints.

pub mod client;
pub mod registry;
