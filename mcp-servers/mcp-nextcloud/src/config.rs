//! Configuration: one typed struct, read from the environment once at startup and validated
//! with messages an operator can act on. Nothing else in the crate reads environment
//! variables. It must never hold a Nextcloud credential: there is none to configure.
//!
//! The settings every MCP server shares (`NC_URL`, `MCP_BIND`, `MCP_PUBLIC_URL`,
//! `MCP_ALLOWED_HOSTS`, `RUST_LOG`, `OTEL_EXPORTER_OTLP_ENDPOINT`) are
//! [`mcp_resource_server::BaseConfig`]; this adds the document index's two and the document
//! server's (`MCP_DOCSERVER_URL`, `MCP_DOCSERVER_JWT_SECRET`, `MCP_LOAN_BIND`,
//! `MCP_LOAN_BASE_URL`, `MCP_LOAN_TTL_SECS`), and how long one request to Nextcloud may take
//! (`MCP_NEXTCLOUD_TIMEOUT_SECS`). The document server's JWT secret is the server's own, never
//! a Nextcloud credential.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use mcp_resource_server::config::var;
use mcp_resource_server::{BaseConfig, ServerConfig};

use url::Url;

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
    /// The document server behind files_convert; `None` (no `MCP_DOCSERVER_URL`) means the
    /// tool is not offered at all.
    pub docserver: Option<DocServerConfig>,
    /// The longest one request to Nextcloud may take, answer body included
    /// (`MCP_NEXTCLOUD_TIMEOUT_SECS`, 1 to 600; default 60). A stalled Nextcloud ends the call
    /// as a `retryable` (or, for a write, `conflict`) tool error after this long.
    pub nextcloud_timeout: Duration,
}

/// Default of `MCP_NEXTCLOUD_TIMEOUT_SECS`.
pub const DEFAULT_NEXTCLOUD_TIMEOUT: Duration = Duration::from_secs(60);

/// Default listen address of the loan listener.
pub const DEFAULT_LOAN_BIND: &str = "127.0.0.1:8715";
/// The longest a lent file is lendable; `MCP_LOAN_TTL_SECS` may only shorten it.
pub const MAX_LOAN_TTL: Duration = Duration::from_secs(60);

/// The OnlyOffice Document Server (ConvertService) and the loan listener it fetches from.
#[derive(Clone)]
pub struct DocServerConfig {
    /// Its base URL (`MCP_DOCSERVER_URL`); requests go to `<url>/converter`.
    pub url: Url,
    /// The server's JWT secret (`MCP_DOCSERVER_JWT_SECRET`): signs every request (HS256).
    pub jwt_secret: String,
    /// Where the loan listener binds (`MCP_LOAN_BIND`); reachable by the document server only.
    pub loan_bind: SocketAddr,
    /// The loan listener's URL as the document server reaches it (`MCP_LOAN_BASE_URL`).
    pub loan_base_url: Url,
    /// How long a loan may wait for its one fetch (`MCP_LOAN_TTL_SECS`, 1 to 60; default 60).
    pub loan_ttl: Duration,
}

impl std::fmt::Debug for DocServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocServerConfig")
            .field("url", &self.url.as_str())
            .field("jwt_secret", &"<redacted>")
            .field("loan_bind", &self.loan_bind)
            .field("loan_base_url", &self.loan_base_url.as_str())
            .field("loan_ttl", &self.loan_ttl)
            .finish()
    }
}

impl DocServerConfig {
    fn from_lookup(lookup: &impl Fn(&str) -> Option<String>) -> Result<Option<Self>, Error> {
        let Some(raw) = var(lookup, "MCP_DOCSERVER_URL") else {
            return Ok(None);
        };
        let url = http_url(&raw, "MCP_DOCSERVER_URL")?;
        let jwt_secret = var(lookup, "MCP_DOCSERVER_JWT_SECRET")
            .ok_or_else(|| Error::Config("MCP_DOCSERVER_JWT_SECRET is required with MCP_DOCSERVER_URL (the document server's JWT secret; OnlyOffice refuses unsigned requests)".into()))?;
        if jwt_secret.len() < 16 {
            return Err(Error::Config(
                "MCP_DOCSERVER_JWT_SECRET is too short: use at least 16 characters (32 random bytes are best)".into(),
            ));
        }
        let bind_raw = var(lookup, "MCP_LOAN_BIND").unwrap_or_else(|| DEFAULT_LOAN_BIND.into());
        let loan_bind: SocketAddr = bind_raw
            .parse()
            .map_err(|_| Error::Config(format!("MCP_LOAN_BIND={bind_raw:?} is not an address like 127.0.0.1:8715")))?;
        let loan_base_url = match var(lookup, "MCP_LOAN_BASE_URL") {
            Some(raw) => http_url(&raw, "MCP_LOAN_BASE_URL")?,
            None => http_url(&format!("http://{loan_bind}"), "MCP_LOAN_BIND")?,
        };
        let loan_ttl = match var(lookup, "MCP_LOAN_TTL_SECS") {
            None => MAX_LOAN_TTL,
            Some(raw) => match raw.parse::<u64>() {
                Ok(n) if (1..=MAX_LOAN_TTL.as_secs()).contains(&n) => Duration::from_secs(n),
                _ => {
                    return Err(Error::Config(format!(
                        "MCP_LOAN_TTL_SECS={raw:?} must be a whole number of seconds from 1 to {}",
                        MAX_LOAN_TTL.as_secs()
                    )));
                }
            },
        };
        Ok(Some(DocServerConfig {
            url,
            jwt_secret,
            loan_bind,
            loan_base_url,
            loan_ttl,
        }))
    }
}

