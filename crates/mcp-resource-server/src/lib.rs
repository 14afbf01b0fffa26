//! What an MCP *resource server* of Tamebi shares (the OAuth term, RFC 9728: a server that
//! accepts bearer tokens and answers 401 with a pointer to its metadata). mcp-nextcloud and
//! mcp-mail are two; each keeps only its tools and its upstream client.
//!
//! Such a server holds no credential: every inbound request carries the caller's own bearer,
//! the server forwards exactly that bearer upstream and drops it with the request. Nothing in
//! this crate decides what a caller may do; it answers only "is there a credential, whose is
//! it, and was it minted for this server".
//!
//! Module map, leaves first:
//! - [`error`]: the crate's error enum (configuration and serving).
//! - [`caller`]: [`Bearer`] (redacted, never stored) and [`Caller`] (bearer + uid), the only
//!   identity types a tool sees.
//! - [`audience`]: the JWT `aud` check against the server's canonical URI.
//! - [`identity`]: asking upstream whose bearer it is ([`Identify`], [`OcsIdentify`]) and
//!   the uid cache keyed by sha256(token).
//! - [`config`]: [`BaseConfig`], the env settings every server has (`NC_URL`, `MCP_BIND`,
//!   `MCP_PUBLIC_URL`, `MCP_ALLOWED_HOSTS`, `RUST_LOG`, `OTEL_EXPORTER_OTLP_ENDPOINT`).
//! - [`auth`]: the axum layer in front of `/mcp` (401 + `WWW-Authenticate` with
//!   `resource_metadata`) and the `/.well-known/oauth-protected-resource` document.
//! - [`tool_result`]: the one shape of a tool's success and failure.
//! - [`arguments`]: a tool call's arguments as models write them (a quoted integer where the
//!   tool's input schema says integer is read as that integer).
//! - [`schema`]: the published schemas, standard JSON Schema 2020-12 (no schemars-only
//!   `format`s), applied once to every tool of a router.
//! - [`apps`]: MCP Apps documents served from a server's compiled-in table.
//! - [`mcp`]: the rmcp glue: the stateless Streamable HTTP service, the caller of a request
//!   context, the span of one tool call.
//! - [`serve`]: the router (`/mcp`, well-known, `/healthz`), the serve loop with graceful
//!   shutdown, and [`serve::main`], the whole of a server binary's `main`.
//!
//! A new server: a `Config { base: BaseConfig, .. }`, an rmcp `ServerHandler` that reads
//! [`mcp::caller`], and
//! ```ignore
//! let auth = Arc::new(AuthState::new(&config.base, OcsIdentify::new(config.base.nc_url.clone())?));
//! let service = mcp::stateless_service(move || Ok(Handler::new(..)), &config.base, MAX_BODY, &shutdown);
//! let router = serve::router(auth, service, &config.base);
//! serve::serve(listener, router, shutdown).await
//! ```
//! Its tool router is built once and passed through [`schema::standard_schemas`]; its
//! `call_tool` looks the tool up, applies [`arguments::integers_from_strings`] with it, then
//! lets the router read the arguments (what rmcp cannot read becomes an `invalid_argument`
//! result through [`tool_result::unreadable_arguments`]).

pub mod apps;
pub mod arguments;
pub mod audience;
pub mod auth;
pub mod caller;
pub mod config;
pub mod error;
pub mod identity;
pub mod mcp;
pub mod schema;
pub mod serve;
pub mod tool_result;

pub use auth::AuthState;
pub use caller::{Bearer, Caller};
pub use config::{BaseConfig, ServerConfig};
pub use error::Error;
pub use identity::{Identify, IdentifyError, OcsIdentify};
