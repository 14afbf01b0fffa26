//! The Vercel AI SDK "UI message stream" (v1) and the UI messages it builds.
//!
//! Owns the wire shapes of the parts we send over SSE, their framing (`data: {json}\n\n`,
//! ending with `data: [DONE]`), the persisted message format (AI SDK `UIMessage`), and
//! [`UiMessage::apply`], which folds stream parts into a message exactly as the AI SDK
//! client does, so what chat.db stores is what the browser shows. MCP tools are dynamic
//! tools (`dynamic-tool` parts). No I/O here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Response header that tells AI SDK clients which stream protocol this is.
pub const PROTOCOL_HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");
/// The last SSE frame of every stream.
pub const DONE_FRAME: &str = "data: [DONE]\n\n";

/// One part of the UI message stream, as sent to the browser.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum StreamPart {
    Start {
        message_id: String,
    },
    StartStep,
    TextStart {
        id: String,
    },
    TextDelta {
        id: String,
        delta: String,
    },
    TextEnd {
        id: String,
    },
    ToolInputStart {
        tool_call_id: String,
        tool_name: String,
        dynamic: bool,
    },
    ToolInputAvailable {
        tool_call_id: String,
        tool_name: String,
        input: Value,
        dynamic: bool,
        /// Where the call goes (absent for a name no tool has): the approval card names it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_metadata: Option<Box<ToolMeta>>,
    },
    ToolApprovalRequest {
        approval_id: String,
        tool_call_id: String,
    },
    ToolOutputAvailable {
        tool_call_id: String,
        output: Value,
        dynamic: bool,
    },
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
        dynamic: bool,
    },
    ToolOutputDenied {
        tool_call_id: String,
    },
    FinishStep,
    /// The turn's end, with the last model call's finish reason in the AI SDK's spelling
    /// ([`finish_reason`]); absent when no model call finished (a turn of decisions only).
    Finish {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<FinishReason>,
    },
    Error {
        error_text: String,
    },
    /// `data-compaction`: earlier messages were summarised for the model (what, in `data`).
    /// Shown live; not part of the stored message (chat.db keeps the summary itself).
    DataCompaction {
        data: Value,
    },
    /// `data-tools-unavailable`: tool servers this person could use are out of service (their
    /// restart limit was reached, `actors::root`), so their tools are missing from this turn
    /// (`{servers, message}` in `data`). Shown live; not part of the stored message.
    DataToolsUnavailable {
        data: Value,
    },
    /// `data-interrupted` (`{requestId, message}`): the turn was stopped before its end (no
    /// client read it for the orphan grace). Kept in the stored message, as the marker
    /// store::lease writes for a turn whose server stopped.
    DataInterrupted {
        data: Value,
    },
}

/// The AI SDK's finish reasons (`finishReason` of its `finish` chunk).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    Stop,
    Length,
    ContentFilter,
    ToolCalls,
    Error,
    Other,
}

/// An OpenAI-compatible provider's `finish_reason` in the AI SDK's spelling. Providers differ
/// (llama.cpp, vLLM and Ollama all say `stop`, `length` and `tool_calls`; older servers say
/// `function_call`, some `eos` or `abort`): what is not one of the known ones is `other`,
/// never an error, as the AI SDK's own OpenAI provider maps it.
pub fn finish_reason(provider: &str) -> FinishReason {
    match provider {
        "stop" | "eos" | "end_turn" => FinishReason::Stop,
        "length" | "max_tokens" => FinishReason::Length,
        "content_filter" => FinishReason::ContentFilter,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        _ => FinishReason::Other,
    }
}

impl StreamPart {
    /// The SSE frame for this part.
    pub fn frame(&self) -> String {
        // Serialising our own enum cannot fail; an empty object would still be valid SSE.
        let json = serde_json::to_string(self).unwrap_or_else(|_| "{}".into());
        format!("data: {json}\n\n")
    }

    /// Whether folding this part into a message changes it.
    pub fn changes_message(&self) -> bool {
        !matches!(
            self,
            StreamPart::Start { .. }
                | StreamPart::FinishStep
                | StreamPart::Finish { .. }
                | StreamPart::Error { .. }
                | StreamPart::DataCompaction { .. }
                | StreamPart::DataToolsUnavailable { .. }
        )
    }

