//! The accept loop: HTTP/1.1 connections with bounded buffers, TCP_NODELAY, and graceful
//! shutdown.
//!
//! Written out (rather than `axum::serve`) to set things axum does not expose, which matter
//! when thousands of SSE streams stay open: hyper's read buffer is capped at its minimum (our
//! requests' headers are small; bodies stream separately), the router is handed to each
//! connection as a cheap clone instead of going through axum's per-connection make-service
//! path, and each connection is hyper's HTTP/1.1 connection itself, not hyper-util's
//! any-version one (whose state has room for an HTTP/2 connection and a rewind buffer that an
//! HTTP/1.1-only server never uses, in every connection's task). TCP_NODELAY: an SSE stream
//! is many small frames, and with Nagle's algorithm each one after the first would wait for
//! the client's delayed ACK (up to 40 ms).
//!
//! hyper refuses some requests itself, before any service sees them: a header section over
//! the read buffer (431), a malformed request line or header (400), a URI too long (414). It
//! answers those with a bare status line and no body, and offers no hook to change that. The
//! answer we can still shape is the one it writes for a connection's first request (nothing
//! else can have been written by then): [`ShapedRefusal`] recognises it on the socket and
//! writes the documented JSON error in its place, with a fresh request id that is also
//! logged. docs/api.md states which refusals stay bare and why.

use axum::Router;
use http::StatusCode;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// hyper's smallest allowed read buffer; request headers must fit in it.
const MAX_READ_BUF: usize = 8192;

/// Serves `app` until `shutdown` is cancelled, then stops accepting and waits (at most
/// `drain`) for open connections to finish their responses.
pub async fn serve(listener: TcpListener, app: Router, shutdown: CancellationToken, drain: Duration) {
    let graceful = GracefulShutdown::new();
    // Every connection's task, so the drain below can wait for the tasks themselves.
    let connections = TaskTracker::new();
    let builder = connection_builder();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or a transient error: back off briefly, keep serving.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let connection = open_connection(&builder, stream, &app);
        connections.spawn(connection_task(graceful.watch(connection)));
    }
    drop(listener);
    connections.close();
    let drained = async {
        graceful.shutdown().await;
        connections.wait().await;
    };
    if tokio::time::timeout(drain, drained).await.is_err() {
        tracing::warn!("some connections did not finish in time");
    }
}

/// HTTP/1.1 only: the PHP app and the island speak it, and no other protocol is offered.
fn connection_builder() -> http1::Builder {
    let mut builder = http1::Builder::new();
    // A client that never finishes its headers does not hold a connection forever.
    builder
        .max_buf_size(MAX_READ_BUF)
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30));
    builder
}

/// One accepted connection, served by the router. Also what the size test measures, so it
/// sees the service hyper really keeps for each open connection.
fn open_connection(builder: &http1::Builder, stream: TcpStream, app: &Router) -> http1::Connection<TokioIo<ShapedRefusal>, BoxedRouter> {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::warn!(error = %e, "could not set TCP_NODELAY");
    }
    // No upgrades: no route switches protocols.
    builder.serve_connection(TokioIo::new(ShapedRefusal::new(stream)), BoxedRouter(app.clone()))
}

/// An accepted socket that gives hyper's own refusal of the connection's first request the
/// documented error shape (docs/api.md, "Errors").
///
/// How it knows: the first bytes written on a connection are always the head of the answer
/// to its first request. That head is hyper's automatic refusal exactly when it is a 400, 414
/// or 431 (the only statuses hyper writes by itself) without a `Content-Type`: every error the
/// router answers carries `application/json` (`error_shape_layer`). Then hyper's bytes are
/// dropped (reported written, so hyper goes on to close the connection as it meant to) and ours
/// are written instead. Anything else passes through untouched; after the first write this
/// costs one comparison per write. A later request on a reused connection cannot be told apart
/// this way (the byte stream has no marker of where one response ends), so its refusal stays
/// hyper's own.
pub struct ShapedRefusal {
    io: TcpStream,
    state: Refusal,
}

enum Refusal {
    /// Nothing written yet: the next write is the first response's head.
    Unwritten,
    /// The first response was ours: everything passes through.
    Passed,
    /// Our answer in place of hyper's refusal, and how much of it is written.
    Replacing(Box<(Vec<u8>, usize)>),
}

