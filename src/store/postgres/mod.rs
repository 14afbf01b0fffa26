//! The PostgreSQL implementation of the stores, used when `TAMEBI_DATABASE_URL` names a
//! `postgres://` database: chat, audit and memory in one database, shared by every
//! orchestrator instance (docs/scale-out.md).
//!
//! - [`connect`]: the connection pool (deadpool over tokio-postgres) and the migrations.
//! - [`chat`], [`audit`], [`memory`]: the same operations as the SQLite files, with the same
//!   tables, columns and stored strings.
//! - [`group_commit`]: chat saves of many turns in one transaction, one WAL flush for all.
//! - [`batch`]: the replay records and the facts reads of many requests in one statement each.
//! - [`lease`]: who runs which conversation; [`replay`]: G1's replay records, shared.
//!
//! The connection is plain (a unix socket or a private network) unless `TAMEBI_DATABASE_URL`
//! says `sslmode=require` or `sslmode=verify-full`: then it is TLS (rustls), and the server's
//! certificate must chain to the CA file of `TAMEBI_DATABASE_CA_FILE` (else the system's roots)
//! and name the host connected to, in both modes: an unverified certificate is never accepted.
//! [`Target::parse`] validates all of it at start, with a message for the operator.
//!
//! Migrations are SQL files in `migrations/`, numbered, compiled into the binary and applied
//! at start in order, each once, under an advisory lock so two instances starting together
//! do not race. A migration is never edited once released: a change is a new file.
//!
//! Every query is keyed by the signed uid, exactly as in SQLite. This module never decides
//! what a user may do; it stores what the turn and the person did.

pub mod audit;
mod batch;
pub mod chat;
mod group_commit;
pub mod lease;
pub mod memory;
pub mod registry;
pub mod replay;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::path::{Path, PathBuf};
use tokio_postgres::NoTls;
use tokio_postgres::config::{Host, SslMode};

use crate::error::Error;
use crate::types::Secret;

/// Where the database is and how the connection is protected.
#[derive(Debug, Clone)]
pub struct Target {
    /// The connection URL without `sslmode` (it may hold a password: never printed).
    pub url: Secret,
    pub tls: Tls,
}

/// How the connection to PostgreSQL is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tls {
    /// No TLS (`sslmode` absent or `disable`): a unix socket or a private network.
    Off,
    /// TLS, the server's certificate checked against `ca_file` (PEM) or else the system's
    /// roots, and its name against the host connected to (`require` and `verify-full`).
    Verified { ca_file: Option<PathBuf> },
}

impl Target {
    /// Validates `TAMEBI_DATABASE_URL` (a `postgres://` URL) and `TAMEBI_DATABASE_CA_FILE`.
    /// The error is a sentence for the operator that never repeats the URL.
    pub fn parse(url: &str, ca_file: Option<PathBuf>) -> Result<Target, String> {
        let (url, sslmode) = take_sslmode(url);
        let config: tokio_postgres::Config = url.parse().map_err(|e| format!("not a PostgreSQL connection URL ({e})"))?;
        let tls = match sslmode.as_deref() {
            None | Some("disable") => Tls::Off,
            Some("require" | "verify-full") => Tls::Verified { ca_file: ca_file.clone() },
            Some("prefer" | "allow") => {
                return Err(format!(
                    "sslmode={} is not supported: it falls back to an unencrypted connection without saying so; \
                     use sslmode=verify-full (or require), or sslmode=disable on a private network",
                    sslmode.unwrap_or_default()
                ));
            }
            Some("verify-ca") => {
                return Err(
                    "sslmode=verify-ca is not supported: use sslmode=verify-full (the server's certificate must also name \
                            the host you connect to)"
                        .into(),
                );
            }
            Some(other) => {
                return Err(format!(
                    "sslmode={other} is not a PostgreSQL sslmode (use verify-full, require or disable)"
                ));
            }
        };
        match &tls {
            Tls::Off if ca_file.is_some() => {
                return Err("TAMEBI_DATABASE_CA_FILE is set but the URL asks for no TLS: add sslmode=verify-full".into());
            }
            Tls::Off => {}
            Tls::Verified { ca_file } => {
                if config.get_hosts().iter().any(|h| matches!(h, Host::Unix(_))) {
                    return Err("TLS needs a TCP host: PostgreSQL does not use TLS on a unix socket (drop sslmode for a socket)".into());
                }
                roots(ca_file.as_deref()).map_err(|e| e.to_string())?;
            }
        }
        Ok(Target {
            url: Secret::new(url),
            tls,
        })
    }
}

