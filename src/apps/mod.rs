//! MCP Apps: UI that tool servers ship, which we serve but never trust.
//!
//! - [`csp`]: the Content-Security-Policy a frame document is served with, built from the
//!   document itself (second point of distrust).
//!
//! The relay rules (third and fourth points) live in `http::apps`: frames may call only
//! app-visible read-only tools; effectful app-only tools are dispatched only by the island.

pub mod csp;

/// MIME type of an MCP App document.
pub const APP_MIME: &str = "text/html;profile=mcp-app";
