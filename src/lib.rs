//! Tamebi orchestrator: the agent loop that works inside a company's Nextcloud strictly as
//! the person talking to it.
//!
//! There is no permission logic here, and there must not be. Every request to Nextcloud
//! carries the calling user's own credential, and Nextcloud's 403/404 is the answer. This
//! process holds a model key and two secrets of its own; it never holds a Nextcloud
//! credential beyond the request (or the turn) that carries it.
//!
//! Modules:
//! - [`types`]: small plain types several layers share (a secret that never prints, the
//!   model role, the server-name rule); it imports nothing of this crate.
//! - [`origin`]: where a conversation was started (the Smart Picker in Talk, Text, ...).
//! - [`config`]: the one typed configuration, read from the environment at start.
//! - [`auth`]: G1 identity (`auth::identity`) and log redaction.
//! - [`http`]: the axum routes (chat over SSE, conversations, apps, health).
//! - [`actors`]: the ractor supervision tree (conversations, tool servers).
//! - [`services`]: what every actor and turn may use (stores, model, tool servers).
//! - [`turn`]: one agent turn (model → tools → model), G3 approvals; it reports typed events
//!   into a channel and its failures as `error::TurnError`.
//! - [`context`]: what the model sees; [`untrusted`]: the G2 envelope.
//! - [`compaction`]: keeping that inside the context budget (tool-result clearing, summaries).
//! - [`memory`]: the orchestrator's own memory tools (memory.db, writes through G3).
//! - [`assistants`]: the operator's assistants (instructions, model role, tool allow-list).
//! - [`approval`]: G3 policy from MCP annotations; [`mcp`]: MCP client and tool registry.
//! - [`model`]: the OpenAI-compatible streaming client.
//! - [`store`]: chat.db; [`ui_stream`]: the AI SDK UI message stream.
//! - [`telemetry`]: tracing and OTLP export.
//! - `fault` (test builds only): the fault-injection markers.
//!
//! The modules import one way, down: leaves (`types`, `config`) first, `http` last, this file
//! above all (it wires the parts together). The table is written down once, in
//! `tests/module_layers.rs`, and drawn in docs/architecture.md ("Layers").

pub mod actors;
pub mod approval;
pub mod apps;
pub mod assistants;
pub mod auth;
pub mod compaction;
pub mod config;
pub mod context;
pub mod error;
#[cfg(feature = "fault-injection")]
pub mod fault;
pub mod http;
pub mod mcp;
pub mod memory;
pub mod model;
pub mod origin;
pub mod registry;
pub mod services;
pub mod store;
pub mod stream_log;
pub mod talk;
pub mod telemetry;
pub mod turn;
pub mod types;
pub mod ui_stream;
pub mod untrusted;

use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use actors::root::RootSupervisor;
use actors::tool_server::ToolServers;
use config::{Config, ConfigError};
use error::Error;
use services::Services;

/// Exit code for an invalid configuration.
pub const EXIT_CONFIG: i32 = 2;

/// The parts that build themselves from their piece of the configuration and may refuse it.
/// Built at start, before anything listens, so a bad deployment stops there with the
/// variable named (`config` itself only parses the environment into plain data).
pub struct Parts {
    /// Where the stores live (`TAMEBI_DATABASE_URL`, `TAMEBI_DATABASE_CA_FILE`).
    pub database: store::Backend,
    /// The operator's assistants (`TAMEBI_ASSISTANTS`, or the built-in `default` one).
    pub assistants: Arc<assistants::Assistants>,
}

impl Parts {
    pub fn build(config: &Config) -> Result<Parts, ConfigError> {
        Ok(Parts {
            database: store::Backend::from_config(&config.database, &config.data_dir)?,
            assistants: Arc::new(assistants::Assistants::from_config(config)?),
        })
    }
}

/// The binary's whole life: config, telemetry, runtime, serve until SIGTERM/SIGINT.
pub fn run_from_env() -> anyhow::Result<()> {
    let (config, parts) = match Config::from_env().and_then(|c| Parts::build(&c).map(|p| (c, p))) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tamebi: invalid configuration: {e}");
            std::process::exit(EXIT_CONFIG);
        }
    };
    let telemetry = telemetry::init(config.otlp_endpoint.as_deref(), &config.log_filter)?;
    let flush_timeout = config.shutdown_timeout;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(async move {
        let listener = TcpListener::bind(config.bind).await?;
        let shutdown = CancellationToken::new();
        // Waits for a signal that may never come: it must not hold up the end of the runtime,
        // and nothing waits for it; it only ever cancels the shutdown token.
        #[expect(
            clippy::disallowed_methods,
            reason = "the signal watcher may outlive shutdown (no signal ever arrives)"
        )]
        tokio::spawn(watch_signals(shutdown.clone()));
        serve_parts(config, parts, listener, shutdown).await.map_err(anyhow::Error::from)
    });
    // Last step of shutdown, outside the runtime (it blocks): flush spans and metrics.
    telemetry.shutdown(flush_timeout);
    result
}

