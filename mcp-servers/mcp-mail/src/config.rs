//! Configuration: one typed struct, read from the environment once at startup. Nothing else
//! in the crate reads environment variables, and it never holds a credential: the caller's
//! bearer is the only one, and it comes with each request.
//!
//! mcp-mail needs only what every MCP server of Tamebi reads ([`BaseConfig`]: `NC_URL`,
//! `MCP_BIND` defaulting to 127.0.0.1:8712, `MCP_PUBLIC_URL` = the JWT audience,
//! `MCP_ALLOWED_HOSTS`, `RUST_LOG`, `OTEL_EXPORTER_OTLP_ENDPOINT`).

use mcp_resource_server::BaseConfig;

use crate::error::Error;

/// Default listen address.
pub const DEFAULT_BIND: &str = "127.0.0.1:8712";

/// Everything the server needs to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub base: BaseConfig,
}

impl AsRef<BaseConfig> for Config {
    fn as_ref(&self) -> &BaseConfig {
        &self.base
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads configuration through `lookup` (the environment in production, a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        Ok(Config {
            base: BaseConfig::from_lookup(&lookup, DEFAULT_BIND)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_to_its_own_port_and_audience() {
        let c = Config::from_lookup(|k| (k == "NC_URL").then(|| "http://127.0.0.1:9000".to_string())).unwrap();
        assert_eq!(c.base.bind.to_string(), DEFAULT_BIND);
        assert_eq!(c.base.resource(), "http://127.0.0.1:8712/mcp");
        let e = Config::from_lookup(|_| None).unwrap_err().to_string();
        assert!(e.contains("NC_URL"), "{e}");
    }
}
