//! The OpenAI chat-completions wire format: the request as a strict provider reads and
//! validates it, and the response objects (streamed chunks, the whole completion, the model
//! list) exactly as OpenAI writes them.
//!
//! It owns the shapes only. It must never decide what the model says (that is `script`)
//! and never add a field OpenAI does not send: provider clients parse these strictly.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::Error;

// ---------------------------------------------------------------------------------------
// The request
// ---------------------------------------------------------------------------------------

/// The fields of a chat-completions request that matter here. Unknown fields (temperature,
/// max_tokens, …) are accepted and ignored, as providers do.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    pub model: Option<String>,
    pub messages: Option<Vec<Message>>,
    pub tools: Option<Vec<Tool>>,
    pub stream: Option<bool>,
    pub stream_options: Option<StreamOptions>,
}

#[derive(Debug, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    System {
        content: Content,
    },
    Developer {
        content: Content,
    },
    User {
        content: Content,
    },
    Assistant {
        #[serde(default)]
        content: Option<Content>,
        #[serde(default)]
        tool_calls: Option<Vec<ToolCall>>,
    },
    Tool {
        content: Content,
        tool_call_id: String,
    },
}

/// Message content: a plain string, or an array of typed parts of which only text is read.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

impl Content {
    /// The text of the content; text parts are joined without a separator, as providers do.
    pub fn text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => parts.iter().filter_map(|p| p.text.as_deref()).collect(),
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionCall,
}

#[derive(Debug, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    pub arguments: String,
}

#[derive(Debug, Deserialize)]
pub struct Tool {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionDef,
}

#[derive(Debug, Deserialize)]
pub struct FunctionDef {
    pub name: String,
}

/// Parses a request body, turning serde's complaint into a provider-style 400.
pub fn parse_request(body: &[u8]) -> Result<ChatRequest, Error> {
    serde_json::from_slice(body).map_err(|e| Error::invalid(format!("We could not parse the JSON body of your request: {e}"), None))
}

/// What the script needs to know about a validated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    pub model: String,
    pub stream: bool,
    pub include_usage: bool,
    /// Text of the last `user` message ("" when there is none).
    pub last_user_text: String,
    /// Number of `assistant` messages after the last `user` message: the step index.
    pub steps_taken: usize,
    /// Content of the last `tool` message, if any.
    pub last_tool_result: Option<String>,
    /// A rough token count of everything sent (four characters a token), for `usage`.
    pub prompt_tokens: u64,
    /// The text of every message except the last `user` one, joined by newlines: what a
    /// model could know from its context besides the question (`{{word_after:…}}`).
    pub context_text: String,
}

/// Validates the request the way a strict provider does and extracts the conversation.
///
/// Checked: a model and at least one message; `stream_options` only with `stream`; tool
/// definitions of type function with names a provider accepts; every assistant tool call of
/// type function, with a unique id and JSON arguments; every `tool` message answering a call
/// announced by the assistant message before it; every announced call answered before the
/// conversation moves on.
pub fn validate(req: &ChatRequest) -> Result<Conversation, Error> {
    let model = match req.model.as_deref() {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => {
            return Err(Error::invalid("you must provide a model parameter", Some("model")));
        }
    };
    let messages = match req.messages.as_deref() {
        Some(m) if !m.is_empty() => m,
        _ => {
            return Err(Error::invalid("'messages' must contain at least one message.", Some("messages")));
        }
    };
    let stream = req.stream.unwrap_or(false);
    if req.stream_options.is_some() && !stream {
        return Err(Error::invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            Some("stream_options"),
        ));
    }
    validate_tools(req.tools.as_deref().unwrap_or_default())?;
    validate_tool_pairing(messages)?;
    Ok(Conversation {
        model,
        stream,
        include_usage: req.stream_options.as_ref().is_some_and(|o| o.include_usage),
        last_user_text: last_user_text(messages),
        steps_taken: steps_taken(messages),
        last_tool_result: messages.iter().rev().find_map(|m| match m {
            Message::Tool { content, .. } => Some(content.text()),
            _ => None,
        }),
        prompt_tokens: estimate_tokens(messages),
        context_text: context_text(messages),
    })
}

