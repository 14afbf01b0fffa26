//! The `mcp-nextcloud` binary: read the configuration, bind, serve until SIGTERM or Ctrl-C.
//! Everything else lives in the library so tests run the real server.

use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let config = match mcp_nextcloud::Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mcp-nextcloud: invalid configuration: {e}");
            return ExitCode::from(2);
        }
    };
    init_tracing(&config.log_filter);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-nextcloud: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-nextcloud: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: mcp_nextcloud::Config) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.bind).await?;
    let addr = listener.local_addr()?;
    let shutdown = CancellationToken::new();
    tokio::spawn(wait_for_signal(shutdown.clone()));
    // The test harness and operators wait for this exact line.
    println!("listening on http://{addr}");
    mcp_nextcloud::serve(listener, config, shutdown).await?;
    Ok(())
}

/// Cancels `shutdown` on SIGTERM or Ctrl-C.
async fn wait_for_signal(shutdown: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("shutdown requested");
    shutdown.cancel();
}

fn init_tracing(filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter).unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