    /// Parts after which the message is persisted: a kill -9 must not lose anything that
    /// was streamed as finished.
    pub fn is_boundary(&self) -> bool {
        !matches!(
            self,
            StreamPart::TextDelta { .. } | StreamPart::TextStart { .. } | StreamPart::ToolInputStart { .. } | StreamPart::StartStep
        )
    }
}

/// A persisted message (AI SDK `UIMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UiMessage {
    pub id: String,
    pub role: Role,
    pub parts: Vec<UiPart>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// A part of a UI message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum UiPart {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<TextState>,
    },
    StepStart,
    DynamicTool(ToolPart),
    /// `data-interrupted`: the server writing this message stopped before the turn ended
    /// (`data` holds the turn's `requestId` and a `message`). Written by the instance that
    /// took the conversation over (store::lease), or by the turn itself when it was stopped
    /// because nobody read it (`StreamPart::DataInterrupted`); never sent to the model.
    DataInterrupted {
        data: Value,
    },
    /// Any part type we do not handle (files, reasoning, sources…): kept, never interpreted.
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextState {
    Streaming,
    Done,
}

/// A dynamic tool call and everything that happened to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolPart {
    pub tool_name: String,
    pub tool_call_id: String,
    pub state: ToolState,
    #[serde(default)]
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// The AI SDK's `toolMetadata` of the part: which server the call goes to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Boxed: most parts in a long history are tool parts, and the part enum stays small.
    pub tool_metadata: Option<Box<ToolMeta>>,
}

/// What a tool part tells about where its call goes (AI SDK `toolMetadata`), so the approval
/// card can name the server the arguments would be sent to, and say when it is a third party
/// (G3, issue #27). Fixed by the turn from its registry, never by the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolMeta {
    /// The configured server name (`tamebi` for the orchestrator's own tools).
    #[serde(default)]
    pub server: String,
    /// The tool's own name on that server.
    #[serde(default)]
    pub tool: String,
    /// A server that is not ours (`auth=none`): what the call carries leaves for a third party.
    #[serde(default)]
    pub third_party: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolState {
    InputStreaming,
    InputAvailable,
    ApprovalRequested,
    ApprovalResponded,
    OutputAvailable,
    OutputError,
    OutputDenied,
}