fn validate_tools(tools: &[Tool]) -> Result<(), Error> {
    for (i, tool) in tools.iter().enumerate() {
        if tool.kind != "function" {
            return Err(Error::invalid(
                format!("Invalid value: '{}'. Supported values are: 'function'.", tool.kind),
                Some(&format!("tools[{i}].type")),
            ));
        }
        if !valid_function_name(&tool.function.name) {
            return Err(Error::invalid(
                format!(
                    "Invalid 'tools[{i}].function.name': string does not match pattern. \
                     Expected a string that matches the pattern '^[a-zA-Z0-9_-]{{1,64}}$'. Got '{}'.",
                    tool.function.name
                ),
                Some(&format!("tools[{i}].function.name")),
            ));
        }
    }
    Ok(())
}

/// OpenAI's rule for function names: 1–64 of `[a-zA-Z0-9_-]`.
fn valid_function_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Tool calls and tool results must pair up exactly, in order.
fn validate_tool_pairing(messages: &[Message]) -> Result<(), Error> {
    // Ids announced by the latest assistant message and not answered yet, in order.
    let mut pending: Vec<String> = Vec::new();
    // Whether the message before this one was an assistant message with calls, or a tool
    // message answering it (only then may a tool message come).
    let mut in_tool_block = false;
    let mut seen_ids: HashSet<&str> = HashSet::new();
    for (i, message) in messages.iter().enumerate() {
        match message {
            Message::Tool { tool_call_id, .. } => {
                if !in_tool_block {
                    return Err(Error::invalid(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls'.",
                        Some(&format!("messages.[{i}].role")),
                    ));
                }
                let Some(pos) = pending.iter().position(|id| id == tool_call_id) else {
                    return Err(Error::invalid(
                        format!(
                            "Invalid parameter: the tool_call_id '{tool_call_id}' of messages.[{i}] was not announced by the preceding assistant message."
                        ),
                        Some(&format!("messages.[{i}].tool_call_id")),
                    ));
                };
                pending.remove(pos);
            }
            other => {
                ensure_answered(&pending, i)?;
                in_tool_block = false;
                if let Message::Assistant { content, tool_calls } = other {
                    let calls = tool_calls.as_deref().unwrap_or_default();
                    if content.is_none() && calls.is_empty() {
                        return Err(Error::invalid(
                            "Invalid value for 'content': expected a string, got null.",
                            Some(&format!("messages.[{i}].content")),
                        ));
                    }
                    for (j, call) in calls.iter().enumerate() {
                        validate_call(call, i, j)?;
                        if !seen_ids.insert(call.id.as_str()) {
                            return Err(Error::invalid(
                                format!("Duplicate tool_call id '{}' in messages.[{i}].", call.id),
                                Some(&format!("messages.[{i}].tool_calls[{j}].id")),
                            ));
                        }
                    }
                    pending = calls.iter().map(|c| c.id.clone()).collect();
                    in_tool_block = !calls.is_empty();
                }
            }
        }
    }
    ensure_answered(&pending, messages.len())
}

fn ensure_answered(pending: &[String], at: usize) -> Result<(), Error> {
    if pending.is_empty() {
        return Ok(());
    }
    Err(Error::invalid(
        format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. \
             The following tool_call_ids did not have response messages (before messages.[{at}]): {}",
            pending.join(", ")
        ),
        Some("messages"),
    ))
}

fn validate_call(call: &ToolCall, i: usize, j: usize) -> Result<(), Error> {
    let param = |field: &str| format!("messages.[{i}].tool_calls[{j}].{field}");
    if call.id.is_empty() {
        return Err(Error::invalid("A tool call needs a non-empty 'id'.", Some(&param("id"))));
    }
    if call.kind != "function" {
        return Err(Error::invalid(
            format!("Invalid value: '{}'. Supported values are: 'function'.", call.kind),
            Some(&param("type")),
        ));
    }
    if serde_json::from_str::<serde_json::Value>(&call.function.arguments).is_err() {
        return Err(Error::invalid(
            format!(
                "Invalid 'messages.[{i}].tool_calls[{j}].function.arguments': the arguments of '{}' are not valid JSON.",
                call.function.name
            ),
            Some(&param("function.arguments")),
        ));
    }
    Ok(())
}

