//! Routing, serving and a server binary's whole `main`.
//!
//! - [`router`]: `/mcp` behind the auth gate, the RFC 9728 document, `/healthz`. A server
//!   merges its own extra routes (mcp-nextcloud's webhook) into it.
//! - [`serve`]: serves until `shutdown` is cancelled, then drains in-flight requests. Adds
//!   the per-request server span (continuing the caller's `traceparent`) when exporting.
//! - [`main`]: configuration, telemetry, runtime, bind, "listening on" line, SIGTERM/Ctrl-C,
//!   telemetry flush, exit code. Spawns nothing: the signal wait runs beside the server in
//!   one `select!`.
//!
//! Shutdown order: the token stops rmcp's streams and axum stops accepting, then in-flight
//! requests drain, then (in [`main`], outside the runtime) spans and metrics are flushed.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use rmcp::ServerHandler;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::auth::{self, AuthState};
use crate::config::BaseConfig;
use crate::error::Error;
use crate::identity::Identify;
use crate::mcp::Service;

/// `/mcp` (behind the gate), `/.well-known/oauth-protected-resource[/…]` and `/healthz`.
pub fn router<I: Identify, H: ServerHandler + Send + 'static>(auth: Arc<AuthState<I>>, mcp: Service<H>) -> Router {
    let protected = auth::protect(Router::new().nest_service("/mcp", mcp), auth.clone());
    Router::new()
        .route("/healthz", get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }))
        .merge(auth::metadata_routes(auth))
        .merge(protected)
}

/// Serves `router` on `listener` until `shutdown` is cancelled, then drains in-flight requests.
pub async fn serve(listener: TcpListener, router: Router, shutdown: CancellationToken) -> Result<(), Error> {
    // A server span per request, continuing the caller's `traceparent` (only when exporting).
    let router = if telemetry_otlp::exporting() {
        router.layer(axum::middleware::from_fn(telemetry_otlp::trace_http))
    } else {
        router
    };
    axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled_owned().await })
        .await
        .map_err(|e| Error::Serve(format!("the server stopped: {e}")))
}

/// Names a server binary uses for itself.
pub struct Binary {
    /// The binary and service name (`mcp-nextcloud`), the prefix of every message.
    pub name: &'static str,
    /// The crate's tracing target (`mcp_nextcloud`): its spans are exported (and this
    /// crate's, whose tool span every server uses).
    pub log_target: &'static str,
}

/// The whole `main` of a server binary: `config` (already loaded), then telemetry, a
/// runtime, the listener on `MCP_BIND`, the line `listening on http://<addr>` that the test
/// harness and operators wait for, and `run` until SIGTERM or Ctrl-C. Exit code 2 for bad
/// configuration, 1 for any other failure.
pub fn main<C, E, F, Fut, R>(binary: Binary, config: Result<C, E>, run: F) -> ExitCode
where
    C: AsRef<BaseConfig>,
    E: Display,
    F: FnOnce(TcpListener, C, CancellationToken) -> Fut,
    Fut: Future<Output = Result<(), R>>,
    R: Display,
{
    let name = binary.name;
    let config = match config {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{name}: invalid configuration: {e}");
            return ExitCode::from(2);
        }
    };
    let base = config.as_ref();
    let telemetry = match telemetry_otlp::init(telemetry_otlp::Settings {
        service_name: name,
        endpoint: base.otlp_endpoint.as_ref().map(url::Url::as_str),
        log_filter: &base.log_filter,
        // The server's own spans and the shared ones (`mcp.tool`, made in this crate).
        export_targets: &[binary.log_target, env!("CARGO_CRATE_NAME")],
    }) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{name}: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run_until_signal(config, run));
    // Last, outside the runtime (it blocks): flush spans and metrics.
    telemetry.shutdown(std::time::Duration::from_secs(5));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run_until_signal<C, F, Fut, R>(config: C, run: F) -> Result<(), String>
where
    C: AsRef<BaseConfig>,
    F: FnOnce(TcpListener, C, CancellationToken) -> Fut,
    Fut: Future<Output = Result<(), R>>,
    R: Display,
{
    let bind = config.as_ref().bind;
    let listener = TcpListener::bind(bind).await.map_err(|e| format!("cannot listen on {bind}: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let shutdown = CancellationToken::new();
    // Registered before the line below, so a SIGTERM sent as soon as we are up is ours to handle.
    let signal = Signals::install();
    // The test harness and operators wait for this exact line.
    println!("listening on http://{addr}");
    let serving = run(listener, config, shutdown.clone());
    tokio::pin!(serving);
    tokio::select! {
        result = &mut serving => return result.map_err(|e| e.to_string()),
        () = signal.received() => {
            tracing::info!("shutdown requested");
            shutdown.cancel();
        }
    }
    // Drain: the server stops accepting and finishes what is in flight.
    serving.await.map_err(|e| e.to_string())
}

/// SIGTERM (on Unix) and Ctrl-C, listened for from the moment of [`Signals::install`].
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn install() -> Self {
        Signals {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        }
    }

    /// Resolves on SIGTERM or Ctrl-C.
    #[cfg_attr(not(unix), expect(unused_mut, reason = "only Unix has a SIGTERM stream"))]
    async fn received(mut self) {
        #[cfg(unix)]
        if let Some(term) = self.term.as_mut() {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
