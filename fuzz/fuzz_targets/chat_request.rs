//! The body of `POST /v1/chat` (the AI SDK UI message shapes: text, files, tool parts with
//! approval decisions) as `http::chat::parse` reads it, before any turn starts.
//!
//! Raw bytes (seeded with real bodies, guided by `chat_request.dict`) and, behind a first
//! byte of 0, bodies assembled from `arbitrary` parts so the deeper checks (last message
//! role, approval parts, text bounds) are reached often. Property: nothing panics and the
//! outcome is the same when the body is read twice (it depends on the bytes only).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[derive(Arbitrary, Debug)]
enum Part<'a> {
    Text(&'a str),
    Reasoning(&'a str),
    File {
        media: &'a str,
        url: &'a str,
    },
    Tool {
        dynamic: bool,
        name: &'a str,
        call: &'a str,
        state: u8,
        approved: Option<bool>,
        approval_id: Option<&'a str>,
        reason: Option<&'a str>,
        input: Option<&'a str>,
    },
    StepStart,
    Unknown(&'a str),
}

#[derive(Arbitrary, Debug)]
struct Message<'a> {
    id: &'a str,
    role: u8,
    parts: Vec<Part<'a>>,
}

#[derive(Arbitrary, Debug)]
struct Body<'a> {
    id: &'a str,
    trigger: Option<&'a str>,
    assistant: Option<&'a str>,
    origin: Option<&'a str>,
    messages: Vec<Message<'a>>,
}

const STATES: [&str; 7] = [
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied",
];
const ROLES: [&str; 4] = ["user", "assistant", "system", "tool"];

fn part(p: &Part<'_>) -> Value {
    match p {
        Part::Text(t) => json!({"type": "text", "text": t}),
        Part::Reasoning(t) => json!({"type": "reasoning", "text": t}),
        Part::File { media, url } => json!({"type": "file", "mediaType": media, "url": url}),
        Part::Tool {
            dynamic,
            name,
            call,
            state,
            approved,
            approval_id,
            reason,
            input,
        } => {
            let mut v = json!({
                "toolCallId": call,
                "state": STATES[usize::from(*state) % STATES.len()],
            });
            // The AI SDK's two spellings: `dynamic-tool` + `toolName`, or `tool-<name>`.
            if *dynamic {
                v["type"] = json!("dynamic-tool");
                v["toolName"] = json!(name);
            } else {
                v["type"] = json!(format!("tool-{name}"));
            }
            if let Some(i) = input {
                v["input"] = serde_json::from_str(i).unwrap_or(Value::String(i.to_string()));
            }
            if approved.is_some() || approval_id.is_some() {
                v["approval"] = json!({"id": approval_id, "approved": approved, "reason": reason});
            }
            v
        }
        Part::StepStart => json!({"type": "step-start"}),
        Part::Unknown(t) => json!({"type": t}),
    }
}

fn assembled(data: &[u8]) -> Option<Vec<u8>> {
    let body = Body::arbitrary(&mut Unstructured::new(data)).ok()?;
    let messages: Vec<Value> = body
        .messages
        .iter()
        .map(|m| json!({"id": m.id, "role": ROLES[usize::from(m.role) % ROLES.len()], "parts": m.parts.iter().map(part).collect::<Vec<_>>()}))
        .collect();
    let mut v = json!({"id": body.id, "messages": messages});
    if let Some(t) = body.trigger {
        v["trigger"] = json!(t);
    }
    if let Some(a) = body.assistant {
        v["assistant"] = json!(a);
    }
    if let Some(o) = body.origin {
        v["origin"] = json!(o);
    }
    serde_json::to_vec(&v).ok()
}

fuzz_target!(|data: &[u8]| {
    let body = match data.split_first() {
        Some((0, rest)) => match assembled(rest) {
            Some(b) => b,
            None => return,
        },
        _ => data.to_vec(),
    };
    let first = tamebi::http::chat::parse(&body).map(|_| ()).map_err(|e| e.to_string());
    let second = tamebi::http::chat::parse(&body).map(|_| ()).map_err(|e| e.to_string());
    assert_eq!(first, second);
});