/// The URL without its `sslmode` parameter (tokio-postgres knows only disable, prefer and
/// require; the mode is ours to apply), and that parameter's value.
fn take_sslmode(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    let mut mode = None;
    let kept: Vec<&str> = query
        .split('&')
        // Compared decoded: a percent-encoded `sslmode` key must not slip past as "no TLS".
        .filter(|pair| match url::form_urlencoded::parse(pair.as_bytes()).next() {
            Some((key, value)) if key == "sslmode" => {
                mode = Some(value.into_owned());
                false
            }
            _ => true,
        })
        .collect();
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (url, mode)
}

/// The certificates a server's chain must end in: the PEM file's, or the system's.
fn roots(ca_file: Option<&Path>) -> Result<rustls::RootCertStore, Error> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let shown = path.display();
            let certs =
                CertificateDer::pem_file_iter(path).map_err(|e| Error::Internal(format!("TAMEBI_DATABASE_CA_FILE {shown}: {e}")))?;
            for cert in certs {
                let cert = cert.map_err(|e| Error::Internal(format!("TAMEBI_DATABASE_CA_FILE {shown}: {e}")))?;
                roots
                    .add(cert)
                    .map_err(|e| Error::Internal(format!("TAMEBI_DATABASE_CA_FILE {shown}: a certificate is unusable ({e})")))?;
            }
            if roots.is_empty() {
                return Err(Error::Internal(format!(
                    "TAMEBI_DATABASE_CA_FILE {shown}: no PEM certificate in it"
                )));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(Error::Internal(
                    "no trusted root certificates on this system for TLS to PostgreSQL: set TAMEBI_DATABASE_CA_FILE".into(),
                ));
            }
        }
    }
    Ok(roots)
}

/// The TLS connector for [`Tls::Verified`]: rustls with aws-lc-rs (reqwest's provider too),
/// the default protocol versions, the roots above, and the standard WebPKI verification.
fn tls_connector(ca_file: Option<&Path>) -> Result<tokio_postgres_rustls::MakeRustlsConnect, Error> {
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Internal(format!("TLS configuration: {e}")))?
        .with_root_certificates(roots(ca_file)?)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// A refused TLS handshake, said plainly (the cause is rustls's, e.g. an unknown issuer or a
/// certificate for another name), or the error as it was.
fn explain_tls_failure(e: Error) -> Error {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(s) = source {
        let tls = s.downcast_ref::<rustls::Error>().or_else(|| {
            s.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref()?.downcast_ref::<rustls::Error>())
        });
        if let Some(tls) = tls {
            return Error::Internal(format!(
                "TLS to PostgreSQL refused: {tls} (the server's certificate must chain to TAMEBI_DATABASE_CA_FILE, or the \
                 system's roots when it is unset, and name the host in TAMEBI_DATABASE_URL)"
            ));
        }
        source = s.source();
    }
    e
}

/// The migrations, in order: (version, name, SQL).
const MIGRATIONS: &[(i32, &str, &str)] = &[
    (1, "initial", include_str!("migrations/0001_initial.sql")),
    (2, "leases", include_str!("migrations/0002_leases.sql")),
    (3, "replay_and_fencing", include_str!("migrations/0003_replay_and_fencing.sql")),
    (4, "conversation_origin", include_str!("migrations/0004_conversation_origin.sql")),
    (5, "registry", include_str!("migrations/0005_registry.sql")),
    (6, "registry_version", include_str!("migrations/0006_registry_version.sql")),
];

