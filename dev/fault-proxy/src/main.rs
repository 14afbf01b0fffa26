//! `fault-proxy --bind ADDR --upstream URL`: binds, prints `listening on http://ADDR` once
//! bound, and proxies to URL with the faults set over its control routes until SIGTERM.

use std::io::Write;
use std::net::SocketAddr;

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;

/// A fault-injecting HTTP proxy for tests.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Address to listen on, e.g. 127.0.0.1:9400.
    #[arg(long)]
    bind: SocketAddr,
    /// Where requests go, e.g. http://127.0.0.1:8080 (the Nextcloud stand-in).
    #[arg(long)]
    upstream: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let listener = tokio::net::TcpListener::bind(args.bind)
        .await
        .with_context(|| format!("bind {}", args.bind))?;
    let addr = listener.local_addr()?;
    let mut out = std::io::stdout();
    writeln!(out, "listening on http://{addr}")?;
    out.flush()?;
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let server = fault_proxy::serve(listener, &args.upstream, shutdown);
    tokio::select! {
        result = server => result?,
        _ = tokio::signal::ctrl_c() => stop.cancel(),
        () = sigterm() => stop.cancel(),
    }
    Ok(())
}

async fn sigterm() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}
