//! Turns a conversation subscription into an SSE response body.
//!
//! Frames already sent are replayed, live ones follow, and the stream always ends with
//! `data: [DONE]`. If the actor dies mid-turn (its channel closes without `End`), or the
//! server shuts down, the client gets a final `error` part with its request id first.

use axum::body::Body;
use axum::response::Response;
use futures::StreamExt;
use std::convert::Infallible;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use crate::actors::conversation::{Frame, Subscription};
use crate::error::{messages, stream_error_text};
use crate::ui_stream::{DONE_FRAME, PROTOCOL_HEADER, StreamPart};

/// Held for the life of the response (e.g. a concurrency permit).
pub type Guard = Box<dyn Send + Sync>;

pub fn response(sub: Subscription, request_id: String, shutdown: CancellationToken, guard: Option<Guard>) -> Response {
    let Subscription { replay, mut live } = sub;
    let body = async_stream::stream! {
        let _guard = guard;
        let _open = crate::telemetry::metrics::sse_stream_open();
        for frame in replay {
            yield Ok::<_, Infallible>(frame.to_string());
        }
        loop {
            let next = tokio::select! {
                f = live.recv() => f,
                _ = shutdown.cancelled() => {
                    // Park the stream: the turn keeps its committed parts; the client may resume later.
                    yield Ok(StreamPart::Error { error_text: stream_error_text(messages::UNAVAILABLE, &request_id) }.frame());
                    break;
                }
            };
            match next {
                Some(Frame::Part(frame)) => yield Ok(frame_text(&frame)),
                Some(Frame::End) => break,
                None => {
                    yield Ok(StreamPart::Error { error_text: stream_error_text(messages::INTERNAL, &request_id) }.frame());
                    break;
                }
            }
        }
        yield Ok(DONE_FRAME.to_string());
    };
    sse_response(Body::from_stream(body.map(|r: Result<String, Infallible>| r)), None)
}

fn frame_text(frame: &Arc<str>) -> String {
    frame.to_string()
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