/// Key of the advisory lock that serialises migrations across instances ("tamebi" in ASCII).
const MIGRATION_LOCK: i64 = 0x7461_6d65_6269;

/// Most connections one instance holds. Writes are short transactions; more connections
/// than this only queue inside PostgreSQL instead of here.
const POOL_SIZE: usize = 16;

/// A pool of connections to the database of `target`, migrated to the current version.
pub async fn connect(target: &Target) -> Result<Pool, Error> {
    let mut config: tokio_postgres::Config = target
        .url
        .expose()
        .parse()
        .map_err(|e| Error::Internal(format!("TAMEBI_DATABASE_URL: {e}")))?;
    let manager_config = || ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    let manager = match &target.tls {
        Tls::Off => {
            config.ssl_mode(SslMode::Disable);
            Manager::from_config(config, NoTls, manager_config())
        }
        Tls::Verified { ca_file } => {
            config.ssl_mode(SslMode::Require);
            Manager::from_config(config, tls_connector(ca_file.as_deref())?, manager_config())
        }
    };
    let pool = Pool::builder(manager)
        .max_size(POOL_SIZE)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(std::time::Duration::from_secs(10)))
        .create_timeout(Some(std::time::Duration::from_secs(10)))
        .build()
        .map_err(|e| Error::Internal(format!("postgres pool: {e}")))?;
    migrate(&pool).await.map_err(explain_tls_failure)?;
    Ok(pool)
}

/// Applies every migration not applied yet, all in one transaction (PostgreSQL DDL is
/// transactional: a failed migration leaves the schema as it was).
pub async fn migrate(pool: &Pool) -> Result<(), Error> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    // Held until this transaction ends: a second instance waits, then finds all applied.
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version INTEGER PRIMARY KEY,
             name TEXT NOT NULL,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    )
    .await?;
    let applied: Vec<i32> = tx
        .query("SELECT version FROM schema_migrations", &[])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if let Some(newest) = applied.iter().max()
        && *newest > MIGRATIONS.last().map_or(0, |m| m.0)
    {
        return Err(Error::Internal(format!(
            "the database is at schema version {newest}, newer than this binary knows: upgrade tamebi"
        )));
    }
    for (version, name, sql) in MIGRATIONS {
        if applied.contains(version) {
            continue;
        }
        tx.batch_execute(sql).await?;
        tx.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", &[version, name])
            .await?;
        tracing::info!(version, name, "database migration applied");
    }
    tx.commit().await?;
    Ok(())
}

/// Milliseconds since the epoch, the unit every timestamp column holds.
fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Lease and replay writes do not wait for the WAL flush: both are soft state whose loss in a
/// PostgreSQL crash costs little (see their modules), and not waiting takes a disk flush off
/// every signed request, conversation start, turn start and end, and renewal.
const NO_FLUSH: &str = "SET LOCAL synchronous_commit TO OFF";

/// Runs one statement in its own transaction without waiting for the flush; the number of
/// rows it changed.
///
/// One round trip: the statement is prepared once per connection, and BEGIN, the setting, the
/// statement and COMMIT are sent together (tokio-postgres pipelines requests issued at once,
/// and sends all four on the first poll, so a caller that goes away cannot leave the
/// connection inside the transaction). A failed statement aborts the transaction, whose COMMIT
/// then rolls it back; the statement's error is returned.
async fn unflushed(pool: &Pool, sql: &str, params: &[&(dyn tokio_postgres::types::ToSql + Sync)]) -> Result<u64, Error> {
    let client = pool.get().await?;
    let statement = client.prepare_cached(sql).await?;
    let (begun, n, committed) = tokio::join!(
        client.batch_execute(UNFLUSHED_BEGIN),
        client.execute(&statement, params),
        client.batch_execute("COMMIT"),
    );
    begun?;
    let n = n?;
    committed?;
    Ok(n)
}

