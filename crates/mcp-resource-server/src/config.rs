//! The settings every MCP resource server has, read through a lookup (the environment in
//! production, a map in tests) and validated with messages an operator can act on.
//!
//! A server's own `Config` embeds [`BaseConfig`] and adds its own variables, read with
//! [`var`] and [`parse_http_url`] so every server trims, defaults and complains alike. It
//! must never hold an upstream credential: there is none to configure.

use std::net::SocketAddr;

use url::Url;

use crate::error::Error;

/// What every server reads: `NC_URL`, `MCP_BIND`, `MCP_PUBLIC_URL`, `MCP_ALLOWED_HOSTS`,
/// `RUST_LOG` and `OTEL_EXPORTER_OTLP_ENDPOINT`.
#[derive(Clone, Debug)]
pub struct BaseConfig {
    /// Nextcloud base URL (`NC_URL`), e.g. `https://cloud.example.com` or `…/nextcloud`;
    /// also the authorization server named in the RFC 9728 document.
    pub nc_url: Url,
    /// Listen address (`MCP_BIND`); the MCP endpoint is at `/mcp`.
    pub bind: SocketAddr,
    /// Canonical URI of the MCP endpoint (`MCP_PUBLIC_URL`, default `http://<bind>/mcp`):
    /// the audience a JWT must name.
    pub public_url: Url,
    /// Extra `Host` values accepted besides loopback (`MCP_ALLOWED_HOSTS`, comma separated).
    pub allowed_hosts: Vec<String>,
    /// Log filter (`RUST_LOG`), default `info`.
    pub log_filter: String,
    /// Base URL of an OTLP/HTTP receiver (`OTEL_EXPORTER_OTLP_ENDPOINT`): spans and metrics
    /// are exported there; none, nothing is.
    pub otlp_endpoint: Option<Url>,
}

/// A server's whole configuration: its own settings on top of [`BaseConfig`], read through a
/// lookup. The process environment is read here and nowhere else, by [`ServerConfig::from_env`].
pub trait ServerConfig: AsRef<BaseConfig> + Sized {
    /// The server's own error type (one per crate).
    type Error;

    /// Reads the configuration through `lookup` (the environment in production, a map in tests).
    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Self::Error>;

    /// Reads the process environment.
    fn from_env() -> Result<Self, Self::Error> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }
}