fn context_text(messages: &[Message]) -> String {
    let last_user = last_user_index(messages);
    let mut out = String::new();
    for (i, m) in messages.iter().enumerate() {
        if Some(i) == last_user {
            continue;
        }
        let text = match m {
            Message::System { content } | Message::Developer { content } | Message::User { content } | Message::Tool { content, .. } => {
                content.text()
            }
            Message::Assistant { content, .. } => content.as_ref().map(Content::text).unwrap_or_default(),
        };
        out.push_str(&text);
        out.push('\n');
    }
    out
}

fn last_user_index(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(|m| matches!(m, Message::User { .. }))
}

fn last_user_text(messages: &[Message]) -> String {
    match last_user_index(messages).and_then(|i| messages.get(i)) {
        Some(Message::User { content }) => content.text(),
        _ => String::new(),
    }
}

fn steps_taken(messages: &[Message]) -> usize {
    let after = last_user_index(messages).map_or(0, |i| i + 1);
    messages
        .iter()
        .skip(after)
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count()
}

fn estimate_tokens(messages: &[Message]) -> u64 {
    let chars: usize = messages
        .iter()
        .map(|m| match m {
            Message::System { content } | Message::Developer { content } | Message::User { content } | Message::Tool { content, .. } => {
                content.text().chars().count()
            }
            Message::Assistant { content, tool_calls } => {
                content.as_ref().map_or(0, |c| c.text().chars().count())
                    + tool_calls
                        .iter()
                        .flatten()
                        .map(|c| c.function.arguments.chars().count())
                        .sum::<usize>()
            }
        })
        .sum();
    tokens_for(chars)
}

/// Four characters a token, at least one: the usual rough rule.
pub fn tokens_for(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}

// ---------------------------------------------------------------------------------------
// The response
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Usage {
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
        }
    }
}

/// Identity of one response, repeated in every chunk as OpenAI does.
#[derive(Debug, Clone)]
pub struct ResponseMeta {
    pub id: String,
    pub created: i64,
    pub model: String,
    pub include_usage: bool,
}

/// One `chat.completion.chunk` object.
#[derive(Debug, Serialize)]
pub struct Chunk<'a> {
    pub id: &'a str,
    pub object: &'static str,
    pub created: i64,
    pub model: &'a str,
    pub system_fingerprint: Option<&'a str>,
    pub choices: Vec<ChunkChoice>,
    /// Absent without `include_usage`; `null` on every chunk but the last one with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Option<Usage>>,
}

#[derive(Debug, Serialize)]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    pub logprobs: Option<()>,
    pub finish_reason: Option<&'static str>,
}

#[derive(Debug, Default, Serialize)]
pub struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Serialize)]
pub struct ToolCallDelta {
    pub index: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    pub function: FunctionDelta,
}

#[derive(Debug, Serialize)]
pub struct FunctionDelta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub arguments: String,
}

impl ResponseMeta {
    /// A chunk with one choice carrying `delta`.
    pub fn chunk(&self, delta: Delta, finish_reason: Option<&'static str>) -> Chunk<'_> {
        Chunk {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: &self.model,
            system_fingerprint: None,
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                logprobs: None,
                finish_reason,
            }],
            usage: self.include_usage.then_some(None),
        }
    }

    /// The usage chunk sent last when `include_usage` is set: no choices, only usage.
    pub fn usage_chunk(&self, usage: Usage) -> Chunk<'_> {
        Chunk {
            id: &self.id,
            object: "chat.completion.chunk",
            created: self.created,
            model: &self.model,
            system_fingerprint: None,
            choices: Vec::new(),
            usage: Some(Some(usage)),
        }
    }
}

