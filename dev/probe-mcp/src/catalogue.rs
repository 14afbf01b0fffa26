//! The tool set a test installs, and what each tool answers when called.
//!
//! A tool entry is an MCP tool definition exactly as `tools/list` will serve it (`name`,
//! `description`, `inputSchema`, optional `annotations`, optional `_meta`, anything else the
//! MCP schema allows), plus one optional probe-only key, `reply`, that is stripped before
//! serving:
//!
//! - absent: a success whose text names the tool and echoes the arguments;
//! - `{"text": "…"}`: a success with exactly that text;
//! - `{"error": "…"}`: an error result (`isError: true`) with exactly that text;
//! - `{"silent": true}`: no answer at all (the call is recorded, then never answered): a tool
//!   server that hangs on a call after answering `tools/list`.
//!
//! Annotations are served as given, never completed or corrected: a missing or contradictory
//! annotation is precisely what a policy test needs to serve.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::Value;

use crate::error::Error;

/// What a tool answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Echo,
    Text(String),
    Error(String),
    Silent,
}

/// One installed tool: its served definition and its reply.
#[derive(Debug, Clone)]
pub struct ProbeTool {
    pub definition: Tool,
    pub reply: Reply,
}

/// Parses a `POST /__tools` body: `{"tools": [...]}` or a bare array. All or nothing.
pub fn parse(body: &[u8]) -> Result<Vec<ProbeTool>, Error> {
    let value: Value = serde_json::from_slice(body).map_err(|e| Error::BadTools(format!("not JSON: {e}")))?;
    let entries = match value {
        Value::Array(items) => items,
        Value::Object(mut map) => match map.remove("tools") {
            Some(Value::Array(items)) => items,
            _ => return Err(Error::BadTools("expected {\"tools\": [...]} or an array".into())),
        },
        _ => return Err(Error::BadTools("expected {\"tools\": [...]} or an array".into())),
    };
    let mut tools: Vec<ProbeTool> = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let tool = entry_to_tool(i, entry)?;
        if tools.iter().any(|t| t.definition.name == tool.definition.name) {
            return Err(Error::BadTools(format!(
                "tools[{i}]: the name {:?} appears twice",
                tool.definition.name
            )));
        }
        tools.push(tool);
    }
    Ok(tools)
}

fn entry_to_tool(i: usize, entry: Value) -> Result<ProbeTool, Error> {
    let Value::Object(mut map) = entry else {
        return Err(Error::BadTools(format!("tools[{i}] is not an object")));
    };
    let reply = match map.remove("reply") {
        None | Some(Value::Null) => Reply::Echo,
        Some(r) => parse_reply(i, r)?,
    };
    let definition: Tool = serde_json::from_value(Value::Object(map)).map_err(|e| Error::BadTools(format!("tools[{i}]: {e}")))?;
    if definition.name.is_empty() {
        return Err(Error::BadTools(format!("tools[{i}]: the name is empty")));
    }
    Ok(ProbeTool { definition, reply })
}

fn parse_reply(i: usize, reply: Value) -> Result<Reply, Error> {
    let bad = || {
        Error::BadTools(format!(
            "tools[{i}].reply must be {{\"text\": \"…\"}}, {{\"error\": \"…\"}} or {{\"silent\": true}}"
        ))
    };
    let Value::Object(map) = reply else { return Err(bad()) };
    if map.len() != 1 {
        return Err(bad());
    }
    if map.get("silent") == Some(&Value::Bool(true)) {
        return Ok(Reply::Silent);
    }
    match (map.get("text"), map.get("error")) {
        (Some(Value::String(t)), None) => Ok(Reply::Text(t.clone())),
        (None, Some(Value::String(e))) => Ok(Reply::Error(e.clone())),
        _ => Err(bad()),
    }
}

impl ProbeTool {
    /// The result of calling this tool with `arguments`; `None` for a silent tool (never answers).
    pub fn answer(&self, arguments: &JsonObject) -> Option<CallToolResult> {
        Some(match &self.reply {
            Reply::Silent => return None,
            Reply::Echo => {
                let args = Value::Object(arguments.clone());
                CallToolResult::success(vec![ContentBlock::text(format!(
                    "probe tool {} ran with {args}",
                    self.definition.name
                ))])
            }
            Reply::Text(t) => CallToolResult::success(vec![ContentBlock::text(t.clone())]),
            Reply::Error(e) => CallToolResult::error(vec![ContentBlock::text(e.clone())]),
        })
    }
}

/// The answer for a tool that is not installed: an error result, never a protocol error.
pub fn unknown_tool(name: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!("probe-mcp has no tool named {name}"))])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn definitions_are_served_as_given_and_reply_is_stripped() {
        let tools = parse(&body(json!({"tools": [
            {"name": "bare", "inputSchema": {"type": "object"}},
            {"name": "odd", "description": "d", "inputSchema": {"type": "object"},
             "annotations": {"readOnlyHint": true, "destructiveHint": true},
             "_meta": {"ui": {"visibility": ["app"]}}, "reply": {"error": "boom"}}
        ]})))
        .unwrap();
        assert_eq!(tools.len(), 2);
        assert!(tools[0].definition.annotations.is_none());
        assert_eq!(tools[0].reply, Reply::Echo);
        let served = serde_json::to_value(&tools[1].definition).unwrap();
        assert_eq!(served["annotations"], json!({"readOnlyHint": true, "destructiveHint": true}));
        assert_eq!(served["_meta"], json!({"ui": {"visibility": ["app"]}}));
        assert!(served.get("reply").is_none());
        assert_eq!(tools[1].reply, Reply::Error("boom".into()));
        let silent = parse(&body(
            json!([{"name": "s", "inputSchema": {"type": "object"}, "reply": {"silent": true}}]),
        ))
        .unwrap();
        assert_eq!(silent[0].reply, Reply::Silent);
        assert!(silent[0].answer(&JsonObject::new()).is_none());
        let r = tools[1].answer(&JsonObject::new()).unwrap();
        assert_eq!(r.is_error, Some(true));
    }

    #[test]
    fn bad_tool_sets_are_refused_whole() {
        for b in [
            json!({"tools": [{"name": "x"}]}),
            json!({"tools": [{"name": "", "inputSchema": {"type": "object"}}]}),
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}, {"name": "a", "inputSchema": {"type": "object"}}]}),
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}, "reply": {"text": 1}}]}),
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}, "reply": {"text": "a", "error": "b"}}]}),
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}, "reply": {"silent": false}}]}),
            json!({"tools": "nope"}),
            json!(42),
            json!(["x"]),
        ] {
            assert!(matches!(parse(&body(b.clone())), Err(Error::BadTools(_))), "{b}");
        }
        assert!(parse(b"{").is_err());
        assert_eq!(parse(&body(json!([]))).unwrap().len(), 0);
    }
}
