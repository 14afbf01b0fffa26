//! The OnlyOffice Document Server stand-in (`dev/docserver-standin`) as a test fixture.
//!
//! Starts the real stand-in (ConvertService's wire format, JWT verification, LibreOffice
//! underneath) on a free loopback port with a random JWT secret and a fresh state directory,
//! and waits until it answers `/healthcheck`. [`DocServer::audit`] reads what callers sent it
//! (which `Authorization` headers arrived, which URLs it was asked to fetch), so a test can
//! show that it never received a user's credential or a Nextcloud URL.

use std::process::Command;
use std::time::Duration;

use crate::{Process, free_port, workspace_root};

/// A running document server stand-in, killed on drop (before its state directory).
pub struct DocServer {
    process: Process,
    _state: tempfile::TempDir,
    url: String,
    secret: String,
}

impl DocServer {
    /// Starts it; `nextcloud_url` is recorded whenever a request names a URL under it.
    pub fn start(nextcloud_url: &str) -> DocServer {
        let dir = workspace_root().join("dev/docserver-standin");
        assert!(
            dir.join(".venv/bin/python").exists(),
            "the document server stand-in's venv is missing: run scripts/install.d/57-docserver-standin.sh"
        );
        let state = tempfile::Builder::new().prefix("tamebi-docserver-").tempdir().expect("state dir");
        let secret = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let mut cmd = Command::new(dir.join("run"));
        cmd.arg("--bind")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--secret")
            .arg(&secret)
            .arg("--state")
            .arg(state.path())
            .arg("--nextcloud-url")
            .arg(nextcloud_url);
        let mut process = Process::spawn("docserver-standin", cmd);
        process.wait_http(&format!("{url}/healthcheck"), Duration::from_secs(30));
        DocServer {
            process,
            _state: state,
            url,
            secret,
        }
    }

    /// Base URL, e.g. `http://127.0.0.1:40123` (no trailing slash).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Its JWT secret (what `MCP_DOCSERVER_JWT_SECRET` must be).
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// What callers sent: `{requests, authorization: ["own-jwt"|"foreign"], urls,
    /// nextcloud_urls, downloads: [{url, bytes}]}`.
    pub fn audit(&self) -> serde_json::Value {
        crate::process::control_call(&self.process, reqwest::Method::GET, &format!("{}/standin/audit", self.url), None)
    }

    /// The underlying process (logs).
    pub fn process(&mut self) -> &mut Process {
        &mut self.process
    }
}
