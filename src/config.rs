//! Configuration: one typed struct, read from the environment once at start.
//!
//! This module owns every environment variable the orchestrator reads; nothing else in the
//! crate calls `std::env::var`. It validates eagerly so that a bad deployment fails at start
//! with a message naming the variable, never later in a user's turn.
//!
//! The orchestrator holds exactly two secrets of its own and a model key. It must never hold
//! a Nextcloud credential: there is deliberately no variable for one.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A secret value that never prints itself.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// One MCP server the orchestrator offers tools from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub name: String,
    pub url: url::Url,
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
}

#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    pub proxy_secret: Secret,
    pub signing_secret: Secret,
    pub model: ModelConfig,
    pub data_dir: PathBuf,
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
    pub tool_timeout: Duration,
    pub shutdown_timeout: Duration,
    /// Concurrent chat turns across all users; beyond it new turns get 429.
    pub max_concurrent_turns: usize,
    /// The most characters of one tool result the model is given (`TAMEBI_MAX_TOOL_OUTPUT_CHARS`).
    pub max_tool_output_chars: usize,
    /// Test builds only: lets a scripted model text provoke an actor panic.
    pub fault_injection: bool,
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
        let proxy_secret = secret(get("TAMEBI_PROXY_SECRET"), "TAMEBI_PROXY_SECRET")?;
        let signing_secret = secret(get("TAMEBI_SIGNING_SECRET"), "TAMEBI_SIGNING_SECRET")?;
        // G1: the two secrets prove different things; one value for both would let anything
        // that knows the proxy secret forge any user's signature.
        if proxy_secret == signing_secret {
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
        Ok(Config {
            bind,
            proxy_secret,
            signing_secret,
            model: model_config(&get)?,
            data_dir: PathBuf::from(get("TAMEBI_DATA_DIR").unwrap_or_else(|| "./data".into())),
            mcp_servers: mcp_servers(get("TAMEBI_MCP_SERVERS").as_deref().unwrap_or(""))?,
            max_steps,
            otlp_endpoint: otlp_endpoint(get("OTEL_EXPORTER_OTLP_ENDPOINT"))?,
            trace_user_id: flag(get("TAMEBI_TRACE_USER_ID"), "TAMEBI_TRACE_USER_ID")?,
            log_filter: get("RUST_LOG").unwrap_or_else(|| DEFAULT_LOG_FILTER.into()),
            idle_timeout: secs(get("TAMEBI_IDLE_SECS"), "TAMEBI_IDLE_SECS", "300")?,
            tool_timeout: secs(get("TAMEBI_TOOL_TIMEOUT_SECS"), "TAMEBI_TOOL_TIMEOUT_SECS", "60")?,
            shutdown_timeout: secs(get("TAMEBI_SHUTDOWN_SECS"), "TAMEBI_SHUTDOWN_SECS", "10")?,
            max_concurrent_turns: parse_or(get("TAMEBI_MAX_TURNS"), "TAMEBI_MAX_TURNS", "20000")?,
            max_tool_output_chars: positive(get("TAMEBI_MAX_TOOL_OUTPUT_CHARS"), "TAMEBI_MAX_TOOL_OUTPUT_CHARS", "24000")?,
            fault_injection,
        })
    }
}

