//! `scripted-model --bind ADDR [--scripts FILE.json]`: parses flags, binds, prints
//! `listening on http://ADDR` once bound, serves until SIGTERM or Ctrl-C.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;

/// A scripted OpenAI-compatible chat-completions server for tests and the demo.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Address to listen on, e.g. 127.0.0.1:8790 (port 0 picks a free port).
    #[arg(long)]
    bind: SocketAddr,
    /// A JSON file `{"rules": [...]}` loaded at start.
    #[arg(long)]
    scripts: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    // Holding thousands of open streams needs thousands of descriptors.
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        tracing::warn!("could not raise the open-file limit: {e}");
    }
    let rules = match &args.scripts {
        Some(path) => scripted_model::load_rules_file(path)?,
        None => Vec::new(),
    };
    let listener = bind(args.bind).with_context(|| format!("bind {}", args.bind))?;
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
    scripted_model::serve(listener, rules, shutdown).await?;
    Ok(())
}

/// Binds with a deep accept backlog: thousands of streams opened at once (the open-streams
/// benchmark) must queue, not be refused. The kernel caps it at net.core.somaxconn.
fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(8192)
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
