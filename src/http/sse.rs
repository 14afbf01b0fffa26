//! Turns a conversation subscription into an SSE response body.
//!
//! The response reads the turn's stream log from its first frame: frames already sent are
//! replayed, live ones follow, and the stream always ends with `data: [DONE]`. If the actor
//! dies mid-turn (the log ends `Broken`; `Moved` when another instance took the conversation),
//! or the server shuts down, the client gets a final `error` part with its request id first.

use axum::body::{Body, Bytes};
use axum::response::Response;
use std::convert::Infallible;
use tokio_util::sync::CancellationToken;

use crate::actors::conversation::Subscription;
use crate::error::{messages, stream_error_text};
use crate::stream_log::{End, Next};
use crate::ui_stream::{DONE_FRAME, PROTOCOL_HEADER, StreamPart};

/// The stream holds nothing of the turn's: its admission is the turn task's (`http::chat`),
/// so a client going away frees no slot while the turn runs.
pub fn response(sub: Subscription, request_id: String, shutdown: CancellationToken) -> Response {
    sse_response(Body::from_stream(body(sub, request_id, shutdown)), None)
}

/// The response body's frames: boxed once by `Body::from_stream`, and kept for as long as the
/// stream is open.
fn body(
    sub: Subscription,
    request_id: String,
    shutdown: CancellationToken,
) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let mut reader = sub.log.reader();
    async_stream::stream! {
        let _open = crate::telemetry::metrics::sse_stream_open();
        loop {
            let next = tokio::select! {
                // Shutdown first: it cancels the turns too (their tokens are its children),
                // and a cancelled turn says "restarting" in its own log. Whichever this
                // stream would see first, the client must get that part exactly once.
                biased;
                _ = shutdown.cancelled() => {
                    // Park the stream: the turn keeps its committed parts; the client may resume later.
                    yield Ok::<_, Infallible>(error_frame(messages::UNAVAILABLE, &request_id));
                    break;
                }
                n = reader.next() => n,
            };
            match next {
                // Frames visible together go out as one chunk (one write, not one per part).
                Next::Frames(frames) => yield Ok(frames),
                Next::End(End::Finished) => break,
                Next::End(End::Broken) => {
                    yield Ok(error_frame(messages::INTERNAL, &request_id));
                    break;
                }
                // The write fence refused this instance mid-turn, or its lease was lost: the
                // person learns that this server no longer holds the conversation.
                Next::End(End::Moved) => {
                    yield Ok(error_frame(messages::STOPPED_ELSEWHERE, &request_id));
                    break;
                }
            }
        }
        yield Ok(Bytes::from_static(DONE_FRAME.as_bytes()));
    }
}

fn error_frame(message: &str, request_id: &str) -> Bytes {
    Bytes::from(
        StreamPart::Error {
            error_text: stream_error_text(message, request_id),
        }
        .frame(),
    )
}

/// A response with the headers every SSE answer carries.
pub fn sse_response(body: Body, status: Option<http::StatusCode>) -> Response {
    let mut r = Response::new(body);
    if let Some(s) = status {
        *r.status_mut() = s;
    }
    let h = r.headers_mut();
    h.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
    h.insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-cache"));
    h.insert(PROTOCOL_HEADER.0, http::HeaderValue::from_static(PROTOCOL_HEADER.1));
    // Proxies (nginx) must not buffer: the first token reaches the browser when we send it.
    h.insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SSE body's state, in bytes (issue #16, sixth pass: printed with `--nocapture`).
    /// `Body::from_stream` boxes it for as long as the stream is open: 336 bytes in a test
    /// build at the sixth pass, in jemalloc's 384-byte class (the census in
    /// docs/performance.md); the bound fails before it would move to the next class.
    #[test]
    fn size_of_the_sse_body() {
        let sub = Subscription {
            log: crate::stream_log::StreamLog::new(),
        };
        let body = body(sub, "r1".into(), CancellationToken::new());
        let size = std::mem::size_of_val(&body);
        eprintln!("size sse body stream: {size}");
        assert!(size <= 384, "the SSE body stream is {size} bytes");
    }

    /// What the client reads when its turn's stream ends early: why, with its request id,
    /// then the end of the stream.
    #[tokio::test]
    async fn an_early_end_says_why() {
        use futures::StreamExt;
        for (end, says) in [(End::Broken, messages::INTERNAL), (End::Moved, messages::STOPPED_ELSEWHERE)] {
            let log = crate::stream_log::StreamLog::new();
            log.finish(end);
            let frames: Vec<Bytes> = body(Subscription { log }, "r7".into(), CancellationToken::new())
                .map(|f| f.unwrap())
                .collect()
                .await;
            assert_eq!(frames.len(), 2, "{frames:?}");
            assert_eq!(frames[0], error_frame(says, "r7"));
            assert_eq!(frames[1], Bytes::from_static(DONE_FRAME.as_bytes()));
        }
    }
}
