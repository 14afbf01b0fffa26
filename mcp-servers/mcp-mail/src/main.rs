//! The `mcp-mail` binary: read the configuration, bind, serve until SIGTERM or Ctrl-C.
//! Everything else lives in the library so tests run the real server.

use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let config = match mcp_mail::Config::from_env() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("mcp-mail: invalid configuration: {e}");
            return ExitCode::from(2);
        }
    };
    let telemetry = match telemetry_otlp::init(telemetry_otlp::Settings {
        service_name: "mcp-mail",
        endpoint: config.otlp_endpoint.as_ref().map(url::Url::as_str),
        log_filter: &config.log_filter,
        export_targets: &["mcp_mail"],
    }) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("mcp-mail: {e}");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mcp-mail: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(config));
    // Last, outside the runtime (it blocks): flush spans and metrics.
    telemetry.shutdown(std::time::Duration::from_secs(5));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-mail: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: mcp_mail::Config) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(config.bind).await?;
    let addr = listener.local_addr()?;
    let shutdown = CancellationToken::new();
    tokio::spawn(wait_for_signal(shutdown.clone()));
    // The test harness and operators wait for this exact line.
    println!("listening on http://{addr}");
    mcp_mail::serve(listener, config, shutdown).await?;
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
