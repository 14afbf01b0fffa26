//! Child processes for tests: spawn on a free port, wait until ready, kill on drop.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The workspace root (the directory holding the top-level Cargo.toml).
pub fn workspace_root() -> PathBuf {
    // This crate lives at <root>/dev/test-harness.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("workspace root")
        .to_path_buf()
}

/// A TCP port free on 127.0.0.1 at the time of the call.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind port 0");
    l.local_addr().expect("local addr").port()
}

/// Raises this process's open-file limit to its hard limit and returns the new soft limit.
/// Children started afterwards inherit it, so a test holding many connections (and the
/// orchestrator it starts, which holds two per stream) does not run out of descriptors on a
/// machine whose default soft limit is 1,024.
pub fn raise_nofile_limit() -> u64 {
    rlimit::increase_nofile_limit(u64::MAX).expect("raising the open-file limit")
}

/// Polls `check` every 20 ms until it returns true or `timeout` passes. No fixed sleeps.
pub fn wait_until(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}

static BUILT: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// The one build command the harness (and `scripts/install.d/10-rust.sh`) uses for every
/// binary a test starts. Always the same invocation, so cargo resolves features the same
/// way every time and never rebuilds a dependency because a test asked differently.
pub const BUILD_ARGS: [&str; 5] = ["build", "--workspace", "--bins", "--features", "tamebi/fault-injection"];

pub(crate) fn ensure_built(package: &str, bin: &str, features: &[&str]) -> PathBuf {
    let key = format!("{package}/{bin}/{}", features.join(","));
    // Only these features exist on the binaries tests start; anything else is a harness bug.
    assert!(
        features.iter().all(|f| *f == "fault-injection" && package == "tamebi"),
        "the harness builds binaries with {BUILD_ARGS:?} only; asked for {key}"
    );
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let set = built.get_or_insert_with(HashSet::new);
    let root = workspace_root();
    if set.is_empty() {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.current_dir(&root).args(BUILD_ARGS).arg("-q");
        let status = cmd.status().expect("run cargo build");
        assert!(status.success(), "cargo build of the workspace binaries failed");
    }
    set.insert(key);
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target"));
    target.join("debug").join(bin)
}

/// A running child process that is killed when dropped.
pub struct Process {
    name: String,
    child: Child,
    log_dir: tempfile::TempDir,
}

impl Process {
    /// Spawns `cmd` with stdout and stderr captured to files.
    pub fn spawn(name: &str, mut cmd: Command) -> Process {
        let log_dir = tempfile::Builder::new()
            .prefix(&format!("tamebi-test-{name}-"))
            .tempdir()
            .expect("log dir");
        let out = std::fs::File::create(log_dir.path().join("stdout.log")).expect("stdout log");
        let err = std::fs::File::create(log_dir.path().join("stderr.log")).expect("stderr log");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        Process {
            name: name.to_string(),
            child,
            log_dir,
        }
    }

    /// Waits until `url` answers any HTTP status, or panics with the process's logs.
    pub fn wait_http(&mut self, url: &str, timeout: Duration) {
        let client = probe::answers_http();
        let ok = wait_until(timeout, || {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("{} exited early with {status}\n{}", self.name, self.logs());
            }
            client(url)
        });
        assert!(ok, "{} did not answer {url} in {timeout:?}\n{}", self.name, self.logs());
    }

    /// The OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGKILL and waits for the process (for durability tests).
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits up to `timeout` for a clean exit; returns the exit code.
    pub fn terminate(&mut self, timeout: Duration) -> Option<i32> {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let mut code = None;
        wait_until(timeout, || match self.child.try_wait() {
            Ok(Some(s)) => {
                code = s.code();
                true
            }
            _ => false,
        });
        code
    }

    /// stdout and stderr so far, for failure messages.
    pub fn logs(&self) -> String {
        let read = |f: &str| std::fs::read_to_string(self.log_dir.path().join(f)).unwrap_or_default();
        format!(
            "--- {} stdout ({}) ---\n{}\n--- {} stderr ---\n{}",
            self.name,
            self.log_dir.path().display(),
            read("stdout.log"),
            self.name,
            read("stderr.log")
        )
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
    }
}

/// A tiny blocking "does this URL answer" probe over a raw TCP connection, so the harness
/// does not need reqwest's blocking feature.
mod probe {
    pub fn answers_http() -> impl Fn(&str) -> bool {
        |url: &str| {
            let Some(rest) = url.strip_prefix("http://") else { return false };
            let (host, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
            use std::io::{Read, Write};
            let Ok(mut s) = std::net::TcpStream::connect(host) else {
                return false;
            };
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            let req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
            if s.write_all(req.as_bytes()).is_err() {
                return false;
            }
            let mut buf = [0u8; 12];
            matches!(s.read(&mut buf), Ok(n) if n >= 12 && buf.starts_with(b"HTTP/1."))
        }
    }
}

/// One blocking JSON call to a test-only control endpoint of `process` (on a short-lived
/// thread with its own runtime, so it works from sync tests and async tests alike). Never
/// goes through a proxy. Panics with the process's logs when the call fails.
pub fn control_call(process: &Process, method: reqwest::Method, url: &str, body: Option<serde_json::Value>) -> serde_json::Value {
    let what = format!("{method} {url}");
    let url = url.to_string();
    let result = std::thread::scope(|s| {
        s.spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            rt.block_on(async move {
                let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(10)).build()?;
                let mut req = client.request(method, &url);
                if let Some(b) = body {
                    req = req.json(&b);
                }
                let resp = req.send().await?;
                let status = resp.status();
                let text = resp.text().await?;
                anyhow::ensure!(status.is_success(), "status {status}: {text}");
                Ok(if text.is_empty() {
                    serde_json::Value::Null
                } else {
                    serde_json::from_str(&text)?
                })
            })
        })
        .join()
    });
    match result {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => panic!("{} {what} failed: {e:#}\n{}", process.name, process.logs()),
        Err(_) => panic!("{} {what}: the calling thread panicked", process.name),
    }
}
