//! Configuration: one typed struct, read from the environment once at startup. Nothing else
//! in the crate reads environment variables, and it never holds a credential: the caller's
//! bearer is the only one, and it comes with each request.
//!
//! mcp-mail reads what every MCP server of Tamebi reads ([`BaseConfig`]: `NC_URL`,
//! `MCP_BIND` defaulting to 127.0.0.1:8712, `MCP_PUBLIC_URL` = the JWT audience,
//! `MCP_ALLOWED_HOSTS`, `RUST_LOG`, `OTEL_EXPORTER_OTLP_ENDPOINT`) and its own
//! `MAIL_BRIDGE_TIMEOUT_SECS` (1–600, default 45): how long one call to the mail bridge may take.
//! Below the orchestrator's default tool timeout (60 s) on purpose: a slow send should end here,
//! as `outcome_unknown` with its Sent-folder advice, not as the orchestrator's bare timeout.

use std::time::Duration;

use mcp_resource_server::{BaseConfig, ServerConfig};

use crate::error::Error;

/// Default listen address.
pub const DEFAULT_BIND: &str = "127.0.0.1:8712";
/// Default upper bound of one bridge call; IMAP searches on big mailboxes can be slow.
pub const DEFAULT_BRIDGE_TIMEOUT: Duration = Duration::from_secs(45);
const TIMEOUT_VAR: &str = "MAIL_BRIDGE_TIMEOUT_SECS";

/// Everything the server needs to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub base: BaseConfig,
    /// How long one call to the mail bridge may take. A send that runs past it has an unknown
    /// outcome (it is reported so, never as retryable).
    pub bridge_timeout: Duration,
}

impl AsRef<BaseConfig> for Config {
    fn as_ref(&self) -> &BaseConfig {
        &self.base
    }
}

impl ServerConfig for Config {
    type Error = Error;

    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let bridge_timeout = match lookup(TIMEOUT_VAR) {
            None => DEFAULT_BRIDGE_TIMEOUT,
            Some(raw) => match raw.trim().parse::<u64>() {
                Ok(secs @ 1..=600) => Duration::from_secs(secs),
                _ => {
                    return Err(Error::Config(format!(
                        "{TIMEOUT_VAR} must be a number of seconds from 1 to 600, not {raw:?}"
                    )));
                }
            },
        };
        Ok(Config {
            base: BaseConfig::from_lookup(&lookup, DEFAULT_BIND)?,
            bridge_timeout,
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
        assert_eq!(c.bridge_timeout, DEFAULT_BRIDGE_TIMEOUT);
        let e = Config::from_lookup(|_| None).unwrap_err().to_string();
        assert!(e.contains("NC_URL"), "{e}");
    }

    #[test]
    fn bridge_timeout_is_checked() {
        let with = |v: &'static str| {
            Config::from_lookup(move |k| match k {
                "NC_URL" => Some("http://127.0.0.1:9000".into()),
                TIMEOUT_VAR => Some(v.into()),
                _ => None,
            })
        };
        assert_eq!(with("5").unwrap().bridge_timeout, Duration::from_secs(5));
        for bad in ["0", "601", "soon", ""] {
            assert!(with(bad).unwrap_err().to_string().contains(TIMEOUT_VAR), "{bad}");
        }
    }
}
