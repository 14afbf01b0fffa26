//! The island's dev host and the Node scripts that drive it, as test fixtures.
//!
//! Owns: starting `island/dev-host` (the Node stand-in for the Nextcloud app) in front of a
//! running orchestrator, finding the tools browser tests need (`node`, Debian's Chromium, the
//! built bundle, installed `node_modules`), and running a Node script that prints one JSON
//! document on stdout.
//!
//! Must never: skip. A missing browser, bundle or package is a broken environment, and the
//! test fails saying which install step provides it (CI installs them all).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::orchestrator::{PROXY_SECRET, SIGNING_SECRET};
use crate::{Process, free_port, wait_until, workspace_root};

/// Where Debian's `chromium` package puts the browser (`scripts/install.d/40-island.sh`).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// A running dev host, killed on drop.
pub struct DevHost {
    process: Process,
    url: String,
}

impl DevHost {
    /// Starts the dev host for `orchestrator_url`, signing in `users` (uid, app password) and
    /// pointing app links at `nc_url`. Panics if the island bundle has not been built.
    pub fn start(orchestrator_url: &str, nc_url: &str, users: &[(&str, &str)]) -> DevHost {
        Self::start_with_servers(orchestrator_url, nc_url, users, &["nextcloud"])
    }

    /// Like [`DevHost::start`], sending each user's app password as the token of every
    /// server in `credential_servers` (`DEV_CREDENTIAL_SERVERS`), e.g. `["nextcloud", "mail"]`.
    pub fn start_with_servers(orchestrator_url: &str, nc_url: &str, users: &[(&str, &str)], credential_servers: &[&str]) -> DevHost {
        Self::start_with_env(orchestrator_url, nc_url, users, credential_servers, &[])
    }

    /// Like [`DevHost::start_with_servers`], with more of the dev host's environment, e.g.
    /// `DEV_ADMINS` and `DEV_GROUPS` (issue #30: the admin settings page and shared assistants).
    pub fn start_with_env(
        orchestrator_url: &str,
        nc_url: &str,
        users: &[(&str, &str)],
        credential_servers: &[&str],
        extra_env: &[(&str, &str)],
    ) -> DevHost {
        let island = island_dir();
        for file in ["tamebi-island.js", "tamebi-island.css", "tamebi-admin.js", "tamebi-admin.css"] {
            assert!(
                island.join("dist").join(file).is_file(),
                "island/dist/{file} is missing: run scripts/install.d/40-island.sh (npm ci && npm run build in island/)"
            );
        }
        let port = free_port();
        let users = users.iter().map(|(u, p)| format!("{u}:{p}")).collect::<Vec<_>>().join(",");
        let mut cmd = Command::new(node());
        cmd.current_dir(&island)
            .arg(island.join("dev-host/main.mjs"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ORCHESTRATOR_URL", orchestrator_url)
            .env("TAMEBI_PROXY_SECRET", PROXY_SECRET)
            .env("TAMEBI_SIGNING_SECRET", SIGNING_SECRET)
            .env("DEV_USERS", users)
            .env("NC_URL", nc_url)
            .env("DEV_CREDENTIAL_SERVERS", credential_servers.join(","))
            .env("DEV_HOST_BIND", format!("127.0.0.1:{port}"))
            .envs(extra_env.iter().copied());
        let mut process = Process::spawn("island-dev-host", cmd);
        let url = format!("http://127.0.0.1:{port}");
        process.wait_http(&format!("{url}/healthz"), Duration::from_secs(30));
        DevHost { process, url }
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The underlying process (logs, terminate).
    pub fn process(&mut self) -> &mut Process {
        &mut self.process
    }
}

/// `<repo>/island`.
pub fn island_dir() -> PathBuf {
    workspace_root().join("island")
}

/// The `node` binary on PATH; panics with the install step if there is none.
pub fn node() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("node is not installed: run scripts/install.d/40-island.sh"))
}

/// Panics unless `dir/node_modules/<package>` exists, naming the install step.
pub fn require_node_modules(dir: &Path, package: &str, install_step: &str) {
    assert!(
        dir.join("node_modules").join(package).join("package.json").is_file(),
        "{}/node_modules/{package} is missing: run {install_step}",
        dir.display()
    );
}

/// Panics unless Debian's Chromium is installed (browser tests fail, never skip, without it).
pub fn require_chromium() {
    assert!(
        Path::new(CHROMIUM).is_file(),
        "{CHROMIUM} is missing: run scripts/install.d/40-island.sh (apt_install chromium)"
    );
}

/// Runs `node <script> <args…>` in `dir` with `env`, within `timeout`, and parses the last
/// non-empty line of its stdout as JSON. Panics with the script's stdout and stderr when it
/// fails, times out, or prints no JSON. (stderr is the script's progress log.)
pub fn run_node_json(dir: &Path, script: &str, args: &[&str], env: &[(&str, String)], timeout: Duration) -> serde_json::Value {
    let logs = tempfile::Builder::new().prefix("tamebi-test-node-").tempdir().expect("log dir");
    let out_path = logs.path().join("stdout.log");
    let err_path = logs.path().join("stderr.log");
    let mut cmd = Command::new(node());
    cmd.current_dir(dir)
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::fs::File::create(&out_path).expect("stdout log")))
        .stderr(Stdio::from(std::fs::File::create(&err_path).expect("stderr log")));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn node {script}: {e}"));
    let mut status = None;
    wait_until(timeout, || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let report = format!("--- node {script} stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    match status {
        None => panic!("node {script} did not finish within {timeout:?}\n{report}"),
        Some(s) if !s.success() => panic!("node {script} exited with {s}\n{report}"),
        Some(_) => {}
    }
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("node {script} printed no JSON ({e})\n{report}"))
}

/// One named check of a browser-tests report (`{"checks": {name: {...}}, "console": [...]}`):
/// fails the test when it did not run or recorded an error, with the browser console.
pub fn check<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    let c = &report["checks"][name];
    assert!(c.is_object(), "check {name} did not run: {report:#}");
    assert!(
        c.get("error").is_none(),
        "check {name} failed in the browser: {}\nconsole: {:#}",
        c["error"],
        report["console"]
    );
    c
}

/// Asserts that axe-core found nothing in one document (`violations` as the browser scripts
/// report them: id, impact, help, nodes), of any impact; prints them all if it did.
pub fn assert_no_axe_violations(violations: &serde_json::Value, document: &str) {
    assert!(violations.is_array(), "axe did not run in {document}: {violations}");
    assert_eq!(
        violations.as_array().map_or(0, Vec::len),
        0,
        "axe violations in {document}:\n{violations:#}"
    );
}

/// The colours a browser script reports for a theme probe (`colours()` in browser-tests/lib.mjs):
/// the frame's background, and its theme and the page's background and text, as computed.
pub fn assert_frame_matches_page(probe: &serde_json::Value, theme: &str, background: &str) {
    assert_eq!(probe["frame"]["theme"], theme, "{probe}");
    assert_eq!(probe["page"]["background"], background, "{probe}");
    assert_eq!(
        probe["frame"]["background"], background,
        "the frame is not drawn like the page: {probe}"
    );
}

/// Asserts that a browser report's `src` is the frame route `route` (`…/frame?server=…&uri=…`)
/// followed by the conversation the frame is shown in (the document is served only for that
/// conversation's assistant).
pub fn assert_frame_src(report: &serde_json::Value, route: &str) {
    let src = report["src"].as_str().unwrap_or_default();
    let conversation = src.strip_prefix(route).and_then(|rest| rest.strip_prefix("&conversation="));
    assert!(
        conversation.is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')),
        "{report}"
    );
}