/// `name`'s value through `lookup`, trimmed; empty counts as unset.
pub fn var(lookup: &impl Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

impl BaseConfig {
    /// Reads the shared settings; `default_bind` is the server's own port (e.g. `127.0.0.1:8711`).
    pub fn from_lookup(lookup: &impl Fn(&str) -> Option<String>, default_bind: &str) -> Result<Self, Error> {
        let get = |name: &str| var(lookup, name);

        let nc_raw = get("NC_URL").ok_or_else(|| bad("NC_URL is required (the Nextcloud base URL, e.g. https://cloud.example.com)"))?;
        let nc_url = parse_http_url("NC_URL", &nc_raw)?;

        let bind_raw = get("MCP_BIND").unwrap_or_else(|| default_bind.to_string());
        let bind: SocketAddr = bind_raw
            .parse()
            .map_err(|_| bad(format!("MCP_BIND must be an address like {default_bind}, got {bind_raw:?}")))?;

        let public_url = match get("MCP_PUBLIC_URL") {
            Some(raw) => parse_http_url("MCP_PUBLIC_URL", &raw)?,
            None => parse_http_url("MCP_BIND", &format!("http://{bind}/mcp"))?,
        };
        if public_url.query().is_some() || public_url.fragment().is_some() {
            return Err(bad("MCP_PUBLIC_URL must not carry a query or fragment"));
        }

        let allowed_hosts = get("MCP_ALLOWED_HOSTS")
            .map(|raw| {
                raw.split(',')
                    .map(str::trim)
                    .filter(|h| !h.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        if let Some(h) = allowed_hosts.iter().find(|h| h.contains('/') || h.contains(char::is_whitespace)) {
            return Err(bad(format!("MCP_ALLOWED_HOSTS takes host or host:port values, got {h:?}")));
        }

        let log_filter = get("RUST_LOG").unwrap_or_else(|| "info".to_string());
        let otlp_endpoint = get("OTEL_EXPORTER_OTLP_ENDPOINT")
            .map(|raw| parse_http_url("OTEL_EXPORTER_OTLP_ENDPOINT", &raw))
            .transpose()?;

        Ok(BaseConfig {
            nc_url,
            bind,
            public_url,
            allowed_hosts,
            log_filter,
            otlp_endpoint,
        })
    }

    /// `scheme://host[:port]` of the public URL: where the well-known document is served.
    pub fn public_origin(&self) -> String {
        self.public_url.origin().ascii_serialization()
    }

    /// The canonical resource URI (the public URL as a string, without a trailing slash).
    pub fn resource(&self) -> String {
        let s = self.public_url.as_str();
        s.strip_suffix('/').unwrap_or(s).to_string()
    }

    /// Host values rmcp accepts: loopback, the public URL's host, and `MCP_ALLOWED_HOSTS`.
    pub fn host_allowlist(&self) -> Vec<String> {
        let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        if let Some(h) = self.public_url.host_str() {
            hosts.push(h.to_string());
        }
        hosts.extend(self.allowed_hosts.iter().cloned());
        hosts.sort();
        hosts.dedup();
        hosts
    }
}

fn bad(message: impl Into<String>) -> Error {
    Error::Config(message.into())
}

/// An http(s) URL with a host and no user name or password, or an error naming `name`.
pub fn parse_http_url(name: &str, raw: &str) -> Result<Url, Error> {
    let url = Url::parse(raw).map_err(|e| bad(format!("{name} is not a valid URL ({e}): {raw:?}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(bad(format!("{name} must be an http(s) URL with a host, got {raw:?}")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        // No credential belongs in configuration: the caller's bearer is the only one.
        return Err(bad(format!("{name} must not contain a user name or password")));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const DEFAULT: &str = "127.0.0.1:8711";

    fn load(vars: &[(&str, &str)]) -> Result<BaseConfig, Error> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        BaseConfig::from_lookup(&|k| map.get(k).cloned(), DEFAULT)
    }

    #[test]
    fn defaults_follow_the_bind_address() {
        let c = load(&[("NC_URL", "http://127.0.0.1:9000")]).unwrap();
        assert_eq!(c.bind.to_string(), DEFAULT);
        assert_eq!(c.resource(), "http://127.0.0.1:8711/mcp");
        assert_eq!(c.public_origin(), "http://127.0.0.1:8711");
        let c = BaseConfig::from_lookup(&|k| (k == "NC_URL").then(|| "http://x".to_string()), "127.0.0.1:8712").unwrap();
        assert_eq!(c.resource(), "http://127.0.0.1:8712/mcp");
    }

    #[test]
    fn missing_or_bad_values_are_clear_errors() {
        let e = load(&[]).unwrap_err().to_string();
        assert!(e.contains("NC_URL is required"), "{e}");
        let e = load(&[("NC_URL", "ftp://x")]).unwrap_err().to_string();
        assert!(e.contains("http(s)"), "{e}");
        let e = load(&[("NC_URL", "http://a:b@x")]).unwrap_err().to_string();
        assert!(e.contains("user name or password"), "{e}");
        let e = load(&[("NC_URL", "http://x"), ("MCP_BIND", "nope")]).unwrap_err().to_string();
        assert!(e.contains("MCP_BIND"), "{e}");
        let e = load(&[("NC_URL", "http://x"), ("MCP_PUBLIC_URL", "http://x/mcp?a=1")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("query or fragment"), "{e}");
        let e = load(&[("NC_URL", "http://x"), ("MCP_ALLOWED_HOSTS", "a/b")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("MCP_ALLOWED_HOSTS"), "{e}");
    }

    #[test]
    fn otlp_endpoint_is_optional_and_checked() {
        assert_eq!(load(&[("NC_URL", "http://x")]).unwrap().otlp_endpoint, None);
        let c = load(&[("NC_URL", "http://x"), ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")]).unwrap();
        assert_eq!(c.otlp_endpoint.map(String::from).as_deref(), Some("http://127.0.0.1:4318/"));
        let e = load(&[("NC_URL", "http://x"), ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{e}");
    }

    #[test]
    fn public_url_and_hosts() {
        let c = load(&[
            ("NC_URL", "https://cloud.example.com"),
            ("MCP_PUBLIC_URL", "https://mcp.example.com/mcp"),
            ("MCP_ALLOWED_HOSTS", "proxy.internal, other:8443"),
        ])
        .unwrap();
        assert_eq!(c.public_origin(), "https://mcp.example.com");
        let hosts = c.host_allowlist();
        for h in ["127.0.0.1", "mcp.example.com", "proxy.internal", "other:8443"] {
            assert!(hosts.contains(&h.to_string()), "{h} missing from {hosts:?}");
        }
    }
}
