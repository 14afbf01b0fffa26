//! Configuration: one typed struct, read from the environment once at startup. Nothing else
//! in the crate reads environment variables. It never holds a credential.

use std::net::SocketAddr;

use url::Url;

use crate::error::Error;

/// Default listen address.
pub const DEFAULT_BIND: &str = "127.0.0.1:8712";

#[derive(Clone, Debug)]
pub struct Config {
    pub nc_url: Url,
    pub bind: SocketAddr,
    pub public_url: Url,
    pub log_filter: String,
    pub otlp_endpoint: Option<Url>,
}

impl Config {
    pub fn from_env() -> Result<Self, Error> {
        let get = |n: &str| std::env::var(n).ok().filter(|v| !v.trim().is_empty());
        let url = |n: &str, raw: String| Url::parse(&raw).map_err(|e| Error::Config(format!("{n}: {e}")));
        let nc_url = url("NC_URL", get("NC_URL").ok_or_else(|| Error::Config("NC_URL is required".into()))?)?;
        let bind_raw = get("MCP_BIND").unwrap_or_else(|| DEFAULT_BIND.into());
        let bind: SocketAddr = bind_raw
            .parse()
            .map_err(|_| Error::Config(format!("MCP_BIND: bad address {bind_raw:?}")))?;
        let public_url = url(
            "MCP_PUBLIC_URL",
            get("MCP_PUBLIC_URL").unwrap_or_else(|| format!("http://{bind}/mcp")),
        )?;
        Ok(Config {
            nc_url,
            bind,
            public_url,
            log_filter: get("RUST_LOG").unwrap_or_else(|| "info".into()),
            otlp_endpoint: get("OTEL_EXPORTER_OTLP_ENDPOINT")
                .map(|r| url("OTEL_EXPORTER_OTLP_ENDPOINT", r))
                .transpose()?,
        })
    }

    pub fn host_allowlist(&self) -> Vec<String> {
        let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        hosts.extend(self.public_url.host_str().map(str::to_string));
        hosts
    }
}
