//! Configuration: one typed struct, read from the environment once at start.
//!
//! This module owns every environment variable the orchestrator reads; nothing else in the
//! crate calls `std::env::var`. It validates eagerly so that a bad deployment fails at start
//! with a message naming the variable, never later in a user's turn.
//!
//! A leaf (docs/architecture.md, "Layers"): it parses the environment into plain data and
//! imports nothing of the crate but `types`. Each part builds itself from its piece at start
//! (`store::Backend::from_config`, `assistants::Assistants::from_config`, both before anything
//! listens), refusing it with a [`ConfigError`] that names the variable just the same.
//!
//! The orchestrator holds exactly two secrets of its own and a model key. It must never hold
//! a Nextcloud credential: there is deliberately no variable for one.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::types::Secret;

/// Which of the caller's credentials an MCP server receives. Stated per server by the
/// operator; unstated means [`ServerAuth::None`] (fail closed: a server nobody marked as
/// Nextcloud-facing never sees a Nextcloud token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerAuth {
    /// The user's Nextcloud token issued for this server's audience (the app sends one per
    /// server name); a server without one in the request is not reached at all.
    Nextcloud,
    /// No credential ever: no `Authorization` header on any request. Its tool descriptions
    /// are treated as untrusted text (G2).
    None,
}

/// Whether the operator vouches for what a server says about its own tools (G3). Derived from
/// the server's configuration only: a server can never raise its own trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerTrust {
    /// `auth=nextcloud`: the operator's own Nextcloud-facing server. It holds the user's
    /// token already, so what a call sends it is no disclosure to a third party: its tool
    /// annotations decide approval.
    Own,
    /// `auth=none;trust=reads`: a third party whose read-only tools the operator chose to let
    /// run unasked (docs/security.md states the risk); every other call asks.
    Reads,
    /// `auth=none` without `trust=`: a server we do not vouch for. Every call to it sends it
    /// data, so every call asks, whatever its annotations claim.
    ThirdParty,
}

/// One MCP server the orchestrator offers tools from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub name: String,
    pub url: url::Url,
    pub auth: ServerAuth,
    pub trust: ServerTrust,
}

/// The model provider: any OpenAI-compatible chat-completions API.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// Base URLs ending in `/v1`, tried in order (never empty).
    pub base_urls: Vec<url::Url>,
    /// How long an endpoint that failed before its first chunk is skipped.
    pub endpoint_backoff: Duration,
    pub model: String,
    pub api_key: Option<Secret>,
    /// Tried once when the primary fails to connect or times out before its first chunk.
    pub fallback_model: Option<String>,
    /// How long to wait for the first streamed chunk.
    pub first_chunk_timeout: Duration,
    /// How long a whole model call may take.
    pub call_timeout: Duration,
    /// `TAMEBI_MODEL_IDLE_SECS`: how long a started stream may stay silent between chunks
    /// before the call counts as failed (a provider that stalls mid-answer), at most
    /// `call_timeout`.
    pub idle_timeout: Duration,
    /// `TAMEBI_TOOL_CALL_TEXT=auto`: the primary model's text is read for tool calls it wrote
    /// as text (model::text_calls). Off by default: models with native `tool_calls` need none.
    pub primary_text_tool_calls: bool,
    /// `TAMEBI_FALLBACK_TOOL_CALL_TEXT=auto`: the same for the fallback model.
    pub fallback_text_tool_calls: bool,
    /// `TAMEBI_MODEL_MAX_TOKENS`: sent as `max_tokens` on every call; the provider's own
    /// default when unset.
    pub max_tokens_per_call: Option<u32>,
    /// `TAMEBI_TURN_MAX_TOKENS`: no further model call in a turn once its calls used this
    /// many tokens (prompt and output, as the provider counts them). Unbounded when unset.
    pub max_tokens_per_turn: Option<u64>,
    /// The primary model's context window, in tokens (`TAMEBI_CONTEXT_TOKENS`).
    pub context_tokens: u64,
    /// The fallback model's context window (`TAMEBI_FALLBACK_CONTEXT_TOKENS`, default: the
    /// primary's).
    pub fallback_context_tokens: u64,
    /// `TAMEBI_MODEL_HTTP2`: how model streams travel (see `model::connections`).
    pub http2: ModelHttp2,
    /// `TAMEBI_MODEL_STREAMS_PER_CONNECTION` (100): most model streams multiplexed on one
    /// HTTP/2 connection before another is opened; at or below the provider's own limit.
    pub streams_per_connection: usize,
}

/// `TAMEBI_MODEL_HTTP2`: `auto` (default: HTTP/2 when the provider offers it over TLS, else
/// HTTP/1.1), `prior-knowledge` (HTTP/2 without negotiation, also over plain HTTP: h2c) or
/// `off` (HTTP/1.1 only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelHttp2 {
    Auto,
    PriorKnowledge,
    Off,
}

impl ModelConfig {
    /// Whether calls written as text are recognised for `model` (primary or fallback).
    pub fn reads_text_tool_calls(&self, model: &str) -> bool {
        if model == self.model {
            self.primary_text_tool_calls
        } else {
            self.fallback_text_tool_calls
        }
    }

