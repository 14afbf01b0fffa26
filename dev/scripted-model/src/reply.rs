//! Turning a decided reply into bytes on the wire: the streamed chunk sequence (as a pure
//! plan, then paced out over SSE) or a whole `chat.completion`.
//!
//! The plan is pure so its exact frame order is unit-tested; only `sse_response` and
//! `json_response` touch time. Every stream ends when the server shuts down, so an open
//! stream can never hold graceful shutdown hostage.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::openai::{
    AssistantMessage, CompletedFunction, CompletedToolCall, Completion, CompletionChoice, Delta, FunctionDelta, ResponseMeta,
    ToolCallDelta, Usage, tokens_for,
};
use crate::script::Reply;

/// A tool call with its id assigned and its arguments rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifiedCall {
    pub id: String,
    /// The `index` its stream deltas carry (its position, unless the script says otherwise).
    pub index: u64,
    pub name: String,
    pub arguments: String,
}

/// One thing the stream does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emit {
    /// A `data:` frame with this payload.
    Data(String),
    Pause(Duration),
    /// Drop the connection without finishing the response.
    Cut,
    /// Send these bytes as they are (a frame cut short), no SSE framing added.
    Raw(String),
    /// Send nothing more and never end (until the client leaves or the server shuts down).
    Stall,
}

/// Splits `text` into pieces of at most `n` characters (never inside a character).
pub fn split_chars(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// Usage for a reply: the script's override where given, an estimate otherwise.
pub fn usage_for(reply: &Reply, calls: &[IdentifiedCall], prompt_tokens: u64) -> Usage {
    let produced = reply.text.chars().count() + calls.iter().map(|c| c.arguments.chars().count()).sum::<usize>();
    let prompt = reply.usage.and_then(|u| u.prompt_tokens).unwrap_or(prompt_tokens);
    let completion = reply
        .usage
        .and_then(|u| u.completion_tokens)
        .unwrap_or_else(|| tokens_for(produced));
    Usage::new(prompt, completion)
}

/// The whole streamed answer in OpenAI's order: a role delta, text deltas, for each call a
/// delta with index/id/type/name then argument pieces, the finish chunk, the usage chunk
/// when asked for, then `[DONE]`. `Pause`s go between content pieces.
pub fn stream_plan(reply: &Reply, calls: &[IdentifiedCall], meta: &ResponseMeta, usage: Usage) -> Vec<Emit> {
    let mut plan = Vec::new();
    let frame = |delta: Delta, finish: Option<&'static str>| Emit::Data(json(&meta.chunk(delta, finish)));
    plan.push(frame(
        Delta {
            role: Some("assistant"),
            content: Some(String::new()),
            tool_calls: None,
        },
        None,
    ));

    let mut pieces = 0usize;
    let mut pace = |plan: &mut Vec<Emit>| {
        if pieces > 0 && !reply.pacing.delay.is_zero() {
            plan.push(Emit::Pause(reply.pacing.delay));
        }
        pieces += 1;
    };

    let text: String = match reply.abort_after_chars.or(reply.stall_after_chars) {
        Some(n) => reply.text.chars().take(n).collect(),
        None => reply.text.clone(),
    };
    for piece in split_chars(&text, reply.pacing.chunk_chars) {
        pace(&mut plan);
        plan.push(frame(
            Delta {
                content: Some(piece),
                ..Delta::default()
            },
            None,
        ));
    }
    if reply.stall_after_chars.is_some() {
        plan.push(Emit::Stall);
        return plan;
    }
    if reply.abort_after_chars.is_some() {
        if reply.cut_mid_chunk {
            // Half of the next frame: `data: {"id":…` broken off inside its JSON.
            let next = json(&meta.chunk(
                Delta {
                    content: Some(reply.text.chars().skip(text.chars().count()).collect()),
                    ..Delta::default()
                },
                None,
            ));
            let half: String = next.chars().take(next.chars().count() / 2).collect();
            plan.push(Emit::Raw(format!("data: {half}")));
        }
        plan.push(Emit::Cut);
        return plan;
    }

    for call in calls {
        let index = call.index;
        pace(&mut plan);
        let announce = ToolCallDelta {
            index,
            id: Some(call.id.clone()),
            kind: Some("function"),
            function: FunctionDelta {
                name: Some(call.name.clone()),
                arguments: String::new(),
            },
        };
        plan.push(frame(
            Delta {
                tool_calls: Some(vec![announce]),
                ..Delta::default()
            },
            None,
        ));
        for piece in split_chars(&call.arguments, reply.pacing.chunk_chars) {
            pace(&mut plan);
            let args = ToolCallDelta {
                index,
                id: None,
                kind: None,
                function: FunctionDelta {
                    name: None,
                    arguments: piece,
                },
            };
            plan.push(frame(
                Delta {
                    tool_calls: Some(vec![args]),
                    ..Delta::default()
                },
                None,
            ));
        }
    }

    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    plan.push(frame(Delta::default(), Some(finish)));
    if meta.include_usage {
        plan.push(Emit::Data(json(&meta.usage_chunk(usage))));
    }
    plan.push(Emit::Data("[DONE]".to_string()));
    plan
}

/// The non-streamed `chat.completion` object.
pub fn completion_body(reply: &Reply, calls: &[IdentifiedCall], meta: &ResponseMeta, usage: Usage) -> String {
    let content = (!reply.text.is_empty() || calls.is_empty()).then(|| reply.text.clone());
    let tool_calls = calls
        .iter()
        .map(|c| CompletedToolCall {
            id: c.id.clone(),
            kind: "function",
            function: CompletedFunction {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            },
        })
        .collect();
    json(&Completion {
        id: &meta.id,
        object: "chat.completion",
        created: meta.created,
        model: &meta.model,
        system_fingerprint: None,
        choices: vec![CompletionChoice {
            index: 0,
            message: AssistantMessage {
                role: "assistant",
                content,
                tool_calls,
                refusal: None,
            },
            logprobs: None,
            finish_reason: if calls.is_empty() { "stop" } else { "tool_calls" },
        }],
        usage,
    })
}

fn json<T: serde::Serialize>(value: &T) -> String {
    // Serialising these plain structs cannot fail; an empty object keeps the stream going if
    // it somehow did.
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string())
}