/// An approval as the AI SDK client records it on a tool part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl UiMessage {
    pub fn new(id: String, role: Role) -> Self {
        UiMessage {
            id,
            role,
            parts: Vec::new(),
        }
    }

    /// The concatenated text parts (for titles and for the model).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            if let UiPart::Text { text, .. } = p {
                out.push_str(text);
            }
        }
        out
    }

    /// Folds one stream part into the message, as the AI SDK client does.
    pub fn apply(&mut self, part: &StreamPart) {
        match part {
            StreamPart::Start { .. }
            | StreamPart::Finish { .. }
            | StreamPart::FinishStep
            | StreamPart::Error { .. }
            | StreamPart::DataCompaction { .. }
            | StreamPart::DataToolsUnavailable { .. } => {}
            StreamPart::StartStep => self.parts.push(UiPart::StepStart),
            StreamPart::DataInterrupted { data } => self.parts.push(UiPart::DataInterrupted { data: data.clone() }),
            StreamPart::TextStart { .. } => self.parts.push(UiPart::Text {
                text: String::new(),
                state: Some(TextState::Streaming),
            }),
            StreamPart::TextDelta { delta, .. } => {
                if let Some(UiPart::Text { text, .. }) = self.parts.iter_mut().rev().find(|p| matches!(p, UiPart::Text { .. })) {
                    text.push_str(delta);
                }
            }
            StreamPart::TextEnd { .. } => {
                if let Some(UiPart::Text { state, .. }) = self.parts.iter_mut().rev().find(|p| matches!(p, UiPart::Text { .. })) {
                    *state = Some(TextState::Done);
                }
            }
            StreamPart::ToolInputStart {
                tool_call_id, tool_name, ..
            } => self.parts.push(UiPart::DynamicTool(ToolPart {
                tool_name: tool_name.clone(),
                tool_call_id: tool_call_id.clone(),
                state: ToolState::InputStreaming,
                input: Value::Null,
                output: None,
                error_text: None,
                approval: None,
                tool_metadata: None,
            })),
            StreamPart::ToolInputAvailable {
                tool_call_id,
                tool_name,
                input,
                tool_metadata,
                ..
            } => match self.tool_mut(tool_call_id) {
                Some(t) => {
                    t.state = ToolState::InputAvailable;
                    t.input = input.clone();
                    // As the AI SDK client does: metadata replaces what was there only when sent.
                    if tool_metadata.is_some() {
                        t.tool_metadata = tool_metadata.clone();
                    }
                }
                None => self.parts.push(UiPart::DynamicTool(ToolPart {
                    tool_name: tool_name.clone(),
                    tool_call_id: tool_call_id.clone(),
                    state: ToolState::InputAvailable,
                    input: input.clone(),
                    output: None,
                    error_text: None,
                    approval: None,
                    tool_metadata: tool_metadata.clone(),
                })),
            },
            StreamPart::ToolApprovalRequest { approval_id, tool_call_id } => {
                if let Some(t) = self.tool_mut(tool_call_id) {
                    t.state = ToolState::ApprovalRequested;
                    t.approval = Some(Approval {
                        id: approval_id.clone(),
                        approved: None,
                        reason: None,
                    });
                }
            }
            StreamPart::ToolOutputAvailable { tool_call_id, output, .. } => {
                if let Some(t) = self.tool_mut(tool_call_id) {
                    t.state = ToolState::OutputAvailable;
                    t.output = Some(output.clone());
                }
            }
            StreamPart::ToolOutputError {
                tool_call_id, error_text, ..
            } => {
                if let Some(t) = self.tool_mut(tool_call_id) {
                    t.state = ToolState::OutputError;
                    t.error_text = Some(error_text.clone());
                }
            }
            StreamPart::ToolOutputDenied { tool_call_id } => {
                if let Some(t) = self.tool_mut(tool_call_id) {
                    t.state = ToolState::OutputDenied;
                }
            }
        }
    }

    pub fn tool_mut(&mut self, tool_call_id: &str) -> Option<&mut ToolPart> {
        self.parts.iter_mut().find_map(|p| match p {
            UiPart::DynamicTool(t) if t.tool_call_id == tool_call_id => Some(t),
            _ => None,
        })
    }

    /// True when exactly one tool part carries `tool_call_id`, and it shows `tool_name`
    /// with `input`, going to the server `meta` names: what an approval card for that call
    /// renders (G3).
    pub fn shows_exactly(&self, tool_call_id: &str, tool_name: &str, input: &Value, meta: &ToolMeta) -> bool {
        let mut parts = self.parts.iter().filter_map(|p| match p {
            UiPart::DynamicTool(t) if t.tool_call_id == tool_call_id => Some(t),
            _ => None,
        });
        matches!((parts.next(), parts.next()), (Some(t), None)
            if t.tool_name == tool_name && t.input == *input && t.tool_metadata.as_deref() == Some(meta))
    }

    /// Text parts still streaming when a turn died are closed, so a reload shows them as
    /// they were rather than as forever in progress. True when anything changed.
    pub fn close_open_text(&mut self) -> bool {
        let mut changed = false;
        for p in &mut self.parts {
            if let UiPart::Text { state, .. } = p
                && *state == Some(TextState::Streaming)
            {
                *state = Some(TextState::Done);
                changed = true;
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_finish_reasons_take_the_ai_sdk_spelling() {
        let cases = [
            ("stop", FinishReason::Stop),
            ("length", FinishReason::Length),
            ("tool_calls", FinishReason::ToolCalls),
            ("function_call", FinishReason::ToolCalls),
            ("content_filter", FinishReason::ContentFilter),
            ("abort", FinishReason::Other),
            ("", FinishReason::Other),
        ];
        for (provider, ours) in cases {
            assert_eq!(finish_reason(provider), ours, "{provider}");
        }
        let part = StreamPart::Finish {
            finish_reason: Some(FinishReason::ToolCalls),
        };
        assert_eq!(part.frame(), "data: {\"type\":\"finish\",\"finishReason\":\"tool-calls\"}\n\n");
        let bare = StreamPart::Finish { finish_reason: None };
        assert_eq!(bare.frame(), "data: {\"type\":\"finish\"}\n\n");
    }

    #[test]
    fn shows_exactly_needs_one_part_with_that_name_and_input() {
        let mut m = UiMessage::new("m".into(), Role::Assistant);
        let start = |name: &str| StreamPart::ToolInputStart {
            tool_call_id: "c1".into(),
            tool_name: name.into(),
            dynamic: true,
        };
        let meta = |server: &str| ToolMeta {
            server: server.into(),
            tool: "files_move".into(),
            third_party: false,
        };
        m.apply(&start("files_move"));
        m.apply(&StreamPart::ToolInputAvailable {
            tool_call_id: "c1".into(),
            tool_name: "files_move".into(),
            input: serde_json::json!({"from": "a"}),
            dynamic: true,
            tool_metadata: Some(Box::new(meta("nextcloud"))),
        });
        let from_a = serde_json::json!({"from": "a"});
        assert!(m.shows_exactly("c1", "files_move", &from_a, &meta("nextcloud")));
        assert!(!m.shows_exactly("c1", "files_read", &from_a, &meta("nextcloud")));
        assert!(!m.shows_exactly("c1", "files_move", &serde_json::json!({"from": "b"}), &meta("nextcloud")));
        assert!(!m.shows_exactly("c2", "files_move", &from_a, &meta("nextcloud")));
        // Issue #27: the card must name the server the arguments go to.
        assert!(!m.shows_exactly("c1", "files_move", &from_a, &meta("weather")));
        m.apply(&start("files_read"));
        assert!(
            !m.shows_exactly("c1", "files_move", &from_a, &meta("nextcloud")),
            "two parts share the id"
        );
    }
    use serde_json::json;

    #[test]
    fn parts_serialise_as_the_ai_sdk_expects() {
        let p = StreamPart::ToolInputAvailable {
            tool_call_id: "c1".into(),
            tool_name: "files_list".into(),
            input: json!({"path": "/"}),
            dynamic: true,
            tool_metadata: None,
        };
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"type": "tool-input-available", "toolCallId": "c1", "toolName": "files_list", "input": {"path": "/"}, "dynamic": true})
        );
        let p = StreamPart::ToolInputAvailable {
            tool_call_id: "c1".into(),
            tool_name: "weather_today".into(),
            input: json!({"city": "x"}),
            dynamic: true,
            tool_metadata: Some(Box::new(ToolMeta {
                server: "weather".into(),
                tool: "weather_today".into(),
                third_party: true,
            })),
        };
        assert_eq!(
            serde_json::to_value(&p).unwrap()["toolMetadata"],
            json!({"server": "weather", "tool": "weather_today", "thirdParty": true})
        );
        assert_eq!(serde_json::to_value(StreamPart::StartStep).unwrap(), json!({"type": "start-step"}));
        assert_eq!(
            StreamPart::Start { message_id: "m".into() }.frame(),
            "data: {\"type\":\"start\",\"messageId\":\"m\"}\n\n"
        );
    }

    #[test]
    fn apply_builds_the_message_the_client_builds() {
        let mut m = UiMessage::new("a1".into(), Role::Assistant);
        for p in [
            StreamPart::Start { message_id: "a1".into() },
            StreamPart::StartStep,
            StreamPart::TextStart { id: "t".into() },
            StreamPart::TextDelta {
                id: "t".into(),
                delta: "Hel".into(),
            },
            StreamPart::TextDelta {
                id: "t".into(),
                delta: "lo".into(),
            },
            StreamPart::TextEnd { id: "t".into() },
            StreamPart::ToolInputStart {
                tool_call_id: "c".into(),
                tool_name: "x".into(),
                dynamic: true,
            },
            StreamPart::ToolInputAvailable {
                tool_call_id: "c".into(),
                tool_name: "x".into(),
                input: json!({"a": 1}),
                dynamic: true,
                tool_metadata: None,
            },
            StreamPart::ToolApprovalRequest {
                approval_id: "ap".into(),
                tool_call_id: "c".into(),
            },
        ] {
            m.apply(&p);
        }
        assert_eq!(m.text(), "Hello");
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v["parts"][2],
            json!({"type": "dynamic-tool", "toolName": "x", "toolCallId": "c", "state": "approval-requested", "input": {"a": 1}, "approval": {"id": "ap"}})
        );
        m.apply(&StreamPart::ToolOutputDenied { tool_call_id: "c".into() });
        assert_eq!(m.tool_mut("c").unwrap().state, ToolState::OutputDenied);
    }

    #[test]
    fn client_messages_with_unknown_parts_still_parse() {
        let m: UiMessage = serde_json::from_value(json!({
            "id": "u1", "role": "user",
            "parts": [{"type": "text", "text": "hi"}, {"type": "file", "url": "data:,x", "mediaType": "text/plain"}]
        }))
        .unwrap();
        assert_eq!(m.parts.len(), 2);
        assert_eq!(m.parts[1], UiPart::Other);
    }
}