/// [`unflushed`] for a statement that returns rows (`RETURNING`): the rows it wrote.
async fn unflushed_query(
    pool: &Pool,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<tokio_postgres::Row>, Error> {
    let client = pool.get().await?;
    let statement = client.prepare_cached(sql).await?;
    let (begun, rows, committed) = tokio::join!(
        client.batch_execute(UNFLUSHED_BEGIN),
        client.query(&statement, params),
        client.batch_execute("COMMIT"),
    );
    begun?;
    let rows = rows?;
    committed?;
    Ok(rows)
}

/// [`unflushed`]'s transaction start: [`NO_FLUSH`] in the same message as BEGIN.
const UNFLUSHED_BEGIN: &str = "BEGIN; SET LOCAL synchronous_commit TO OFF";

/// A chore due at most once per period (unix seconds), claimed by one caller at a time.
struct Every {
    period: i64,
    last: std::sync::atomic::AtomicI64,
}

impl Every {
    fn new(period: i64) -> Every {
        Every {
            period,
            last: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// True for exactly one caller once the period has passed since the last claim.
    fn due(&self, now: i64) -> bool {
        use std::sync::atomic::Ordering;
        let last = self.last.load(Ordering::Relaxed);
        now - last >= self.period && self.last.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Runs openssl in `dir` (the test makes its own certificates: nothing is checked in).
    fn openssl(dir: &Path, args: &[&str]) {
        let out = Command::new("openssl").current_dir(dir).args(args).output().unwrap();
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// A CA named `name`: `<name>.crt` and `<name>.key`.
    fn ca(dir: &Path, name: &str) {
        let (crt, key, subject) = (format!("{name}.crt"), format!("{name}.key"), format!("/CN=Tamebi test {name}"));
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "2",
                "-keyout",
                &key,
                "-out",
                &crt,
                "-subj",
                &subject,
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        );
    }

    /// `server.crt`/`server.key` for the name `localhost` only, issued by the CA `issuer`.
    fn server_cert(dir: &Path, issuer: &str) {
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(
            dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        );
        let (ca_crt, ca_key) = (format!("{issuer}.crt"), format!("{issuer}.key"));
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                &ca_crt,
                "-CAkey",
                &ca_key,
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                "server.crt",
                "-extfile",
                "server.ext",
            ],
        );
    }

    async fn open(url: &str, ca_file: &Path) -> Result<crate::store::Stores, Error> {
        let target = Target::parse(url, Some(ca_file.to_path_buf())).map_err(Error::Internal)?;
        assert!(matches!(target.tls, Tls::Verified { .. }));
        crate::store::Stores::open(&crate::store::Backend::Postgres(target), std::sync::Arc::new(|| 0)).await
    }

    /// TLS to PostgreSQL (Debian's server with ssl=on and a certificate made here): verify-full
    /// with the right CA file connects, and the session is encrypted; a CA that did not issue
    /// the server's certificate, or a host the certificate does not name, is refused with a
    /// message that says so.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tls_is_verified_against_the_ca_file_and_the_host_name() {
        let certs = tempfile::tempdir().unwrap();
        ca(certs.path(), "ca");
        ca(certs.path(), "other-ca");
        server_cert(certs.path(), "ca");
        let Some(cluster) =
            test_harness::postgres::PgCluster::start_tls(&certs.path().join("server.crt"), &certs.path().join("server.key")).map_or_else(
                |e| {
                    if std::env::var("TAMEBI_SKIP_POSTGRES").is_ok_and(|v| v == "1") {
                        None
                    } else {
                        panic!("PostgreSQL with TLS must start: {e:#}")
                    }
                },
                Some,
            )
        else {
            return;
        };
        cluster.create_database("tls").unwrap();
        let (ca_file, other) = (certs.path().join("ca.crt"), certs.path().join("other-ca.crt"));

        let stores = open(&cluster.tcp_url("localhost", "tls", "sslmode=verify-full"), &ca_file)
            .await
            .unwrap();
        let key = crate::store::key::test_key("tess", "c1");
        let mut message = crate::ui_stream::UiMessage::new("m1".into(), crate::ui_stream::Role::User);
        message.parts.push(crate::ui_stream::UiPart::Text {
            text: "over TLS".into(),
            state: None,
        });
        stores.chat.save_message(&key, &message, None).await.unwrap();
        assert_eq!(stores.chat.load(&key).await.unwrap().unwrap().messages[0].text(), "over TLS");
        let encrypted = cluster
            .psql(
                "tls",
                "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE s.ssl AND a.datname = 'tls'",
            )
            .unwrap();
        assert_ne!(encrypted, "0", "the pool's sessions are TLS");
        stores.close().await;

        let Err(wrong_ca) = open(&cluster.tcp_url("localhost", "tls", "sslmode=verify-full"), &other).await else {
            panic!("a server whose certificate the CA file did not issue must be refused")
        };
        let said = wrong_ca.to_string();
        assert!(
            said.contains("TLS to PostgreSQL refused") && said.contains("UnknownIssuer"),
            "{said}"
        );

        // require verifies as much: the certificate names localhost, not 127.0.0.1.
        let Err(wrong_name) = open(&cluster.tcp_url("127.0.0.1", "tls", "sslmode=require"), &ca_file).await else {
            panic!("a certificate for another name must be refused")
        };
        let said = wrong_name.to_string();
        assert!(
            said.contains("TLS to PostgreSQL refused") && said.contains("not valid for name"),
            "{said}"
        );
    }

    #[test]
    fn sslmode_is_taken_out_of_the_url() {
        assert_eq!(
            take_sslmode("postgres://u:p@h/db?sslmode=verify-full&application_name=x"),
            (
                "postgres://u:p@h/db?application_name=x".to_string(),
                Some("verify-full".to_string())
            )
        );
        assert_eq!(
            take_sslmode("postgres://h/db?sslmode=disable"),
            ("postgres://h/db".to_string(), Some("disable".into()))
        );
        assert_eq!(take_sslmode("postgres://h/db"), ("postgres://h/db".to_string(), None));
        assert_eq!(
            take_sslmode("postgres://h/db?ssl%6Dode=require"),
            ("postgres://h/db".to_string(), Some("require".to_string())),
            "an encoded key is still the mode"
        );
    }

    #[test]
    fn unsupported_or_inconsistent_tls_settings_are_refused_with_a_reason() {
        let ca = Some(PathBuf::from("/nonexistent/ca.pem"));
        for (url, ca_file, expected) in [
            (
                "postgres://db.example/t?sslmode=prefer",
                None,
                "falls back to an unencrypted connection",
            ),
            (
                "postgres://db.example/t?sslmode=allow",
                None,
                "falls back to an unencrypted connection",
            ),
            ("postgres://db.example/t?sslmode=verify-ca", None, "use sslmode=verify-full"),
            ("postgres://db.example/t?sslmode=sure", None, "not a PostgreSQL sslmode"),
            ("postgres://db.example/t", ca.clone(), "asks for no TLS"),
            (
                "postgresql:///t?host=/run/postgresql&sslmode=verify-full",
                None,
                "TLS needs a TCP host",
            ),
            ("postgres://db.example/t?sslmode=verify-full", ca.clone(), "/nonexistent/ca.pem"),
        ] {
            let Err(why) = Target::parse(url, ca_file) else {
                panic!("{url} must be refused")
            };
            assert!(why.contains(expected), "{url}: {why}");
        }
        let empty = tempfile::NamedTempFile::new().unwrap();
        let why = Target::parse("postgres://db.example/t?sslmode=verify-full", Some(empty.path().to_path_buf())).unwrap_err();
        assert!(why.contains("no PEM certificate"), "{why}");
        let plain = Target::parse("postgres://db.example/t?sslmode=disable", None).unwrap();
        assert_eq!((plain.tls, plain.url.expose()), (Tls::Off, "postgres://db.example/t"));
    }
}