/// The error a `Cut` raises inside the body, which makes hyper drop the connection.
#[derive(Debug, thiserror::Error)]
#[error("scripted abort")]
struct Abort;

/// Streams the plan over SSE, pausing as planned; ends early on shutdown. Frames are written
/// by hand (`data: …` and a blank line, as axum's `Sse` writes them) so that a plan can also
/// send a frame cut short.
pub fn sse_response(plan: Vec<Emit>, shutdown: CancellationToken) -> Response {
    let stream = async_stream::stream! {
        for emit in plan {
            match emit {
                Emit::Data(data) => yield Ok::<Bytes, Abort>(Bytes::from(format!("data: {data}\n\n"))),
                Emit::Raw(bytes) => yield Ok(Bytes::from(bytes)),
                Emit::Pause(d) => tokio::time::sleep(d).await,
                Emit::Stall => futures::future::pending::<()>().await,
                Emit::Cut => {
                    // Let hyper flush what was sent so far, so the client really sees a
                    // response that breaks off rather than no response at all.
                    tokio::task::yield_now().await;
                    yield Err(Abort);
                    return;
                }
            }
        }
    };
    let headers = [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")];
    (headers, Body::from_stream(stream.take_until(shutdown.cancelled_owned()))).into_response()
}

/// A `200 OK` whose body is an HTML page: what a proxy or captive portal answers in the
/// provider's place.
pub fn html_response(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

/// Sends a whole completion after the pauses its chunks would have taken. With an abort,
/// only the first `after_chars` bytes of the JSON are sent before the connection is cut.
pub async fn json_response(body: String, pauses: Duration, abort_after_chars: Option<usize>, shutdown: &CancellationToken) -> Response {
    if !pauses.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(pauses) => {}
            () = shutdown.cancelled() => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        }
    }
    let Some(after) = abort_after_chars else {
        return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    };
    let mut cut = after.min(body.len());
    while !body.is_char_boundary(cut) {
        cut -= 1;
    }
    let partial = Bytes::copy_from_slice(&body.as_bytes()[..cut]);
    let parts = async_stream::stream! {
        yield Ok::<Bytes, Abort>(partial);
        tokio::task::yield_now().await;
        yield Err(Abort);
    };
    ([(header::CONTENT_TYPE, "application/json")], Body::from_stream(parts)).into_response()
}

