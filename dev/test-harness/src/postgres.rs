//! A throwaway PostgreSQL cluster for tests: Debian's server binaries (`initdb`, `pg_ctl`)
//! on a fresh data directory in a temp dir, listening only on a unix socket in that dir.
//! Stopped (immediate mode) and removed when the handle drops.
//!
//! PostgreSQL refuses to run as root, so when the test runs as root the server runs as the
//! `postgres` user that Debian's package creates (through `runuser`), with the temp dir
//! handed to that user. `scripts/install.d/55-postgres-haproxy.sh` installs the package.
//!
//! A cluster that cannot start is a test failure, never a silent skip:
//! [`PgCluster::start_or_skip`] returns `None` only when `TAMEBI_SKIP_POSTGRES=1` asks for it
//! (a developer's machine without PostgreSQL), and says so.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A running cluster. Its superuser is `postgres`, trusted on the socket (test only).
pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_user: Option<&'static str>,
    port: u16,
    /// The server's `-o` options, kept so [`PgCluster::start_again`] starts it the same way.
    options: String,
}

impl PgCluster {
    /// Starts a cluster, or fails saying why.
    pub fn start() -> Result<PgCluster> {
        PgCluster::start_with(None)
    }

    /// Starts a cluster that also listens on 127.0.0.1 with `ssl=on`, serving the PEM
    /// certificate chain and key given (copied into the cluster, readable by the server only).
    /// [`PgCluster::tcp_url`] reaches it over TCP.
    pub fn start_tls(cert_pem: &Path, key_pem: &Path) -> Result<PgCluster> {
        PgCluster::start_with(Some((cert_pem, key_pem)))
    }