impl ShapedRefusal {
    fn new(io: TcpStream) -> ShapedRefusal {
        ShapedRefusal {
            io,
            state: Refusal::Unwritten,
        }
    }

    /// Decides on the first write (`first` is its first non-empty buffer); true when hyper's
    /// bytes are to be dropped.
    fn replaces(&mut self, first: &[u8]) -> bool {
        match self.state {
            Refusal::Passed => false,
            Refusal::Replacing(_) => true,
            Refusal::Unwritten => match automatic_refusal(first) {
                Some(status) => {
                    self.state = Refusal::Replacing(Box::new((shaped_refusal(status), 0)));
                    true
                }
                None => {
                    self.state = Refusal::Passed;
                    false
                }
            },
        }
    }

    /// Writes what is left of our answer; ready once all of it is written.
    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Refusal::Replacing(pending) = &mut self.state else {
            return Poll::Ready(Ok(()));
        };
        let (bytes, written) = &mut **pending;
        if *written == bytes.len() {
            return Poll::Ready(Ok(()));
        }
        while *written < bytes.len() {
            match Pin::new(&mut self.io).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.discard_unread();
        Poll::Ready(Ok(()))
    }

    /// hyper closes the connection next. Closing a socket with received bytes still unread
    /// makes the kernel reset it, and a reset can discard our answer before the client reads
    /// it: so the rest of the refused head that has already arrived (the client sent it in the
    /// same burst) is read and dropped first, never waiting and at most 64 KiB.
    fn discard_unread(&self) {
        let mut scratch = [0u8; 4096];
        for _ in 0..16 {
            match self.io.try_read(&mut scratch) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
    }
}

/// The status of hyper's automatic refusal, if `head` (the start of a connection's first
/// write) is one.
fn automatic_refusal(head: &[u8]) -> Option<StatusCode> {
    let rest = head.strip_prefix(b"HTTP/1.1 ")?;
    let status = StatusCode::from_bytes(rest.get(..3)?).ok()?;
    if !matches!(status.as_u16(), 400 | 414 | 431) {
        return None;
    }
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let typed = head[..end]
        .split(|b| *b == b'\n')
        .any(|line| line.len() >= 13 && line[..13].eq_ignore_ascii_case(b"content-type:"));
    (!typed).then_some(status)
}

/// Our answer for a refusal below the router: the fixed JSON shape, a fresh request id in the
/// body and in `X-Request-Id` (the caller's could not be read: its request was not parsed),
/// and the connection closed, as hyper would have.
fn shaped_refusal(status: StatusCode) -> Vec<u8> {
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    // Bad input, not our failure: info, like every other refusal (error.rs).
    tracing::info!(request_id = %request_id, status = i64::from(status.as_u16()), "request refused by the HTTP parser, answered in the fixed shape");
    let body = crate::error::error_body(status, &request_id);
    let mut out = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nx-request-id: {request_id}\r\nconnection: close\r\n\r\n",
        status.as_str(),
        status.canonical_reason().unwrap_or(""),
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

impl AsyncRead for ShapedRefusal {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for ShapedRefusal {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.replaces(buf) {
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
        if first.is_empty() {
            return Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        }
        if self.replaces(first) {
            return Poll::Ready(Ok(bufs.iter().map(|b| b.len()).sum()));
        }
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_replacement(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_replacement(cx))?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The router as hyper's service, each request's future boxed (one allocation per request):
/// hyper keeps a slot for a request's future per connection (its `in_flight`), allocated at
/// the future's size for as long as the connection is open, so every open stream would keep
/// 320 bytes for a future that ended when its response started (issue #16). Otherwise what
/// hyper-util's `TowerToHyperService` does.
#[derive(Clone)]
struct BoxedRouter(Router);

type Request = http::Request<hyper::body::Incoming>;

impl hyper::service::Service<Request> for BoxedRouter {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn call(&self, request: Request) -> Self::Future {
        Box::pin(tower::ServiceExt::oneshot(self.0.clone(), request))
    }
}

/// An open connection's task. Not an async block: that would keep the connection twice (its
/// captured copy and the one being awaited), about 0.8 KB more per open stream (issue #16).
fn connection_task<C: std::future::Future<Output = Result<(), hyper::Error>>>(connection: C) -> impl std::future::Future<Output = ()> {
    futures::FutureExt::map(connection, |ended| {
        if let Err(e) = ended {
            tracing::debug!(error = %e, "connection ended with an error");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{size_of, size_of_val};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The real accept loop on a loopback port, serving `app`; cancel the token to stop it.
    async fn running(app: Router) -> (std::net::SocketAddr, CancellationToken, TaskTracker) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let token = CancellationToken::new();
        let server = TaskTracker::new();
        server.spawn(serve(listener, app, token.clone(), Duration::from_secs(5)));
        server.close();
        (addr, token, server)
    }

    /// (status line, lower-cased headers, body) of one response in `raw`.
    fn response(raw: &[u8]) -> (String, Vec<(String, String)>, Vec<u8>) {
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = std::str::from_utf8(&raw[..end]).unwrap();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().to_string();
        let headers = lines
            .map(|l| {
                let (k, v) = l.split_once(':').unwrap();
                (k.trim().to_ascii_lowercase(), v.trim().to_string())
            })
            .collect();
        (status, headers, raw[end + 4..].to_vec())
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Sends `request` as a connection's first and reads until the server closes it.
    async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> Vec<u8> {
        let mut socket = TcpStream::connect(addr).await.unwrap();
        socket.write_all(request).await.unwrap();
        let mut raw = Vec::new();
        socket.read_to_end(&mut raw).await.unwrap();
        raw
    }

    /// A refusal in the shape of docs/api.md: its status, the code, the fixed message, and one
    /// request id in the body and in X-Request-Id.
    fn assert_shaped(raw: &[u8], status_line: &str, code: &str) {
        let (status, headers, body) = response(raw);
        assert_eq!(status, status_line, "{}", String::from_utf8_lossy(raw));
        assert_eq!(header(&headers, "content-type"), Some("application/json"));
        assert_eq!(header(&headers, "connection"), Some("close"));
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["error"]["code"], code, "{json}");
        let wanted = crate::error::ErrorCode::ALL.iter().find(|c| c.as_str() == code).unwrap();
        assert_eq!(json["error"]["message"], wanted.message());
        let id = json["error"]["requestId"].as_str().unwrap();
        assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        assert_eq!(header(&headers, "x-request-id"), Some(id));
        assert_eq!(header(&headers, "content-length"), Some(body.len().to_string().as_str()));
    }

    /// A head that is still going at 8 KiB. Exactly the buffer's size: the server then has read
    /// all of it when it answers, so closing sends a FIN (with bytes left unread, the kernel
    /// would reset the connection and the client could lose the answer, ours or hyper's).
    fn oversize() -> Vec<u8> {
        let mut head = b"GET / HTTP/1.1\r\nhost: x\r\nx-big: ".to_vec();
        head.resize(MAX_READ_BUF, b'a');
        head
    }

    fn app() -> Router {
        Router::new().route("/", axum::routing::get(|| async { "ok" })).route(
            "/refuse",
            axum::routing::get(|| async { crate::error::error_response(StatusCode::BAD_REQUEST, "req-own") }),
        )
    }

    /// Issue #27: hyper's own refusals (431 for a header section over the 8 KiB buffer or over
    /// 100 headers, 400 for a malformed head) come in the documented JSON shape.
    #[tokio::test]
    async fn refusals_below_the_router_have_the_fixed_shape() {
        let (addr, token, server) = running(app()).await;
        assert_shaped(
            &exchange(addr, &oversize()).await,
            "HTTP/1.1 431 Request Header Fields Too Large",
            "headers_too_large",
        );
        // A whole head over the limit, as a client sends it: the rest past the buffer is read
        // and dropped, so the client gets the answer rather than a reset.
        let whole = format!("GET / HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n", "a".repeat(3 * MAX_READ_BUF));
        assert_shaped(
            &exchange(addr, whole.as_bytes()).await,
            "HTTP/1.1 431 Request Header Fields Too Large",
            "headers_too_large",
        );
        let many: String = (0..150).map(|i| format!("x-h{i}: v\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\nhost: x\r\n{many}\r\n");
        assert!(many.len() < MAX_READ_BUF, "the count, not the size, is over");
        assert_shaped(
            &exchange(addr, many.as_bytes()).await,
            "HTTP/1.1 431 Request Header Fields Too Large",
            "headers_too_large",
        );
        assert_shaped(
            &exchange(addr, b"GET / HTTP/1.1\r\nno colon here\r\n\r\n").await,
            "HTTP/1.1 400 Bad Request",
            "bad_request",
        );
        assert_shaped(
            &exchange(addr, b"\x16\x03\x01 not http\r\n\r\n").await,
            "HTTP/1.1 400 Bad Request",
            "bad_request",
        );
        token.cancel();
        server.wait().await;
    }

    /// Everything else passes through byte for byte: a normal answer, and the router's own
    /// refusal (already shaped, with the caller's request id).
    #[tokio::test]
    async fn answers_from_the_router_pass_through() {
        let (addr, token, server) = running(app()).await;
        let raw = exchange(addr, b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await;
        let (status, _, body) = response(&raw);
        assert_eq!((status.as_str(), body.as_slice()), ("HTTP/1.1 200 OK", &b"ok"[..]));
        let raw = exchange(addr, b"GET /refuse HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").await;
        let (status, headers, body) = response(&raw);
        assert_eq!(status, "HTTP/1.1 400 Bad Request");
        assert_eq!(header(&headers, "x-request-id"), Some("req-own"));
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(json["error"]["requestId"], "req-own");
        token.cancel();
        server.wait().await;
    }

    /// The documented exception (docs/api.md): on a reused connection, a later request's
    /// refusal is hyper's bare one (nothing on the byte stream says where a response ended).
    #[tokio::test]
    async fn a_later_request_on_a_reused_connection_gets_hyper_s_bare_refusal() {
        let (addr, token, server) = running(app()).await;
        let mut socket = TcpStream::connect(addr).await.unwrap();
        socket.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n").await.unwrap();
        let mut first = Vec::new();
        while !first.ends_with(b"ok") {
            let mut chunk = [0u8; 512];
            let n = socket.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&first));
            first.extend_from_slice(&chunk[..n]);
        }
        socket.write_all(&oversize()).await.unwrap();
        let mut raw = Vec::new();
        socket.read_to_end(&mut raw).await.unwrap();
        let (status, headers, body) = response(&raw);
        assert_eq!(status, "HTTP/1.1 431 Request Header Fields Too Large");
        assert!(body.is_empty() && header(&headers, "content-type").is_none(), "{headers:?}");
        token.cancel();
        server.wait().await;
    }

    #[test]
    fn only_hyper_s_untyped_refusals_are_recognised() {
        let hyper_s = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(automatic_refusal(hyper_s), Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE));
        for ours in [
            &b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n\r\n{}"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-le",
            b"HTTP/1.0 400 Bad Request\r\n\r\n",
        ] {
            assert_eq!(automatic_refusal(ours), None, "{}", String::from_utf8_lossy(ours));
        }
    }

    type UnboxedFuture = <hyper_util::service::TowerToHyperService<Router> as hyper::service::Service<Request>>::Future;

    /// The size of the request future of the service `connection` serves: hyper keeps a slot
    /// of that size per connection for the connection's life (its `in_flight`).
    fn in_flight_size<S: hyper::service::HttpService<hyper::body::Incoming>>(_: &http1::Connection<TokioIo<ShapedRefusal>, S>) -> usize {
        size_of::<S::Future>()
    }

    /// What an open connection's task keeps, in bytes (issue #16, sixth pass: printed with
    /// `--nocapture`; docs/performance.md has the table). Measured on what `serve` builds
    /// (`open_connection`), so the bounds fail if its service or task grows again.
    #[tokio::test]
    async fn sizes_of_a_held_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (stream, _) = listener.accept().await.unwrap();
        let connection = open_connection(&connection_builder(), stream, &Router::new());
        eprintln!("size hyper http1 connection: {}", size_of_val(&connection));
        let in_flight = in_flight_size(&connection);
        eprintln!(
            "size service future (hyper's in-flight slot): {in_flight} (unboxed: {})",
            size_of::<UnboxedFuture>()
        );
        // hyper keeps this slot for the connection's life: a boxed future (16 bytes), not the
        // router's (320 bytes with hyper-util's `TowerToHyperService`, issue #16).
        assert!(in_flight <= 16, "{in_flight} bytes");
        let graceful = GracefulShutdown::new();
        let watched = graceful.watch(connection);
        eprintln!("size watched connection: {}", size_of_val(&watched));
        let watched_size = size_of_val(&watched);
        let task = connection_task(watched);
        eprintln!("size connection task future: {}", size_of_val(&task));
        // The task keeps the connection once (issue #16: an async block kept it twice).
        assert!(size_of_val(&task) <= watched_size + 16, "{} bytes", size_of_val(&task));
    }
}