    /// The context budget every request must fit: the smaller window of the models a request
    /// may reach (the fallback is chosen only after the request is built).
    pub fn context_budget(&self) -> u64 {
        match self.fallback_model {
            Some(_) => self.context_tokens.min(self.fallback_context_tokens),
            None => self.context_tokens,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    pub proxy_secret: Secret,
    pub signing_secret: Secret,
    pub model: ModelConfig,
    pub data_dir: PathBuf,
    /// Where chat, audit and memory live: SQLite files in `data_dir`, or the PostgreSQL
    /// database of `TAMEBI_DATABASE_URL` (shared by several instances); checked and built by
    /// `store::Backend::from_config`.
    pub database: Database,
    pub mcp_servers: Vec<McpServer>,
    pub max_steps: u32,
    /// Base URL of an OTLP/HTTP receiver (`OTEL_EXPORTER_OTLP_ENDPOINT`); none: no export.
    pub otlp_endpoint: Option<String>,
    /// Put the caller's uid on turn spans (`enduser.id`). Off unless the operator opts in.
    pub trace_user_id: bool,
    /// The stderr log filter (`RUST_LOG`).
    pub log_filter: String,
    /// A conversation actor with no turn running stops after this long; chat.db revives it.
    pub idle_timeout: Duration,
    /// `TAMEBI_TURN_ORPHAN_GRACE_SECS`: a turn whose every stream was dropped stops generating
    /// after this long without one (a resume within it reattaches; see `turn`).
    pub turn_orphan_grace: Duration,
    /// `TAMEBI_LEASE_SECS`: how long a conversation stays owned by an instance that stopped
    /// renewing (it died); the bound on how soon another instance takes over.
    pub lease: Duration,
    pub tool_timeout: Duration,
    /// `TAMEBI_RESTART_WINDOW_SECS`: the window in which the root supervisor counts a child's
    /// restarts (at most `actors::root::MAX_RESTARTS`), and how long a tool server over that
    /// limit stays out of service before it is tried again.
    pub restart_window: Duration,
    pub shutdown_timeout: Duration,
    /// Concurrent chat turns across all users; beyond it new turns get 429.
    pub max_concurrent_turns: usize,
    /// The most characters of one tool result the model is given (`TAMEBI_MAX_TOOL_OUTPUT_CHARS`).
    pub max_tool_output_chars: usize,
    /// B6: concurrent turns per user (`TAMEBI_USER_MAX_TURNS`); beyond it that user gets 429.
    pub user_max_turns: usize,
    /// B6: a user's token bucket: this many turns at once (`TAMEBI_USER_TURN_BURST`)…
    pub user_turn_burst: u32,
    /// …refilled at this many a minute (`TAMEBI_USER_TURNS_PER_MIN`; 0 = no rate limit).
    pub user_turns_per_min: u32,
    /// Test builds only: lets a scripted model text provoke an actor panic.
    pub fault_injection: bool,
    /// `TAMEBI_ASSISTANTS`: the operator's assistants file (none: the built-in `default`
    /// assistant); read and checked by `assistants::Assistants::from_config`.
    pub assistants_file: Option<PathBuf>,
}

/// `TAMEBI_DATABASE_URL` and `TAMEBI_DATABASE_CA_FILE` as given. The URL may hold a password,
/// so it is a [`Secret`] (never printed).
#[derive(Debug, Clone)]
pub struct Database {
    pub url: Option<Secret>,
    pub ca_file: Option<PathBuf>,
}

/// Why the configuration was refused. Each message names the variable to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is required")]
    Missing(&'static str),
    #[error("{var} is invalid: {why}")]
    Invalid { var: &'static str, why: String },
}

/// Hard cap on agent steps per turn, whatever the configuration says.
pub const MAX_STEPS_CAP: u32 = 50;
const MIN_SECRET_BYTES: usize = 32;

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_vars(&std::env::vars().collect())
    }

    /// Reads configuration from a map of variables (the environment, or a test's map).
    pub fn from_vars(vars: &HashMap<String, String>) -> Result<Config, ConfigError> {
        let get = |k: &str| vars.get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let bind = parse_or(get("TAMEBI_BIND"), "TAMEBI_BIND", "127.0.0.1:8700")?;
        let data_dir = PathBuf::from(get("TAMEBI_DATA_DIR").unwrap_or_else(|| "./data".into()));
        let proxy_secret = secret(get("TAMEBI_PROXY_SECRET"), "TAMEBI_PROXY_SECRET")?;
        let signing_secret = secret(get("TAMEBI_SIGNING_SECRET"), "TAMEBI_SIGNING_SECRET")?;
        // G1: the two secrets prove different things; one value for both would let anything
        // that knows the proxy secret forge any user's signature.
        if proxy_secret.expose() == signing_secret.expose() {
            return Err(ConfigError::Invalid {
                var: "TAMEBI_SIGNING_SECRET",
                why: "must differ from TAMEBI_PROXY_SECRET".into(),
            });
        }
        let max_steps: u32 = parse_or(get("TAMEBI_MAX_STEPS"), "TAMEBI_MAX_STEPS", "20")?;
        if max_steps == 0 || max_steps > MAX_STEPS_CAP {
            return Err(ConfigError::Invalid {
                var: "TAMEBI_MAX_STEPS",
                why: format!("must be between 1 and {MAX_STEPS_CAP}"),
            });
        }
        let fault_injection = cfg!(feature = "fault-injection") && get("TAMEBI_FAULT_INJECTION").as_deref() == Some("1");
        let model = model_config(&get)?;
        let mcp_servers = mcp_servers(get("TAMEBI_MCP_SERVERS").as_deref().unwrap_or(""))?;
        Ok(Config {
            bind,
            proxy_secret,
            signing_secret,
            model,
            data_dir,
            database: Database {
                url: get("TAMEBI_DATABASE_URL").map(Secret::new),
                ca_file: get("TAMEBI_DATABASE_CA_FILE").map(PathBuf::from),
            },
            mcp_servers,
            max_steps,
            otlp_endpoint: otlp_endpoint(get("OTEL_EXPORTER_OTLP_ENDPOINT"))?,
            trace_user_id: flag(get("TAMEBI_TRACE_USER_ID"), "TAMEBI_TRACE_USER_ID")?,
            log_filter: get("RUST_LOG").unwrap_or_else(|| DEFAULT_LOG_FILTER.into()),
            idle_timeout: secs(get("TAMEBI_IDLE_SECS"), "TAMEBI_IDLE_SECS", "300")?,
            turn_orphan_grace: orphan_grace(get("TAMEBI_TURN_ORPHAN_GRACE_SECS"))?,
            lease: secs(get("TAMEBI_LEASE_SECS"), "TAMEBI_LEASE_SECS", "10")?,
            tool_timeout: secs(get("TAMEBI_TOOL_TIMEOUT_SECS"), "TAMEBI_TOOL_TIMEOUT_SECS", "60")?,
            restart_window: secs(get("TAMEBI_RESTART_WINDOW_SECS"), "TAMEBI_RESTART_WINDOW_SECS", "60")?,
            shutdown_timeout: secs(get("TAMEBI_SHUTDOWN_SECS"), "TAMEBI_SHUTDOWN_SECS", "10")?,
            max_concurrent_turns: parse_or(get("TAMEBI_MAX_TURNS"), "TAMEBI_MAX_TURNS", "20000")?,
            max_tool_output_chars: positive(get("TAMEBI_MAX_TOOL_OUTPUT_CHARS"), "TAMEBI_MAX_TOOL_OUTPUT_CHARS", "24000")?,
            user_max_turns: positive(get("TAMEBI_USER_MAX_TURNS"), "TAMEBI_USER_MAX_TURNS", "8")?,
            user_turn_burst: positive(get("TAMEBI_USER_TURN_BURST"), "TAMEBI_USER_TURN_BURST", "60")?,
            user_turns_per_min: parse_or(get("TAMEBI_USER_TURNS_PER_MIN"), "TAMEBI_USER_TURNS_PER_MIN", "60")?,
            fault_injection,
            assistants_file: get("TAMEBI_ASSISTANTS").map(PathBuf::from),
        })
    }
}

fn model_config(get: &impl Fn(&str) -> Option<String>) -> Result<ModelConfig, ConfigError> {
    let raw = get("TAMEBI_MODEL_URL").ok_or(ConfigError::Missing("TAMEBI_MODEL_URL"))?;
    let base_urls = raw.split(',').map(|u| model_url(u.trim())).collect::<Result<Vec<_>, _>>()?;
    let context_tokens = context_window(get("TAMEBI_CONTEXT_TOKENS"), "TAMEBI_CONTEXT_TOKENS", 32_768)?;
    let call_timeout = secs(get("TAMEBI_MODEL_CALL_SECS"), "TAMEBI_MODEL_CALL_SECS", "300")?;
    let idle_timeout = secs(get("TAMEBI_MODEL_IDLE_SECS"), "TAMEBI_MODEL_IDLE_SECS", "60")?;
    if idle_timeout > call_timeout {
        return Err(ConfigError::Invalid {
            var: "TAMEBI_MODEL_IDLE_SECS",
            why: "must not exceed TAMEBI_MODEL_CALL_SECS".into(),
        });
    }
    Ok(ModelConfig {
        base_urls,
        endpoint_backoff: secs(get("TAMEBI_MODEL_BACKOFF_SECS"), "TAMEBI_MODEL_BACKOFF_SECS", "30")?,
        model: get("TAMEBI_MODEL").ok_or(ConfigError::Missing("TAMEBI_MODEL"))?,
        api_key: get("TAMEBI_MODEL_API_KEY").map(Secret::new),
        fallback_model: get("TAMEBI_FALLBACK_MODEL"),
        first_chunk_timeout: secs(get("TAMEBI_MODEL_FIRST_CHUNK_SECS"), "TAMEBI_MODEL_FIRST_CHUNK_SECS", "30")?,
        call_timeout,
        idle_timeout,
        primary_text_tool_calls: auto_or_off(get("TAMEBI_TOOL_CALL_TEXT"), "TAMEBI_TOOL_CALL_TEXT")?,
        fallback_text_tool_calls: auto_or_off(get("TAMEBI_FALLBACK_TOOL_CALL_TEXT"), "TAMEBI_FALLBACK_TOOL_CALL_TEXT")?,
        max_tokens_per_call: get("TAMEBI_MODEL_MAX_TOKENS")
            .map(|v| positive(Some(v), "TAMEBI_MODEL_MAX_TOKENS", "1"))
            .transpose()?,
        max_tokens_per_turn: get("TAMEBI_TURN_MAX_TOKENS")
            .map(|v| positive(Some(v), "TAMEBI_TURN_MAX_TOKENS", "1"))
            .transpose()?,
        context_tokens,
        fallback_context_tokens: context_window(
            get("TAMEBI_FALLBACK_CONTEXT_TOKENS"),
            "TAMEBI_FALLBACK_CONTEXT_TOKENS",
            context_tokens,
        )?,
        http2: match get("TAMEBI_MODEL_HTTP2").as_deref().map(str::trim) {
            None | Some("" | "auto") => ModelHttp2::Auto,
            Some("prior-knowledge") => ModelHttp2::PriorKnowledge,
            Some("off") => ModelHttp2::Off,
            Some(_) => {
                return Err(ConfigError::Invalid {
                    var: "TAMEBI_MODEL_HTTP2",
                    why: "must be auto, prior-knowledge or off".into(),
                });
            }
        },
        streams_per_connection: positive(
            get("TAMEBI_MODEL_STREAMS_PER_CONNECTION"),
            "TAMEBI_MODEL_STREAMS_PER_CONNECTION",
            "100",
        )?,
    })
}

/// Smallest context window we accept: below it the system prompt, memory and one exchange
/// would not fit, and every turn would fail.
pub const MIN_CONTEXT_TOKENS: u64 = 2048;

fn context_window(value: Option<String>, var: &'static str, default: u64) -> Result<u64, ConfigError> {
    let n: u64 = parse_or(value, var, &default.to_string())?;
    if n < MIN_CONTEXT_TOKENS {
        return Err(ConfigError::Invalid {
            var,
            why: format!("must be at least {MIN_CONTEXT_TOKENS} tokens"),
        });
    }
    Ok(n)
}

/// One OpenAI-compatible base URL of `TAMEBI_MODEL_URL`.
fn model_url(raw: &str) -> Result<url::Url, ConfigError> {
    let var = "TAMEBI_MODEL_URL";
    let url = url::Url::parse(raw.trim_end_matches('/')).map_err(|e| ConfigError::Invalid {
        var,
        why: format!("`{raw}`: {e}"),
    })?;
    if !matches!(url.scheme(), "http" | "https") || !url.path().ends_with("/v1") {
        return Err(ConfigError::Invalid {
            var,
            why: format!("`{raw}` must be an http(s) OpenAI-compatible base URL ending in /v1 (several: comma-separated)"),
        });
    }
    Ok(url)
}

/// `auto` or `off` (the default).
fn auto_or_off(value: Option<String>, var: &'static str) -> Result<bool, ConfigError> {
    match value.as_deref() {
        None | Some("off") => Ok(false),
        Some("auto") => Ok(true),
        Some(other) => Err(ConfigError::Invalid {
            var,
            why: format!("`{other}` is not `auto` or `off`"),
        }),
    }
}

/// Logs on stderr when `RUST_LOG` is not set: ours at info, chatty dependencies quieter.
pub const DEFAULT_LOG_FILTER: &str = "info,ractor=warn,rmcp=warn,hyper=warn,reqwest=warn";

fn otlp_endpoint(value: Option<String>) -> Result<Option<String>, ConfigError> {
    let var = "OTEL_EXPORTER_OTLP_ENDPOINT";
    let Some(raw) = value else { return Ok(None) };
    let url = url::Url::parse(&raw).map_err(|e| ConfigError::Invalid { var, why: e.to_string() })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ConfigError::Invalid {
            var,
            why: "must be the http(s) base URL of an OTLP/HTTP receiver, e.g. http://127.0.0.1:4318".into(),
        });
    }
    Ok(Some(raw))
}

