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

/// What rmcp says when `Parameters<T>` cannot be read from a call's arguments.
const RMCP_ARGUMENT_ERROR: &str = "failed to deserialize parameters: ";

/// The message for arguments rmcp could not read (its own words, without its prefix), so that
/// a bad argument reads like every other refusal of the server.
pub fn unreadable_arguments(rmcp_message: &str) -> String {
    let why = rmcp_message.strip_prefix(RMCP_ARGUMENT_ERROR).unwrap_or(rmcp_message);
    format!("invalid arguments: {why}")
}

/// rmcp answers some failures itself with a plain error result (no structured content); this is
/// that result's text when `result` is one, for the server to turn into its own error shape.
pub fn unshaped_error(result: &CallToolResult) -> Option<&str> {
    if result.is_error != Some(true) || result.structured_content.is_some() {
        return None;
    }
    Some(
        result
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.as_str())
            .unwrap_or_default(),
    )
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

    #[test]
    fn rmcp_argument_errors_read_like_ours() {
        assert_eq!(
            unreadable_arguments("failed to deserialize parameters: missing field `query`"),
            "invalid arguments: missing field `query`"
        );
        let plain = CallToolResult::error(vec![ContentBlock::text("failed to deserialize parameters: x")]);
        assert_eq!(unshaped_error(&plain), Some("failed to deserialize parameters: x"));
        assert_eq!(unshaped_error(&error("not_found", "gone")), None);
        assert_eq!(unshaped_error(&success("ok", serde_json::json!({}))), None);
    }
}
