//! Configuration: one typed struct, read from the environment once at startup and validated
//! with messages an operator can act on. Nothing else in the crate reads environment
//! variables. It must never hold a Nextcloud credential: there is none to configure.
//!
//! The settings every MCP server shares (`NC_URL`, `MCP_BIND`, `MCP_PUBLIC_URL`,
//! `MCP_ALLOWED_HOSTS`, `RUST_LOG`, `OTEL_EXPORTER_OTLP_ENDPOINT`) are
//! [`mcp_resource_server::BaseConfig`]; this adds the document index's two.

use std::path::PathBuf;

use mcp_resource_server::config::var;
use mcp_resource_server::{BaseConfig, ServerConfig};

use crate::error::Error;

/// Default listen address.
pub const DEFAULT_BIND: &str = "127.0.0.1:8711";

/// Everything the server needs to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// What every MCP server reads (Nextcloud URL, bind address, public URL, hosts, logs).
    pub base: BaseConfig,
    /// Path of the document index (`MCP_INDEX_PATH`), used by `files_grep`.
    pub index_path: PathBuf,
    /// Shared secret of the Nextcloud webhook (`MCP_WEBHOOK_SECRET`), used by the index.
    pub webhook_secret: Option<String>,
}

impl AsRef<BaseConfig> for Config {
    fn as_ref(&self) -> &BaseConfig {
        &self.base
    }
}

impl ServerConfig for Config {
    type Error = Error;

    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let base = BaseConfig::from_lookup(&lookup, DEFAULT_BIND)?;
        let index_path = var(&lookup, "MCP_INDEX_PATH").map_or_else(|| PathBuf::from("./data/index.db"), PathBuf::from);
        let webhook_secret = var(&lookup, "MCP_WEBHOOK_SECRET");
        Ok(Config {
            base,
            index_path,
            webhook_secret,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(vars: &[(&str, &str)]) -> Result<Config, Error> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let c = load(&[("NC_URL", "http://127.0.0.1:9000")]).unwrap();
        assert_eq!(c.base.bind.to_string(), DEFAULT_BIND);
        assert_eq!(c.base.resource(), "http://127.0.0.1:8711/mcp");
        assert_eq!(c.index_path, PathBuf::from("./data/index.db"));
        assert_eq!(c.webhook_secret, None);
    }

    #[test]
    fn shared_settings_are_checked() {
        let e = load(&[]).unwrap_err().to_string();
        assert!(e.contains("NC_URL is required"), "{e}");
        let c = load(&[
            ("NC_URL", "http://x"),
            ("MCP_INDEX_PATH", " /tmp/i.db "),
            ("MCP_WEBHOOK_SECRET", "s"),
        ])
        .unwrap();
        assert_eq!(c.index_path, PathBuf::from("/tmp/i.db"));
        assert_eq!(c.webhook_secret.as_deref(), Some("s"));
    }
}