/// Waits for shutdown: the `hang` step accepts the request and never answers before it.
pub async fn hang(shutdown: &CancellationToken) -> Response {
    shutdown.cancelled().await;
    StatusCode::SERVICE_UNAVAILABLE.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::ScriptedCall;
    use crate::script::Pacing;
    use serde_json::{Value, json};

    fn meta(include_usage: bool) -> ResponseMeta {
        ResponseMeta {
            id: "chatcmpl-7".into(),
            created: 1_767_225_600,
            model: "scripted".into(),
            include_usage,
        }
    }

    fn reply(text: &str, chunk_chars: usize) -> Reply {
        Reply {
            text: text.into(),
            calls: Vec::new(),
            pacing: Pacing {
                chunk_chars,
                ..Pacing::default()
            },
            abort_after_chars: None,
            cut_mid_chunk: false,
            stall_after_chars: None,
            usage: None,
        }
    }

    fn frames(plan: &[Emit]) -> Vec<Value> {
        plan.iter()
            .filter_map(|e| match e {
                Emit::Data(d) if d != "[DONE]" => Some(serde_json::from_str(d).unwrap()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn split_respects_characters() {
        assert_eq!(split_chars("héllo✓", 2), vec!["hé", "ll", "o✓"]);
        assert!(split_chars("", 3).is_empty());
    }

    #[test]
    fn a_text_reply_streams_role_content_finish_usage_done() {
        let r = reply("Hello world", 4);
        let usage = usage_for(&r, &[], 10);
        let plan = stream_plan(&r, &[], &meta(true), usage);
        assert_eq!(plan.last(), Some(&Emit::Data("[DONE]".into())));
        let f = frames(&plan);
        assert_eq!(f[0]["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
        let text: String = f[1..4]
            .iter()
            .map(|c| c["choices"][0]["delta"]["content"].as_str().unwrap())
            .collect();
        assert_eq!(text, "Hello world");
        assert_eq!(f[4]["choices"][0]["finish_reason"], "stop");
        assert_eq!(f[4]["usage"], Value::Null);
        assert_eq!(f[5]["choices"], json!([]));
        assert_eq!(
            f[5]["usage"],
            json!({"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13})
        );
        assert!(f.iter().all(|c| c["object"] == "chat.completion.chunk" && c["id"] == "chatcmpl-7"));
    }

    #[test]
    fn tool_calls_announce_then_stream_arguments() {
        let mut r = reply("Let me look.", 100);
        r.calls = vec![ScriptedCall {
            name: "files_list".into(),
            arguments: json!({"path": "/"}),
            id: None,
            index: None,
        }];
        let calls = vec![
            IdentifiedCall {
                id: "call_1".into(),
                index: 0,
                name: "files_list".into(),
                arguments: "{\"path\":\"/\"}".into(),
            },
            IdentifiedCall {
                id: "call_2".into(),
                index: 1,
                name: "files_grep".into(),
                arguments: "{}".into(),
            },
        ];
        r.pacing.chunk_chars = 5;
        let plan = stream_plan(&r, &calls, &meta(false), usage_for(&r, &calls, 1));
        let f = frames(&plan);
        let deltas: Vec<&Value> = f.iter().map(|c| &c["choices"][0]["delta"]).collect();
        let first_call = deltas.iter().position(|d| d.get("tool_calls").is_some()).unwrap();
        assert_eq!(
            deltas[first_call]["tool_calls"][0],
            json!({"index": 0, "id": "call_1", "type": "function", "function": {"name": "files_list", "arguments": ""}})
        );
        let args0: String = deltas
            .iter()
            .filter_map(|d| d.get("tool_calls"))
            .filter(|t| t[0]["index"] == 0 && t[0].get("id").is_none())
            .map(|t| t[0]["function"]["arguments"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(args0, "{\"path\":\"/\"}");
        assert!(deltas.iter().any(|d| d["tool_calls"][0]["id"] == "call_2"));
        assert_eq!(f.last().unwrap()["choices"][0]["finish_reason"], "tool_calls");
        assert!(f.iter().all(|c| c.get("usage").is_none()));
    }

    #[test]
    fn pauses_go_between_pieces_only() {
        let mut r = reply("abcd", 1);
        r.pacing.delay = Duration::from_millis(3);
        let plan = stream_plan(&r, &[], &meta(false), usage_for(&r, &[], 1));
        let pauses = plan.iter().filter(|e| matches!(e, Emit::Pause(_))).count();
        assert_eq!(pauses, 3);
        assert!(matches!(plan[1], Emit::Data(_)), "no pause before the first piece");
    }

    #[test]
    fn an_abort_cuts_after_the_given_characters_without_finishing() {
        let mut r = reply("abcdefgh", 2);
        r.abort_after_chars = Some(5);
        let plan = stream_plan(&r, &[], &meta(true), usage_for(&r, &[], 1));
        assert_eq!(plan.last(), Some(&Emit::Cut));
        let f = frames(&plan);
        let text: String = f.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
        assert_eq!(text, "abcde");
        assert!(f.iter().all(|c| c["choices"][0]["finish_reason"].is_null()));
    }

    #[test]
    fn a_mid_chunk_cut_sends_half_a_frame_then_cuts() {
        let mut r = reply("abcdefgh", 2);
        r.abort_after_chars = Some(4);
        r.cut_mid_chunk = true;
        let plan = stream_plan(&r, &[], &meta(false), usage_for(&r, &[], 1));
        assert_eq!(plan.last(), Some(&Emit::Cut));
        let Some(Emit::Raw(half)) = plan.get(plan.len() - 2) else {
            panic!("no half frame: {plan:?}")
        };
        assert!(half.starts_with("data: {"), "{half}");
        assert!(
            serde_json::from_str::<Value>(half.trim_start_matches("data: ")).is_err(),
            "cut inside its JSON"
        );
        let text: String = frames(&plan)
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "abcd");
    }

    #[test]
    fn a_stall_sends_the_first_characters_then_nothing() {
        let mut r = reply("abcdefgh", 3);
        r.stall_after_chars = Some(3);
        let plan = stream_plan(&r, &[], &meta(true), usage_for(&r, &[], 1));
        assert_eq!(plan.last(), Some(&Emit::Stall));
        let f = frames(&plan);
        let text: String = f.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
        assert_eq!(text, "abc");
        assert!(f.iter().all(|c| c["choices"][0]["finish_reason"].is_null()));
    }

    #[test]
    fn a_completion_has_content_or_tool_calls() {
        let r = reply("hi", 8);
        let body: Value = serde_json::from_str(&completion_body(&r, &[], &meta(false), Usage::new(1, 1))).unwrap();
        assert_eq!(body["object"], "chat.completion");
        assert_eq!(body["choices"][0]["message"]["content"], "hi");
        assert_eq!(body["choices"][0]["finish_reason"], "stop");
        assert!(body["choices"][0]["message"].get("tool_calls").is_none());

        let r = reply("", 8);
        let calls = vec![IdentifiedCall {
            id: "call_9".into(),
            index: 0,
            name: "a".into(),
            arguments: "{}".into(),
        }];
        let body: Value = serde_json::from_str(&completion_body(&r, &calls, &meta(false), Usage::new(1, 1))).unwrap();
        assert_eq!(body["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(body["choices"][0]["message"]["tool_calls"][0]["id"], "call_9");
        assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    }

    #[test]
    fn usage_overrides_win() {
        let mut r = reply("abcdefgh", 8);
        r.usage = Some(crate::script::UsageOverride {
            prompt_tokens: Some(5000),
            completion_tokens: None,
        });
        assert_eq!(usage_for(&r, &[], 3), Usage::new(5000, 2));
    }
}
