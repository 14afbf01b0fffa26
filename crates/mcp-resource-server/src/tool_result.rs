//! The one shape of a tool result on every Tamebi MCP server.
//!
//! Success: the text as content and the value as `structuredContent`. Failure: `isError: true`
//! with `Error: <message>` as text and `{"error": {"kind", "message"}}` as structured content;
//! the orchestrator matches on `kind`, so each server's error enum decides its kinds and this
//! module only decides the shape. A message must never carry an upstream body or a token:
//! callers pass their error's own display text.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;

/// A successful result: `text` for the model, `structured` for apps and programs.
pub fn success(text: impl Into<String>, structured: serde_json::Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text.into())]);
    r.structured_content = Some(structured);
    r
}

/// A failed call, with the wire `kind` and the message the person may see.
pub fn error(kind: impl Serialize, message: &str) -> CallToolResult {
    let mut r = CallToolResult::error(vec![ContentBlock::text(format!("Error: {message}"))]);
    r.structured_content = Some(serde_json::json!({ "error": { "kind": kind, "message": message } }));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_has_the_shape_the_orchestrator_matches() {
        let r = error("not_found", "not found or not accessible");
        assert_eq!(r.is_error, Some(true));
        assert_eq!(
            r.structured_content,
            Some(serde_json::json!({"error": {"kind": "not_found", "message": "not found or not accessible"}}))
        );
        let text: Vec<_> = r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect();
        assert_eq!(text, ["Error: not found or not accessible"]);
    }
}