/// A whole `chat.completion` object (the non-streamed answer).
#[derive(Debug, Serialize)]
pub struct Completion<'a> {
    pub id: &'a str,
    pub object: &'static str,
    pub created: i64,
    pub model: &'a str,
    pub system_fingerprint: Option<&'a str>,
    pub choices: Vec<CompletionChoice>,
    pub usage: Usage,
}

#[derive(Debug, Serialize)]
pub struct CompletionChoice {
    pub index: u32,
    pub message: AssistantMessage,
    pub logprobs: Option<()>,
    pub finish_reason: &'static str,
}

#[derive(Debug, Serialize)]
pub struct AssistantMessage {
    pub role: &'static str,
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<CompletedToolCall>,
    pub refusal: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct CompletedToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: CompletedFunction,
}

#[derive(Debug, Serialize)]
pub struct CompletedFunction {
    pub name: String,
    pub arguments: String,
}

/// `GET /v1/models`.
#[derive(Debug, Serialize)]
pub struct ModelList {
    pub object: &'static str,
    pub data: Vec<ModelEntry>,
}

#[derive(Debug, Serialize)]
pub struct ModelEntry {
    pub id: String,
    pub object: &'static str,
    pub created: i64,
    pub owned_by: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(body: serde_json::Value) -> Result<Conversation, Error> {
        let req = parse_request(body.to_string().as_bytes())?;
        validate(&req)
    }

    fn message_of(err: Error) -> String {
        match err {
            Error::InvalidRequest { message, .. } => message,
            other => panic!("expected an invalid request, got {other:?}"),
        }
    }

    fn call(id: &str, args: &str) -> serde_json::Value {
        json!({"id": id, "type": "function", "function": {"name": "files_list", "arguments": args}})
    }