fn flag(value: Option<String>, var: &'static str) -> Result<bool, ConfigError> {
    match value.as_deref() {
        None | Some("0" | "false") => Ok(false),
        Some("1" | "true") => Ok(true),
        Some(other) => Err(ConfigError::Invalid {
            var,
            why: format!("must be 1 or 0, got {other:?}"),
        }),
    }
}

fn secret(value: Option<String>, var: &'static str) -> Result<Secret, ConfigError> {
    let value = value.ok_or(ConfigError::Missing(var))?;
    if value.len() < MIN_SECRET_BYTES {
        return Err(ConfigError::Invalid {
            var,
            why: format!("must be at least {MIN_SECRET_BYTES} bytes"),
        });
    }
    Ok(Secret::new(value))
}

fn parse_or<T: std::str::FromStr>(value: Option<String>, var: &'static str, default: &str) -> Result<T, ConfigError>
where
    T::Err: fmt::Display,
{
    value
        .as_deref()
        .unwrap_or(default)
        .parse()
        .map_err(|e: T::Err| ConfigError::Invalid { var, why: e.to_string() })
}

/// A whole number of at least 1.
fn positive<T: std::str::FromStr + PartialOrd + From<u8>>(value: Option<String>, var: &'static str, default: &str) -> Result<T, ConfigError>
where
    T::Err: fmt::Display,
{
    let n: T = parse_or(value, var, default)?;
    if n < T::from(1) {
        return Err(ConfigError::Invalid {
            var,
            why: "must be at least 1".into(),
        });
    }
    Ok(n)
}

fn secs(value: Option<String>, var: &'static str, default: &str) -> Result<Duration, ConfigError> {
    let n: u64 = parse_or(value, var, default)?;
    if n == 0 {
        return Err(ConfigError::Invalid {
            var,
            why: "must be at least 1 second".into(),
        });
    }
    Ok(Duration::from_secs(n))
}

/// Longest orphan grace accepted: past an hour, a model would generate for nobody for longer
/// than anyone waits for a reply.
pub const MAX_ORPHAN_GRACE_SECS: u64 = 3600;

/// `TAMEBI_TURN_ORPHAN_GRACE_SECS`, default 30: long enough for the island's resume after a
/// dropped connection (three attempts at once) or a reload of the page, short enough that a
/// closed tab does not keep the model busy for minutes.
fn orphan_grace(value: Option<String>) -> Result<Duration, ConfigError> {
    const VAR: &str = "TAMEBI_TURN_ORPHAN_GRACE_SECS";
    let invalid = || ConfigError::Invalid {
        var: VAR,
        why: format!("must be a whole number of seconds from 1 to {MAX_ORPHAN_GRACE_SECS}"),
    };
    let n: u64 = value.as_deref().unwrap_or("30").parse().map_err(|_| invalid())?;
    if !(1..=MAX_ORPHAN_GRACE_SECS).contains(&n) {
        return Err(invalid());
    }
    Ok(Duration::from_secs(n))
}

/// Parses `name=url;auth=nextcloud,name=url;auth=none;trust=reads,name=url`. Names become part
/// of tool routing and of the credentials header, so they are kept simple. `,` and `;` inside
/// a URL must be percent-encoded.
fn mcp_servers(raw: &str) -> Result<Vec<McpServer>, ConfigError> {
    let mut servers: Vec<McpServer> = Vec::new();
    for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let server = mcp_server(item)?;
        if servers.iter().any(|s| s.name == server.name) {
            return Err(invalid_server(format!("server name `{}` appears twice", server.name)));
        }
        if server.name == crate::types::LOCAL_SERVER {
            return Err(invalid_server(format!(
                "server name `{}` is reserved for the orchestrator's own tools",
                server.name
            )));
        }
        servers.push(server);
    }
    Ok(servers)
}

/// One `name=url;auth=…;trust=…` entry, as `TAMEBI_MCP_SERVERS` has them (the admin page's
/// servers go through the same rules, `registry::ServerSpec`). The message says what is wrong.
pub(crate) fn mcp_server_entry(item: &str) -> Result<McpServer, String> {
    let server = mcp_server(item).map_err(|e| match e {
        ConfigError::Invalid { why, .. } => why,
        other => other.to_string(),
    })?;
    if server.name == crate::types::LOCAL_SERVER {
        return Err(format!(
            "server name `{}` is reserved for the orchestrator's own tools",
            server.name
        ));
    }
    Ok(server)
}

fn mcp_server(item: &str) -> Result<McpServer, ConfigError> {
    let (name, rest) = item
        .split_once('=')
        .ok_or_else(|| invalid_server(format!("`{item}` is not name=url")))?;
    let name = name.trim();
    if !crate::types::valid_server_name(name) {
        return Err(invalid_server(format!(
            "server name `{name}` must be 1-64 characters of [A-Za-z0-9_-]"
        )));
    }
    let mut fields = rest.split(';').map(str::trim);
    let url_text = fields.next().unwrap_or_default();
    let url = url::Url::parse(url_text).map_err(|e| invalid_server(format!("`{name}`: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid_server(format!("`{name}` must be an http(s) URL")));
    }
    let (mut auth, mut trust_reads) = (None, false);
    for option in fields.filter(|f| !f.is_empty()) {
        match option.split_once('=').map(|(k, v)| (k, v.trim())) {
            Some(("auth", value)) if auth.is_none() => {
                auth = Some(match value {
                    "nextcloud" => ServerAuth::Nextcloud,
                    "none" => ServerAuth::None,
                    other => return Err(invalid_server(format!("`{name}`: auth must be nextcloud or none, not `{other}`"))),
                });
            }
            Some(("trust", "reads")) if !trust_reads => trust_reads = true,
            Some(("trust", other)) if !trust_reads => {
                return Err(invalid_server(format!("`{name}`: trust can only be reads, not `{other}`")));
            }
            _ => {
                return Err(invalid_server(format!(
                    "`{name}`: unknown or repeated option `{option}` (only auth=nextcloud|none and trust=reads)"
                )));
            }
        }
    }
    // G1: fail closed. Only a server the operator marked Nextcloud-facing gets a token.
    let auth = auth.unwrap_or(ServerAuth::None);
    // G3: fail closed. A server that is not ours is trusted with nothing unless the operator
    // says so for that server; ours needs no such word (it holds the user's token already).
    let trust = match (auth, trust_reads) {
        (ServerAuth::Nextcloud, false) => ServerTrust::Own,
        (ServerAuth::Nextcloud, true) => {
            return Err(invalid_server(format!(
                "`{name}`: trust=reads is for auth=none servers (an auth=nextcloud server's annotations already decide)"
            )));
        }
        (ServerAuth::None, true) => ServerTrust::Reads,
        (ServerAuth::None, false) => ServerTrust::ThirdParty,
    };
    Ok(McpServer {
        name: name.to_string(),
        url,
        auth,
        trust,
    })
}

fn invalid_server(why: String) -> ConfigError {
    ConfigError::Invalid {
        var: "TAMEBI_MCP_SERVERS",
        why,
    }
}

/// A valid set of variables for tests, here and in the parts that build from the config.
#[cfg(test)]
pub(crate) mod test_vars {
    use super::{Config, ConfigError, HashMap};

    pub fn base() -> HashMap<String, String> {
        [
            ("TAMEBI_PROXY_SECRET", "p".repeat(32)),
            ("TAMEBI_SIGNING_SECRET", "s".repeat(32)),
            ("TAMEBI_MODEL_URL", "http://127.0.0.1:9/v1".to_string()),
            ("TAMEBI_MODEL", "m".to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    pub fn with(k: &str, v: &str) -> Result<Config, ConfigError> {
        let mut vars = base();
        vars.insert(k.into(), v.into());
        Config::from_vars(&vars)
    }
}

#[cfg(test)]
mod tests {
    use super::test_vars::{base, with};
    use super::*;

    #[test]
    fn defaults_apply() {
        let c = Config::from_vars(&base()).unwrap();
        assert_eq!(c.bind.to_string(), "127.0.0.1:8700");
        assert_eq!(c.max_steps, 20);
        assert_eq!(c.model.context_budget(), 32_768);
        assert!(c.mcp_servers.is_empty());
        assert!(!c.fault_injection || cfg!(feature = "fault-injection"));
    }

    #[test]
    fn secrets_must_be_long_and_distinct() {
        assert!(matches!(
            with("TAMEBI_PROXY_SECRET", "short"),
            Err(ConfigError::Invalid {
                var: "TAMEBI_PROXY_SECRET",
                ..
            })
        ));
        let same = "x".repeat(40);
        let mut vars = base();
        vars.insert("TAMEBI_PROXY_SECRET".into(), same.clone());
        vars.insert("TAMEBI_SIGNING_SECRET".into(), same);
        assert!(Config::from_vars(&vars).unwrap_err().to_string().contains("must differ"));
        let mut vars = base();
        vars.remove("TAMEBI_SIGNING_SECRET");
        assert!(matches!(
            Config::from_vars(&vars),
            Err(ConfigError::Missing("TAMEBI_SIGNING_SECRET"))
        ));
    }

    #[test]
    fn the_orphan_grace_is_whole_seconds_within_an_hour() {
        let c = Config::from_vars(&base()).unwrap();
        assert_eq!(c.turn_orphan_grace, Duration::from_secs(30));
        assert_eq!(
            with("TAMEBI_TURN_ORPHAN_GRACE_SECS", "3600").unwrap().turn_orphan_grace,
            Duration::from_secs(3600)
        );
        for bad in ["0", "3601", "-1", "1.5", "soon"] {
            let e = with("TAMEBI_TURN_ORPHAN_GRACE_SECS", bad).unwrap_err().to_string();
            assert!(
                e.contains("TAMEBI_TURN_ORPHAN_GRACE_SECS") && e.contains("from 1 to 3600"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn step_cap_is_enforced() {
        assert!(with("TAMEBI_MAX_STEPS", "50").is_ok());
        assert!(with("TAMEBI_MAX_STEPS", "51").is_err());
        assert!(with("TAMEBI_MAX_STEPS", "0").is_err());
        assert!(with("TAMEBI_MAX_STEPS", "many").is_err());
    }

    #[test]
    fn per_user_turn_limits() {
        let c = Config::from_vars(&base()).unwrap();
        assert_eq!((c.user_max_turns, c.user_turn_burst, c.user_turns_per_min), (8, 60, 60));
        assert!(with("TAMEBI_USER_TURNS_PER_MIN", "0").is_ok());
        for (var, bad) in [
            ("TAMEBI_USER_MAX_TURNS", "0"),
            ("TAMEBI_USER_TURN_BURST", "0"),
            ("TAMEBI_USER_TURN_BURST", "x"),
            ("TAMEBI_USER_TURNS_PER_MIN", "-1"),
        ] {
            assert!(
                matches!(with(var, bad), Err(ConfigError::Invalid { var: v, .. }) if v == var),
                "{var}={bad}"
            );
        }
    }

    #[test]
    fn model_url_must_end_in_v1() {
        assert!(with("TAMEBI_MODEL_URL", "http://x/v1/").is_ok());
        assert!(with("TAMEBI_MODEL_URL", "http://x/api").is_err());
        assert!(with("TAMEBI_MODEL_URL", "ftp://x/v1").is_err());
        let c = with("TAMEBI_MODEL_URL", "http://a/v1, http://b:8/v1/").unwrap();
        assert_eq!(
            c.model.base_urls.iter().map(url::Url::as_str).collect::<Vec<_>>(),
            vec!["http://a/v1", "http://b:8/v1"]
        );
        let err = with("TAMEBI_MODEL_URL", "http://a/v1,,http://b/v1").unwrap_err().to_string();
        assert!(err.contains("TAMEBI_MODEL_URL"), "{err}");
        assert!(with("TAMEBI_MODEL_URL", "http://a/v1,http://b/api").is_err());
    }

    #[test]
    fn text_tool_calls_are_per_model_and_off_by_default() {
        let c = Config::from_vars(&base()).unwrap();
        assert!(!c.model.reads_text_tool_calls("m"));
        let mut vars = base();
        vars.insert("TAMEBI_FALLBACK_MODEL".into(), "small".into());
        vars.insert("TAMEBI_FALLBACK_TOOL_CALL_TEXT".into(), "auto".into());
        let c = Config::from_vars(&vars).unwrap();
        assert!(!c.model.reads_text_tool_calls("m"));
        assert!(c.model.reads_text_tool_calls("small"));
        assert!(with("TAMEBI_TOOL_CALL_TEXT", "auto").unwrap().model.reads_text_tool_calls("m"));
        let err = with("TAMEBI_TOOL_CALL_TEXT", "yes").unwrap_err().to_string();
        assert!(err.contains("TAMEBI_TOOL_CALL_TEXT") && err.contains("auto"), "{err}");
    }

    #[test]
    fn operator_bounds_parse() {
        assert_eq!(Config::from_vars(&base()).unwrap().model.max_tokens_per_call, None);
        assert_eq!(
            with("TAMEBI_MODEL_MAX_TOKENS", "2048").unwrap().model.max_tokens_per_call,
            Some(2048)
        );
        assert!(with("TAMEBI_MODEL_MAX_TOKENS", "0").is_err());
        assert!(with("TAMEBI_MODEL_MAX_TOKENS", "lots").is_err());
        assert_eq!(
            with("TAMEBI_TURN_MAX_TOKENS", "90000").unwrap().model.max_tokens_per_turn,
            Some(90_000)
        );
        assert!(with("TAMEBI_TURN_MAX_TOKENS", "0").is_err());
        assert_eq!(Config::from_vars(&base()).unwrap().max_tool_output_chars, 24_000);
        assert_eq!(with("TAMEBI_MAX_TOOL_OUTPUT_CHARS", "500").unwrap().max_tool_output_chars, 500);
        assert!(with("TAMEBI_MAX_TOOL_OUTPUT_CHARS", "0").is_err());
    }

    #[test]
    fn mcp_servers_parse_and_reject_bad_entries() {
        let c = with(
            "TAMEBI_MCP_SERVERS",
            "nextcloud=http://127.0.0.1:8711/mcp;auth=nextcloud, mail=http://127.0.0.1:8712/mcp ; auth=nextcloud,weather=https://w.example/mcp;auth=none,x=http://x/mcp",
        )
        .unwrap();
        assert_eq!(c.mcp_servers.len(), 4);
        assert_eq!(c.mcp_servers[1].name, "mail");
        assert_eq!(c.mcp_servers[1].url.as_str(), "http://127.0.0.1:8712/mcp");
        let auth: Vec<ServerAuth> = c.mcp_servers.iter().map(|s| s.auth).collect();
        assert_eq!(
            auth,
            vec![ServerAuth::Nextcloud, ServerAuth::Nextcloud, ServerAuth::None, ServerAuth::None],
            "unstated auth is none"
        );
        let trust: Vec<ServerTrust> = c.mcp_servers.iter().map(|s| s.trust).collect();
        assert_eq!(
            trust,
            vec![ServerTrust::Own, ServerTrust::Own, ServerTrust::ThirdParty, ServerTrust::ThirdParty],
            "a server that is not ours is trusted with nothing unless the operator says so"
        );
        assert!(with("TAMEBI_MCP_SERVERS", "nextcloud").is_err());
        for bad in [
            "a=http://x/;auth=admin",
            "a=http://x/;auth=",
            "a=http://x/;token=abc",
            "a=http://x/;auth=none;auth=nextcloud",
            "a=http://x/;AUTH=nextcloud",
            "a=http://x/;trust=all",
            "a=http://x/;trust=",
            "a=http://x/;trust=reads;trust=reads",
            "a=http://x/;auth=nextcloud;trust=reads",
        ] {
            let err = with("TAMEBI_MCP_SERVERS", bad).unwrap_err().to_string();
            assert!(err.contains("TAMEBI_MCP_SERVERS"), "{bad}: {err}");
        }
        assert!(with("TAMEBI_MCP_SERVERS", "a b=http://x/").is_err());
        assert!(with("TAMEBI_MCP_SERVERS", "a=http://x/,a=http://y/").is_err());
        assert!(with("TAMEBI_MCP_SERVERS", "a=file:///etc").is_err());
    }

    /// Issue #27: a third party's read tools run unasked only where the operator said so, per
    /// server; `trust=reads` never hands out a credential.
    #[test]
    fn trust_reads_is_per_server_and_only_for_auth_none() {
        let c = with(
            "TAMEBI_MCP_SERVERS",
            "w=http://w/mcp;auth=none;trust=reads,v=http://v/mcp; trust=reads ,u=http://u/mcp;auth=none",
        )
        .unwrap();
        let got: Vec<(ServerAuth, ServerTrust)> = c.mcp_servers.iter().map(|s| (s.auth, s.trust)).collect();
        assert_eq!(
            got,
            vec![
                (ServerAuth::None, ServerTrust::Reads),
                (ServerAuth::None, ServerTrust::Reads),
                (ServerAuth::None, ServerTrust::ThirdParty),
            ]
        );
        let err = with("TAMEBI_MCP_SERVERS", "n=http://n/mcp;auth=nextcloud;trust=reads")
            .unwrap_err()
            .to_string();
        assert!(err.contains("TAMEBI_MCP_SERVERS") && err.contains("auth=none"), "{err}");
    }

    #[test]
    fn context_windows_are_validated_and_the_smaller_one_is_the_budget() {
        assert_eq!(with("TAMEBI_CONTEXT_TOKENS", "8192").unwrap().model.context_budget(), 8192);
        assert!(
            with("TAMEBI_CONTEXT_TOKENS", "100")
                .unwrap_err()
                .to_string()
                .contains("TAMEBI_CONTEXT_TOKENS")
        );
        assert!(with("TAMEBI_CONTEXT_TOKENS", "lots").is_err());
        let mut vars = base();
        vars.insert("TAMEBI_FALLBACK_MODEL".into(), "small".into());
        vars.insert("TAMEBI_FALLBACK_CONTEXT_TOKENS".into(), "4096".into());
        assert_eq!(Config::from_vars(&vars).unwrap().model.context_budget(), 4096);
        // Without a fallback model its window does not matter.
        assert_eq!(
            with("TAMEBI_FALLBACK_CONTEXT_TOKENS", "4096").unwrap().model.context_budget(),
            32_768
        );
    }

    #[test]
    fn the_local_tool_server_name_is_reserved() {
        assert!(
            with("TAMEBI_MCP_SERVERS", "tamebi=http://x/mcp")
                .unwrap_err()
                .to_string()
                .contains("reserved")
        );
    }

    #[test]
    fn telemetry_settings() {
        let c = Config::from_vars(&base()).unwrap();
        assert_eq!(c.otlp_endpoint, None);
        assert!(!c.trace_user_id, "the uid is never traced unless the operator opts in");
        let c = with("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318").unwrap();
        assert_eq!(c.otlp_endpoint.as_deref(), Some("http://127.0.0.1:4318"));
        assert!(with("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318").is_err());
        assert!(with("TAMEBI_TRACE_USER_ID", "1").unwrap().trace_user_id);
        assert!(with("TAMEBI_TRACE_USER_ID", "yes please").is_err());
    }

    #[test]
    fn secrets_do_not_print() {
        let mut vars = base();
        let (proxy, signing, key) = (
            "proxy-0123456789abcdef0123456789abcdef",
            "sign-0123456789abcdef0123456789abcdef",
            "sk-model-key-9f8e7d6c",
        );
        vars.insert("TAMEBI_PROXY_SECRET".into(), proxy.into());
        vars.insert("TAMEBI_SIGNING_SECRET".into(), signing.into());
        vars.insert("TAMEBI_MODEL_API_KEY".into(), key.into());
        let c = Config::from_vars(&vars).unwrap();
        for shown in [format!("{c:?}"), format!("{c:#?}"), format!("{:?}", c.model)] {
            for secret in [proxy, signing, key] {
                assert!(!shown.contains(secret), "{secret} printed in {shown}");
            }
            assert!(shown.contains("REDACTED"), "{shown}");
        }
        // The values are still there for the one place that uses each.
        assert_eq!(c.proxy_secret.expose(), proxy);
        assert_eq!(c.model.api_key.as_ref().map(Secret::expose), Some(key));
    }
}