/// An http(s) URL with a host, normalised to end with `/` so paths join under it.
fn http_url(raw: &str, name: &str) -> Result<Url, Error> {
    let mut url = Url::parse(raw).map_err(|e| Error::Config(format!("{name}={raw:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(Error::Config(format!("{name}={raw:?} must be an http(s) URL with a host")));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(Error::Config(format!("{name}={raw:?} must not have a query or fragment")));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
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
        let docserver = DocServerConfig::from_lookup(&lookup)?;
        let nextcloud_timeout = nextcloud_timeout(&lookup)?;
        Ok(Config {
            base,
            index_path,
            webhook_secret,
            docserver,
            nextcloud_timeout,
        })
    }
}

fn nextcloud_timeout(lookup: &impl Fn(&str) -> Option<String>) -> Result<Duration, Error> {
    let Some(raw) = var(lookup, "MCP_NEXTCLOUD_TIMEOUT_SECS") else {
        return Ok(DEFAULT_NEXTCLOUD_TIMEOUT);
    };
    match raw.parse::<u64>() {
        Ok(n) if (1..=600).contains(&n) => Ok(Duration::from_secs(n)),
        _ => Err(Error::Config(format!(
            "MCP_NEXTCLOUD_TIMEOUT_SECS={raw:?} must be a whole number of seconds from 1 to 600"
        ))),
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
        assert!(c.docserver.is_none(), "no document server: files_convert is not offered");
        assert_eq!(c.nextcloud_timeout, DEFAULT_NEXTCLOUD_TIMEOUT);
    }

    #[test]
    fn the_nextcloud_timeout() {
        let nc = ("NC_URL", "http://x");
        let c = load(&[nc, ("MCP_NEXTCLOUD_TIMEOUT_SECS", "3")]).unwrap();
        assert_eq!(c.nextcloud_timeout, Duration::from_secs(3));
        for bad in ["0", "601", "1.5", "soon"] {
            let e = load(&[nc, ("MCP_NEXTCLOUD_TIMEOUT_SECS", bad)]).unwrap_err().to_string();
            assert!(e.contains("MCP_NEXTCLOUD_TIMEOUT_SECS"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_document_server_and_its_loan_listener() {
        let nc = ("NC_URL", "http://x");
        let e = load(&[nc, ("MCP_DOCSERVER_URL", "http://ds:8080")]).unwrap_err().to_string();
        assert!(e.contains("MCP_DOCSERVER_JWT_SECRET is required"), "{e}");
        let secret = ("MCP_DOCSERVER_JWT_SECRET", "0123456789abcdef0123");
        let c = load(&[nc, ("MCP_DOCSERVER_URL", "http://ds:8080"), secret]).unwrap();
        let d = c.docserver.expect("configured");
        assert_eq!(d.url.as_str(), "http://ds:8080/");
        assert_eq!(d.loan_bind.to_string(), DEFAULT_LOAN_BIND);
        assert_eq!(d.loan_base_url.as_str(), "http://127.0.0.1:8715/");
        assert_eq!(d.loan_ttl, MAX_LOAN_TTL);
        assert!(!format!("{d:?}").contains("0123456789abcdef"), "the secret never shows in logs");
        let c = load(&[
            nc,
            ("MCP_DOCSERVER_URL", "http://ds/sub"),
            secret,
            ("MCP_LOAN_BIND", "0.0.0.0:9000"),
            ("MCP_LOAN_BASE_URL", "http://mcp-nextcloud:9000"),
            ("MCP_LOAN_TTL_SECS", "2"),
        ])
        .unwrap();
        let d = c.docserver.unwrap();
        assert_eq!(
            (d.url.as_str(), d.loan_base_url.as_str()),
            ("http://ds/sub/", "http://mcp-nextcloud:9000/")
        );
        assert_eq!(d.loan_ttl, Duration::from_secs(2));
        for (k, v) in [
            ("MCP_LOAN_TTL_SECS", "61"),
            ("MCP_LOAN_TTL_SECS", "0"),
            ("MCP_LOAN_BIND", "nope"),
            ("MCP_LOAN_BASE_URL", "ftp://x"),
        ] {
            let e = load(&[nc, ("MCP_DOCSERVER_URL", "http://ds"), secret, (k, v)])
                .unwrap_err()
                .to_string();
            assert!(e.contains(k), "{k}={v}: {e}");
        }
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
