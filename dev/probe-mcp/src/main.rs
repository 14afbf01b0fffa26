//! `probe-mcp --bind ADDR`: binds, prints `listening on http://ADDR`, serves until SIGTERM
//! or Ctrl-C. Everything else lives in the library.

use std::io::Write;
use std::net::SocketAddr;

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;

/// A test MCP server whose tools are installed at runtime and whose calls are recorded.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Address to listen on, e.g. 127.0.0.1:8791 (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    bind: SocketAddr,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,rmcp=warn".into()))
        .init();
    let listener = tokio::net::TcpListener::bind(args.bind)
        .await
        .with_context(|| format!("bind {}", args.bind))?;
    let addr = listener.local_addr()?;
    let mut out = std::io::stdout();
    writeln!(out, "listening on http://{addr}")?;
    out.flush()?;
    let shutdown = CancellationToken::new();
    #[expect(
        clippy::disallowed_methods,
        reason = "the signal watcher may outlive shutdown (no signal ever arrives); it only cancels the token"
    )]
    tokio::spawn(watch_signals(shutdown.clone()));
    probe_mcp::serve(listener, shutdown).await?;
    Ok(())
}

/// Cancels `shutdown` on SIGTERM or Ctrl-C.
async fn watch_signals(shutdown: CancellationToken) {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!("no SIGTERM handler: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = term => {}
        r = tokio::signal::ctrl_c() => if let Err(e) = r { tracing::warn!("no Ctrl-C handler: {e}") },
    }
    shutdown.cancel();
}