    #[test]
    fn a_plain_request_yields_the_conversation() {
        let c = check(json!({
            "model": "scripted", "stream": true, "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hello "}, {"type": "text", "text": "there"}]}
            ]
        }))
        .unwrap();
        assert_eq!(c.last_user_text, "hello there");
        assert_eq!(c.steps_taken, 0);
        assert!(c.stream && c.include_usage);
        assert_eq!(c.last_tool_result, None);
    }

    #[test]
    fn steps_count_assistant_messages_after_the_last_user_message() {
        let c = check(json!({"model": "m", "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "old"},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": null, "tool_calls": [call("a", "{}"), call("b", "{\"x\":1}")]},
            {"role": "tool", "tool_call_id": "b", "content": "result b"},
            {"role": "tool", "tool_call_id": "a", "content": "result a"},
            {"role": "assistant", "content": null, "tool_calls": [call("c", "{}")]},
            {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "result c"}]}
        ]}))
        .unwrap();
        assert_eq!(c.last_user_text, "second");
        assert_eq!(c.steps_taken, 2);
        assert_eq!(c.last_tool_result.as_deref(), Some("result c"));
    }

    #[test]
    fn a_missing_model_is_refused() {
        let err = check(json!({"messages": [{"role": "user", "content": "hi"}]})).unwrap_err();
        assert!(message_of(err).contains("model"));
        let err = check(json!({"model": "", "messages": [{"role": "user", "content": "hi"}]})).unwrap_err();
        assert!(message_of(err).contains("model"));
    }

    #[test]
    fn empty_messages_and_unknown_roles_are_refused() {
        assert!(check(json!({"model": "m", "messages": []})).is_err());
        assert!(check(json!({"model": "m"})).is_err());
        let err = check(json!({"model": "m", "messages": [{"role": "robot", "content": "x"}]})).unwrap_err();
        assert!(message_of(err).contains("robot"));
        let err = check(json!({"model": "m", "messages": [{"role": "user"}]})).unwrap_err();
        assert!(message_of(err).contains("content"));
    }

    #[test]
    fn a_tool_message_must_answer_an_announced_call() {
        let err = check(json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "tool", "tool_call_id": "x", "content": "r"}
        ]}))
        .unwrap_err();
        assert!(message_of(err).contains("must be a response to a preceding message"));

        let err = check(json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a", "{}")]},
            {"role": "tool", "tool_call_id": "zzz", "content": "r"}
        ]}))
        .unwrap_err();
        assert!(message_of(err).contains("'zzz'"));
    }

    #[test]
    fn a_tool_message_cannot_answer_an_older_assistant_message() {
        let err = check(json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a", "{}")]},
            {"role": "tool", "tool_call_id": "a", "content": "r"},
            {"role": "assistant", "content": "done"},
            {"role": "tool", "tool_call_id": "a", "content": "again"}
        ]}))
        .unwrap_err();
        assert!(message_of(err).contains("must be a response"));
    }

    #[test]
    fn every_announced_call_needs_an_answer() {
        let err = check(json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a", "{}"), call("b", "{}")]},
            {"role": "tool", "tool_call_id": "a", "content": "r"},
            {"role": "user", "content": "next"}
        ]}))
        .unwrap_err();
        assert!(message_of(err).contains("did not have response messages"));
        assert!(
            check(json!({"model": "m", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": [call("a", "{}")]}
            ]}))
            .is_err()
        );
    }

    #[test]
    fn tool_call_arguments_must_be_json() {
        let err = check(json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [call("a", "{not json")]},
            {"role": "tool", "tool_call_id": "a", "content": "r"}
        ]}))
        .unwrap_err();
        assert!(message_of(err).contains("not valid JSON"));
    }

    #[test]
    fn duplicate_call_ids_and_empty_assistant_messages_are_refused() {
        assert!(
            check(json!({"model": "m", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "tool_calls": [call("a", "{}"), call("a", "{}")]},
                {"role": "tool", "tool_call_id": "a", "content": "r"},
                {"role": "tool", "tool_call_id": "a", "content": "r"}
            ]}))
            .is_err()
        );
        assert!(
            check(json!({"model": "m", "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant"}
            ]}))
            .is_err()
        );
    }

    #[test]
    fn tool_definitions_are_checked_like_a_provider_does() {
        let ok = json!({"type": "function", "function": {"name": "files_list", "parameters": {"type": "object"}}});
        let dotted = json!({"type": "function", "function": {"name": "files.list"}});
        let base = |tools| json!({"model": "m", "tools": tools, "messages": [{"role": "user", "content": "hi"}]});
        assert!(check(base(json!([ok]))).is_ok());
        let err = check(base(json!([dotted]))).unwrap_err();
        assert!(message_of(err).contains("files.list"));
        assert!(check(base(json!([{"type": "retrieval", "function": {"name": "x"}}]))).is_err());
    }

    #[test]
    fn stream_options_need_stream() {
        let err = check(json!({"model": "m", "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "hi"}]}))
        .unwrap_err();
        assert!(message_of(err).contains("stream_options"));
    }

    #[test]
    fn invalid_json_is_a_400_not_a_panic() {
        assert!(matches!(parse_request(b"{nope"), Err(Error::InvalidRequest { .. })));
    }

    #[test]
    fn chunks_carry_usage_null_only_with_include_usage() {
        let mut meta = ResponseMeta {
            id: "chatcmpl-1".into(),
            created: 1,
            model: "m".into(),
            include_usage: false,
        };
        let plain = serde_json::to_value(meta.chunk(Delta::default(), Some("stop"))).unwrap();
        assert!(plain.get("usage").is_none());
        assert_eq!(plain["choices"][0]["delta"], json!({}));
        assert_eq!(plain["choices"][0]["finish_reason"], "stop");
        meta.include_usage = true;
        let with = serde_json::to_value(meta.chunk(Delta::default(), None)).unwrap();
        assert_eq!(with["usage"], serde_json::Value::Null);
        let last = serde_json::to_value(meta.usage_chunk(Usage::new(3, 4))).unwrap();
        assert_eq!(last["choices"], json!([]));
        assert_eq!(last["usage"]["total_tokens"], 7);
    }
}
