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

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::time::Duration;
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
fn open_connection(builder: &http1::Builder, stream: TcpStream, app: &Router) -> http1::Connection<TokioIo<TcpStream>, BoxedRouter> {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::warn!(error = %e, "could not set TCP_NODELAY");
    }
    // No upgrades: no route switches protocols.
    builder.serve_connection(TokioIo::new(stream), BoxedRouter(app.clone()))
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

    type UnboxedFuture = <hyper_util::service::TowerToHyperService<Router> as hyper::service::Service<Request>>::Future;

    /// The size of the request future of the service `connection` serves: hyper keeps a slot
    /// of that size per connection for the connection's life (its `in_flight`).
    fn in_flight_size<S: hyper::service::HttpService<hyper::body::Incoming>>(_: &http1::Connection<TokioIo<TcpStream>, S>) -> usize {
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