async fn watch_signals(shutdown: CancellationToken) {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    tracing::info!("shutdown requested");
    shutdown.cancel();
}

/// Serves on `listener` until `shutdown` is cancelled, then shuts down in order:
/// stop accepting, end open streams with a final part, let turns stop, stop the actors,
/// flush the databases.
pub async fn serve(config: Config, listener: TcpListener, shutdown: CancellationToken) -> Result<(), Error> {
    let parts = Parts::build(&config).map_err(|e| Error::Internal(format!("invalid configuration: {e}")))?;
    serve_parts(config, parts, listener, shutdown).await
}

/// [`serve`] with the parts already built from `config` (as the binary does, to stop with
/// [`EXIT_CONFIG`] before anything starts).
pub async fn serve_parts(config: Config, parts: Parts, listener: TcpListener, shutdown: CancellationToken) -> Result<(), Error> {
    std::fs::create_dir_all(&config.data_dir).map_err(|e| Error::Internal(format!("data dir {}: {e}", config.data_dir.display())))?;
    // The one count of running turn tasks (admission is http::fairness's): the erasure's wait,
    // the metric and chat.db's load signal.
    let running_turns = actors::running_turns::RunningTurns::default();
    let stores = store::Stores::open(&parts.database, {
        let running_turns = running_turns.clone();
        Arc::new(move || running_turns.count())
    })
    .await?;
    let http_client = reqwest::Client::builder()
        .connect_timeout(model::CONNECT_TIMEOUT)
        .pool_idle_timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|e| Error::Internal(format!("http client: {e}")))?;
    let tasks = TaskTracker::new();
    context::set_max_tool_text(config.max_tool_output_chars);
    let config = Arc::new(config);
    let services = Arc::new(Services {
        config: config.clone(),
        store: stores.chat.clone(),
        audit: stores.audit.clone(),
        memory: stores.memory.clone(),
        ownership: store::lease::Ownership::of(&stores, config.lease),
        model: model::ModelClient::new(http_client, config.model.clone()),
        tool_servers: ToolServers::new(&config.mcp_servers, config.tool_timeout),
        tasks: tasks.clone(),
        shutdown: shutdown.clone(),
        registry: Arc::new(registry::Registry::new(
            &config,
            config.assistants_file.is_some().then(|| parts.assistants.clone()),
            stores.registry.clone(),
        )),
        assistants: parts.assistants,
        bindings: Default::default(),
        running_turns,
    });
    // No actor is registered under a global name: references live in the state below.
    let directory = actors::Directory::default();
    let (root, root_handle) = ractor::Actor::spawn(
        None,
        RootSupervisor {
            services: services.clone(),
            directory: directory.clone(),
        },
        (),
    )
    .await
    .map_err(|e| Error::Internal(format!("start actors: {e}")))?;
    let state = http::AppState {
        services: services.clone(),
        actors: directory,
        verifier: auth::identity::Verifier::new(config.proxy_secret.clone(), config.signing_secret.clone()),
        turn_permits: Arc::new(tokio::sync::Semaphore::new(config.max_concurrent_turns)),
        fairness: http::fairness::Fairness::new(http::fairness::Limits {
            max_running: config.user_max_turns,
            burst: config.user_turn_burst,
            per_minute: config.user_turns_per_min,
        }),
        replay: Arc::new(auth::replay::ReplayGuard::new(stores.replay.clone())),
    };
    let addr = listener.local_addr().map_err(|e| Error::Internal(e.to_string()))?;
    tracing::info!(%addr, "tamebi listening");
    println!("listening on http://{addr}");
    http::server::serve(
        listener,
        telemetry::http_layer(http::app(state)),
        shutdown.clone(),
        config.shutdown_timeout,
    )
    .await;
    // Streams have ended (they watch the same token); give running turns a bounded time.
    shutdown.cancel();
    tasks.close();
    if tokio::time::timeout(config.shutdown_timeout, tasks.wait()).await.is_err() {
        tracing::warn!("some turns did not stop in time");
    }
    root.stop(Some("shutdown".into()));
    let _ = tokio::time::timeout(config.shutdown_timeout, root_handle).await;
    drop(services);
    stores.close().await;
    tracing::info!("shutdown complete");
    Ok(())
}