    fn start_with(tls: Option<(&Path, &Path)>) -> Result<PgCluster> {
        let bin = server_bindir()?;
        let dir = tempfile::Builder::new().prefix("tamebi-pg-").tempdir()?;
        let as_user = running_as_root().then_some("postgres");
        if let Some(user) = as_user {
            let status = Command::new("chown").arg("-R").arg(user).arg(dir.path()).status()?;
            if !status.success() {
                bail!("chown {} to {user} failed", dir.path().display());
            }
        }
        let data = dir.path().join("data");
        let port = crate::free_port();
        let mut cluster = PgCluster {
            dir,
            bin,
            as_user,
            port,
            options: String::new(),
        };
        cluster.run(
            "initdb",
            &[
                "-D",
                path_str(&data)?,
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
            ],
        )?;
        let socket_dir = path_str(cluster.dir.path())?.to_string();
        let mut options =
            format!("-c listen_addresses='' -c unix_socket_directories='{socket_dir}' -c port={port} -c fsync=off -c max_connections=200");
        if let Some((cert, key)) = tls {
            let (server_cert, server_key) = (data.join("tls-server.crt"), data.join("tls-server.key"));
            std::fs::copy(cert, &server_cert).context("copy the server certificate")?;
            std::fs::copy(key, &server_key).context("copy the server key")?;
            // PostgreSQL refuses a key that others can read; it must belong to the server's user.
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&server_key, std::fs::Permissions::from_mode(0o600))?;
            }
            if let Some(user) = as_user {
                let status = Command::new("chown").arg(user).arg(&server_cert).arg(&server_key).status()?;
                if !status.success() {
                    bail!("chown of the TLS files to {user} failed");
                }
            }
            options = format!(
                "-c listen_addresses='127.0.0.1' -c unix_socket_directories='{socket_dir}' -c port={port} -c fsync=off \
                 -c max_connections=200 -c ssl=on -c ssl_cert_file='{}' -c ssl_key_file='{}'",
                path_str(&server_cert)?,
                path_str(&server_key)?
            );
        }
        cluster.options = options;
        cluster.start_again()?;
        Ok(cluster)
    }

    /// Stops the server the way a restart does (`pg_ctl stop -m fast`): open sessions are
    /// cut, and clients see their connections fail until [`PgCluster::start_again`].
    pub fn stop(&self) -> Result<()> {
        let data = self.dir.path().join("data");
        self.run("pg_ctl", &["-D", path_str(&data)?, "-m", "fast", "-w", "-t", "30", "stop"])
    }

    /// Starts the server on its data directory, port and options (first start, or after
    /// [`PgCluster::stop`]), waiting until it accepts connections.
    pub fn start_again(&self) -> Result<()> {
        let data = self.dir.path().join("data");
        let log = self.dir.path().join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                path_str(&data)?,
                "-l",
                path_str(&log)?,
                "-o",
                &self.options,
                "-w",
                "-t",
                "30",
                "start",
            ],
        )
    }

    /// A cluster, or `None` (with a message) only when the person running the tests said so
    /// with `TAMEBI_SKIP_POSTGRES=1`. Otherwise a missing or broken PostgreSQL fails the test:
    /// scripts/test installs it, and a suite must never pass by not running.
    pub fn start_or_skip() -> Option<PgCluster> {
        match PgCluster::start() {
            Ok(c) => Some(c),
            Err(e) if std::env::var("TAMEBI_SKIP_POSTGRES").is_ok_and(|v| v == "1") => {
                eprintln!("SKIPPED (TAMEBI_SKIP_POSTGRES=1): PostgreSQL could not start here ({e:#})");
                None
            }
            Err(e) => panic!(
                "PostgreSQL must start (scripts/install.d/55-postgres-haproxy.sh installs it; \
                 TAMEBI_SKIP_POSTGRES=1 skips these tests on purpose): {e:#}"
            ),
        }
    }

    /// Creates a database and returns its URL (unix socket of this cluster).
    pub fn create_database(&self, name: &str) -> Result<String> {
        self.run(
            "createdb",
            &[
                "-h",
                path_str(self.dir.path())?,
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                name,
            ],
        )?;
        Ok(self.url(name))
    }

    /// The URL of database `name`, as `TAMEBI_DATABASE_URL` takes it.
    pub fn url(&self, name: &str) -> String {
        format!(
            "postgresql://postgres@localhost/{name}?host={}&port={}",
            self.dir.path().display(),
            self.port
        )
    }

    /// The URL of database `name` over TCP at `host` (a cluster from [`PgCluster::start_tls`]),
    /// with `query` appended (e.g. `sslmode=verify-full`).
    pub fn tcp_url(&self, host: &str, name: &str, query: &str) -> String {
        format!("postgresql://postgres@{host}:{}/{name}?{query}", self.port)
    }

    /// Runs `psql -c sql` on database `name` and returns its unaligned output.
    pub fn psql(&self, name: &str, sql: &str) -> Result<String> {
        let out = self
            .command("psql")?
            .args(["-h", path_str(self.dir.path())?, "-p", &self.port.to_string(), "-U", "postgres"])
            .args(["-d", name, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()?;
        if !out.status.success() {
            bail!("psql: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// The server's log (for a failing test's message).
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    fn command(&self, program: &str) -> Result<Command> {
        let exe = self.bin.join(program);
        Ok(match self.as_user {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(exe);
                c
            }
            None => Command::new(exe),
        })
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<()> {
        let out = self
            .command(program)?
            .args(args)
            .output()
            .with_context(|| format!("run {program}"))?;
        if !out.status.success() {
            bail!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        if let Ok(data) = path_str(&self.dir.path().join("data")).map(str::to_string) {
            let _ = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
        }
    }
}

/// The newest installed server's bin directory (Debian: /usr/lib/postgresql/<major>/bin).
fn server_bindir() -> Result<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .context("no /usr/lib/postgresql (is the postgresql package installed?)")?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let major = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((major, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, bin)| bin)
        .context("no PostgreSQL server binaries under /usr/lib/postgresql")
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn path_str(p: &Path) -> Result<&str> {
    p.to_str().context("non-UTF-8 temp path")
}
