//! The two shapes a tool call ends in, and nothing else: a success ([`Output`]: a short text
//! for people and the structured rows for programs) or a failure ([`error_result`]:
//! `isError: true`, `Error: <message>` and `{"error": {"kind", "message"}}`, see
//! [`crate::error`]). A leaf: tools and the index both return these, neither imports the other.

use mcp_resource_server::tool_result;
use rmcp::ErrorData;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult};
use serde::Serialize;

use crate::error::Error;

/// A successful tool answer: a short human-readable text and the structured rows.
pub struct Output {
    pub text: String,
    pub structured: serde_json::Value,
}

impl Output {
    pub fn new<T: Serialize>(text: impl Into<String>, value: &T) -> Result<Self, Error> {
        let structured = serde_json::to_value(value).map_err(|_| Error::Retryable("the answer could not be encoded".into()))?;
        Ok(Output {
            text: text.into(),
            structured,
        })
    }

    /// The MCP result: the text as content, the rows as `structuredContent`.
    pub fn into_result(self) -> CallToolResult {
        tool_result::success(self.text, self.structured)
    }
}

/// A failed tool call, in the shape every Tamebi MCP server uses.
pub fn error_result(e: &Error) -> CallToolResult {
    tool_result::error(e.kind(), &e.to_string())
}

/// A `#[tool]` function returns `Result<Output, Error>`; rmcp turns it into a result through these.
impl IntoCallToolResult for Output {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        Ok(self.into_result().into())
    }
}

impl IntoCallToolResult for Error {
    fn into_call_tool_result(self) -> Result<CallToolResponse, ErrorData> {
        Ok(error_result(&self).into())
    }
}
