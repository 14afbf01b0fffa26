//! The model stream parser: an OpenAI-compatible chat-completions SSE body (the provider's
//! bytes) through the same decoding as a real call (`model::events_of_body`: SSE framing,
//! UTF-8, chunk JSON, tool-call deltas, in-stream errors, the end marker), then through the
//! text tool-call recogniser (`TAMEBI_TOOL_CALL_TEXT=auto`).
//!
//! The body arrives in pieces cut at fuzzed byte boundaries, anywhere, also inside a UTF-8
//! character or a line ending. Input: a byte `n`, then `2n` bytes from which `arbitrary`
//! draws the cut points, then the body (so a seed is `\0` and a real SSE body). Properties: nothing panics;
//! the events do not depend on where the network cut the body; at most one error ends the
//! stream, and nothing follows it.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use tamebi::model::{ModelEvent, events_of_body, text_calls};

/// The cut points and the body of one input.
fn input(data: &[u8]) -> Option<(Vec<u16>, &[u8])> {
    let (n, rest) = data.split_first()?;
    let split = (usize::from(*n) * 2).min(rest.len());
    let (cut_bytes, body) = rest.split_at(split);
    let mut u = Unstructured::new(cut_bytes);
    let cuts = (0..*n).map(|_| u16::arbitrary(&mut u).unwrap_or(0)).collect();
    Some((cuts, body))
}

/// Events as comparable values (the error's kind and message).
fn run(pieces: Vec<bytes::Bytes>, recognise: bool) -> Vec<Result<ModelEvent, String>> {
    let body = futures::stream::iter(pieces.into_iter().map(Ok::<_, std::convert::Infallible>));
    let events = events_of_body(body);
    let all: Vec<_> = if recognise {
        futures::executor::block_on(text_calls::recognise(events).collect())
    } else {
        futures::executor::block_on(events.collect())
    };
    all.into_iter()
        .map(|e| match e {
            // A call recognised in text gets a fresh id of ours each time: not the parser's
            // output, so not compared (native ids are, in the run without the recogniser).
            Ok(ModelEvent::ToolCallStart { index, name, .. }) if recognise => Ok(ModelEvent::ToolCallStart {
                index,
                id: String::new(),
                name,
            }),
            other => other.map_err(|e| e.to_string()),
        })
        .collect()
}

fn pieces(body: &[u8], cuts: &[u16]) -> Vec<bytes::Bytes> {
    let mut at: Vec<usize> = cuts.iter().map(|c| usize::from(*c) % (body.len() + 1)).collect();
    at.push(0);
    at.push(body.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| bytes::Bytes::copy_from_slice(&body[w[0]..w[1]])).collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((cuts, body)) = input(data) else { return };
    let whole = vec![bytes::Bytes::copy_from_slice(body)];
    for recognise in [false, true] {
        let expected = run(whole.clone(), recognise);
        let got = run(pieces(body, &cuts), recognise);
        assert_eq!(
            got, expected,
            "the events depend on where the body was cut (recognise: {recognise})"
        );
        if let Some(first_error) = expected.iter().position(Result::is_err) {
            assert_eq!(first_error, expected.len() - 1, "events after an error");
        }
    }
});
