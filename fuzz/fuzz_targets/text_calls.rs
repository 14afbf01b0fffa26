//! The text tool-call parser (`model::text_calls::TextCalls`): Hermes `<tool_call>`, Mistral
//! `[TOOL_CALLS]` (both templates), Llama `<|python_tag|>` and bare JSON objects, written by
//! a model into its message text and streamed in pieces.
//!
//! The text is cut into stream pieces at fuzzed points (on character boundaries, as the
//! stream's deltas are strings). Input: a byte `n`, then `2n` bytes from which `arbitrary`
//! draws the cut points, then the text (so a seed is `\0` and a model's message). Properties: nothing panics; the result does not depend on
//! where the stream was cut (the events of the cut stream, adjacent text joined, equal those
//! of the whole text pushed at once); every call has a non-empty name and arguments that are
//! a JSON object; no more text comes out than went in.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use tamebi::model::text_calls::{TextCallEvent, TextCalls};

/// The cut points and the text of one input.
fn input(data: &[u8]) -> Option<(Vec<u16>, &str)> {
    let (n, rest) = data.split_first()?;
    let split = (usize::from(*n) * 2).min(rest.len());
    let (cut_bytes, text) = rest.split_at(split);
    let mut u = Unstructured::new(cut_bytes);
    let cuts = (0..*n).map(|_| u16::arbitrary(&mut u).unwrap_or(0)).collect();
    Some((cuts, std::str::from_utf8(text).ok()?))
}

fn joined(events: Vec<TextCallEvent>) -> Vec<TextCallEvent> {
    let mut out: Vec<TextCallEvent> = Vec::new();
    for e in events {
        match (out.last_mut(), e) {
            (Some(TextCallEvent::Text(t)), TextCallEvent::Text(more)) => t.push_str(&more),
            (_, TextCallEvent::Text(t)) if t.is_empty() => {}
            (_, e) => out.push(e),
        }
    }
    out
}

fn pieces<'a>(text: &'a str, cuts: &[u16]) -> Vec<&'a str> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut i = usize::from(*c) % (text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        })
        .collect();
    at.push(0);
    at.push(text.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((cuts, text)) = input(data) else { return };
    let mut whole = TextCalls::default();
    let mut expected = whole.push(text);
    expected.extend(whole.finish());
    let expected = joined(expected);

    let mut cut = TextCalls::default();
    let mut got = Vec::new();
    for piece in pieces(text, &cuts) {
        got.extend(cut.push(piece));
    }
    got.extend(cut.finish());
    let got = joined(got);
    assert_eq!(got, expected, "the result depends on where the stream was cut");

    let mut text_len = 0;
    for e in &expected {
        match e {
            TextCallEvent::Text(t) => text_len += t.len(),
            TextCallEvent::Call { name, arguments } => {
                assert!(!name.is_empty());
                let args: serde_json::Value = serde_json::from_str(arguments).expect("arguments are JSON");
                assert!(args.is_object(), "arguments {arguments}");
            }
        }
    }
    assert!(text_len <= text.len());
});
