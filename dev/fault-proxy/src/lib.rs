//! A fault-injecting HTTP proxy for tests (issue 32): it sits between mcp-nextcloud and the
//! Nextcloud stand-in and, per rule a test sets over `/__fault/rules`, answers with a 5xx,
//! resets the connection mid-body, stalls, truncates or replaces the body. It logs every
//! request so a test can count what reached Nextcloud (nothing retried that could double an
//! effect). No registry package does this at the HTTP level (Toxiproxy is not in Debian and
//! works on TCP bytes only, so it cannot answer a 207 with a body that is not XML).
//!
//! It is a test tool only: it must never be deployed, and it never alters a request.

mod control;
pub mod proxy;
pub mod rules;

use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use proxy::Proxy;
pub use rules::{Action, Rule};

/// The crate's one error type.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("setup: {0}")]
    Setup(String),
    #[error("upstream: {0}")]
    Upstream(String),
    /// A fault done on purpose by failing the connection.
    #[error("injected: {0}")]
    Injected(&'static str),
}

/// Serves `listener` until `shutdown`, forwarding to `upstream`.
pub async fn serve(listener: TcpListener, upstream: &str, shutdown: CancellationToken) -> Result<(), Error> {
    let proxy = Arc::new(Proxy::new(upstream)?);
    let tracker = TaskTracker::new();
    loop {
        let (stream, _) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!("accept: {e}");
                    continue;
                }
            },
        };
        let proxy = proxy.clone();
        let stop = shutdown.clone();
        tracker.spawn(async move {
            let service = hyper::service::service_fn(move |request| proxy.clone().handle(request));
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                () = stop.cancelled() => {}
                result = connection => if let Err(e) = result {
                    tracing::debug!("connection ended: {e}");
                },
            }
        });
    }
    tracker.close();
    tracker.wait().await;
    Ok(())
}