fn model_config(get: &impl Fn(&str) -> Option<String>) -> Result<ModelConfig, ConfigError> {
    let raw = get("TAMEBI_MODEL_URL").ok_or(ConfigError::Missing("TAMEBI_MODEL_URL"))?;
    let base_urls = raw.split(',').map(|u| model_url(u.trim())).collect::<Result<Vec<_>, _>>()?;
    Ok(ModelConfig {
        base_urls,
        endpoint_backoff: secs(get("TAMEBI_MODEL_BACKOFF_SECS"), "TAMEBI_MODEL_BACKOFF_SECS", "30")?,
        model: get("TAMEBI_MODEL").ok_or(ConfigError::Missing("TAMEBI_MODEL"))?,
        api_key: get("TAMEBI_MODEL_API_KEY").map(Secret::new),
        fallback_model: get("TAMEBI_FALLBACK_MODEL"),
        first_chunk_timeout: secs(get("TAMEBI_MODEL_FIRST_CHUNK_SECS"), "TAMEBI_MODEL_FIRST_CHUNK_SECS", "30")?,
        call_timeout: secs(get("TAMEBI_MODEL_CALL_SECS"), "TAMEBI_MODEL_CALL_SECS", "300")?,
        primary_text_tool_calls: auto_or_off(get("TAMEBI_TOOL_CALL_TEXT"), "TAMEBI_TOOL_CALL_TEXT")?,
        fallback_text_tool_calls: auto_or_off(get("TAMEBI_FALLBACK_TOOL_CALL_TEXT"), "TAMEBI_FALLBACK_TOOL_CALL_TEXT")?,
        max_tokens_per_call: get("TAMEBI_MODEL_MAX_TOKENS")
            .map(|v| positive(Some(v), "TAMEBI_MODEL_MAX_TOKENS", "1"))
            .transpose()?,
        max_tokens_per_turn: get("TAMEBI_TURN_MAX_TOKENS")
            .map(|v| positive(Some(v), "TAMEBI_TURN_MAX_TOKENS", "1"))
            .transpose()?,
    })
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
    Ok(Secret(value))
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

/// Parses `name=url,name=url`. Names become part of tool routing, so they are kept simple.
fn mcp_servers(raw: &str) -> Result<Vec<McpServer>, ConfigError> {
    let var = "TAMEBI_MCP_SERVERS";
    let mut servers: Vec<McpServer> = Vec::new();
    for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, url) = item.split_once('=').ok_or_else(|| ConfigError::Invalid {
            var,
            why: format!("`{item}` is not name=url"),
        })?;
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(ConfigError::Invalid {
                var,
                why: format!("server name `{name}` must be [A-Za-z0-9_-]+"),
            });
        }
        if servers.iter().any(|s| s.name == name) {
            return Err(ConfigError::Invalid {
                var,
                why: format!("server name `{name}` appears twice"),
            });
        }
        let url = url::Url::parse(url.trim()).map_err(|e| ConfigError::Invalid {
            var,
            why: format!("`{name}`: {e}"),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ConfigError::Invalid {
                var,
                why: format!("`{name}` must be an http(s) URL"),
            });
        }
        servers.push(McpServer {
            name: name.to_string(),
            url,
        });
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> HashMap<String, String> {
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

    fn with(k: &str, v: &str) -> Result<Config, ConfigError> {
        let mut vars = base();
        vars.insert(k.into(), v.into());
        Config::from_vars(&vars)
    }

    #[test]
    fn defaults_apply() {
        let c = Config::from_vars(&base()).unwrap();
        assert_eq!(c.bind.to_string(), "127.0.0.1:8700");
        assert_eq!(c.max_steps, 20);
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
    fn step_cap_is_enforced() {
        assert!(with("TAMEBI_MAX_STEPS", "50").is_ok());
        assert!(with("TAMEBI_MAX_STEPS", "51").is_err());
        assert!(with("TAMEBI_MAX_STEPS", "0").is_err());
        assert!(with("TAMEBI_MAX_STEPS", "many").is_err());
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
            "nextcloud=http://127.0.0.1:8711/mcp, mail=http://127.0.0.1:8712/mcp",
        )
        .unwrap();
        assert_eq!(c.mcp_servers.len(), 2);
        assert_eq!(c.mcp_servers[1].name, "mail");
        assert!(with("TAMEBI_MCP_SERVERS", "nextcloud").is_err());
        assert!(with("TAMEBI_MCP_SERVERS", "a b=http://x/").is_err());
        assert!(with("TAMEBI_MCP_SERVERS", "a=http://x/,a=http://y/").is_err());
        assert!(with("TAMEBI_MCP_SERVERS", "a=file:///etc").is_err());
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
        let c = Config::from_vars(&base()).unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains(&"p".repeat(32)));
        assert!(shown.contains("Secret(***)"));
    }
}
