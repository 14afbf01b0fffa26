//! The Nextcloud stand-in (`dev/nextcloud-standin`) as a test fixture.
//!
//! Starts the real stand-in (WsgiDAV + Radicale behind Nextcloud's URLs) on a free port with
//! a fresh state directory and users `alice` and `bob` holding random app passwords, waits
//! until it serves, and optionally seeds the shared conformance fixture. Blocking API, so a
//! test can call it before its runtime starts or from `spawn_blocking`.
//!
//! Like a Nextcloud set up as our docs say, it accepts its own JWT access tokens as `Bearer`
//! (`--oidc-provider-bearer-validation`, the stand-in's equivalent of user_oidc's system config
//! `oidc_provider_bearer_validation`); `without_oidc_bearer_validation()` gives a fresh
//! Nextcloud's behaviour instead, where those tokens are 401.
//!
//! It never fakes an answer: every method talks to the running process over HTTP, and the
//! stand-in itself is the thing under `../shared/nextcloud-conformance/`'s checks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine;

use crate::{Process, free_port, workspace_root};

/// The users every stand-in starts with (the conformance fixture needs exactly these).
pub const USERS: [&str; 2] = ["alice", "bob"];

/// Options for starting a stand-in; `Standin::start()` is the plain case.
#[derive(Default)]
pub struct StandinBuilder {
    webhook: Option<(String, String)>,
    seeded: bool,
    jwt_bearer_refused: bool,
    login_delay_ms: u64,
    without_mail: bool,
}

impl StandinBuilder {
    /// POST webhook_listeners-shaped events to `url` with `X-Tamebi-Webhook-Secret: secret`.
    pub fn with_webhook(mut self, url: &str, secret: &str) -> StandinBuilder {
        self.webhook = Some((url.to_string(), secret.to_string()));
        self
    }

    /// Run the conformance seed (`seed.sh`) once the stand-in serves.
    pub fn seeded(mut self) -> StandinBuilder {
        self.seeded = true;
        self
    }

    /// Refuse JWT access tokens as `Bearer` (a Nextcloud without user_oidc's
    /// `oidc_provider_bearer_validation`); app passwords still work.
    pub fn without_oidc_bearer_validation(mut self) -> StandinBuilder {
        self.jwt_bearer_refused = true;
        self
    }

    /// Charge every login from a credential (a request without a valid session cookie) this
    /// many milliseconds, as a real Nextcloud does (benchmarks; tests leave it at 0).
    pub fn login_delay_ms(mut self, ms: u64) -> StandinBuilder {
        self.login_delay_ms = ms;
        self
    }

    /// A Nextcloud without the Mail app: every mail bridge route answers 501.
    pub fn without_mail(mut self) -> StandinBuilder {
        self.without_mail = true;
        self
    }

    pub fn start(self) -> Standin {
        let root = workspace_root();
        let dir = root.join("dev/nextcloud-standin");
        assert!(
            dir.join(".venv/bin/python").exists(),
            "the stand-in's venv is missing: run scripts/install.d/20-standin.sh"
        );
        let state = tempfile::Builder::new().prefix("tamebi-standin-").tempdir().expect("state dir");
        let passwords: BTreeMap<String, String> = USERS.iter().map(|u| (u.to_string(), format!("{u}-{}", random_hex()))).collect();
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let mut cmd = Command::new(dir.join("run"));
        cmd.arg("--state")
            .arg(state.path().join("state"))
            .arg("--bind")
            .arg(format!("127.0.0.1:{port}"));
        for (uid, pw) in &passwords {
            cmd.arg("--user").arg(format!("{uid}:{pw}"));
        }
        if !self.jwt_bearer_refused {
            cmd.arg("--oidc-provider-bearer-validation");
        }
        if self.login_delay_ms > 0 {
            cmd.arg("--login-delay-ms").arg(self.login_delay_ms.to_string());
        }
        if self.without_mail {
            cmd.arg("--without-mail");
        }
        if let Some((hook, secret)) = &self.webhook {
            cmd.arg("--webhook-url").arg(hook).arg("--webhook-secret").arg(secret);
        }
        let mut process = Process::spawn("nextcloud-standin", cmd);
        process.wait_http(&format!("{url}/status.php"), Duration::from_secs(30));
        let creds = state.path().join("creds");
        let text = format!("NC_URL={url}\nALICE_APP={}\nBOB_APP={}\n", passwords["alice"], passwords["bob"]);
        std::fs::write(&creds, text).expect("write creds file");
        let standin = Standin {
            process,
            state,
            url,
            passwords,
            creds,
        };
        if self.seeded {
            standin.seed();
        }
        standin
    }
}

/// A running stand-in, killed on drop (its state directory is removed after it).
pub struct Standin {
    // Field order matters: the process is killed before its state directory goes.
    process: Process,
    state: tempfile::TempDir,
    url: String,
    passwords: BTreeMap<String, String>,
    creds: PathBuf,
}

impl Standin {
    /// Starts a stand-in with users alice and bob and no data.
    pub fn start() -> Standin {
        StandinBuilder::default().start()
    }

    /// Starts a stand-in and seeds the conformance fixture into it.
    pub fn start_seeded() -> Standin {
        StandinBuilder::default().seeded().start()
    }

    /// A builder for the other options.
    pub fn builder() -> StandinBuilder {
        StandinBuilder::default()
    }

    /// Shorthand for `Standin::builder().with_webhook(url, secret)`.
    pub fn with_webhook(url: &str, secret: &str) -> StandinBuilder {
        StandinBuilder::default().with_webhook(url, secret)
    }

    /// Base URL, e.g. `http://127.0.0.1:40123` (no trailing slash).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `<url>/remote.php/dav/files/<uid>/<path>`.
    pub fn dav_url(&self, uid: &str, path: &str) -> String {
        format!("{}/remote.php/dav/files/{uid}/{}", self.url, path.trim_start_matches('/'))
    }

    pub fn app_password(&self, uid: &str) -> &str {
        match self.passwords.get(uid) {
            Some(pw) => pw,
            None => panic!("the stand-in has no user {uid:?} (it has {USERS:?})"),
        }
    }

    /// `Basic base64(uid:app-password)`, an `Authorization` header value.
    pub fn basic(&self, uid: &str) -> String {
        let raw = format!("{uid}:{}", self.app_password(uid));
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(raw))
    }

    /// `Bearer <app-password>` (Nextcloud accepts app passwords as bearer tokens).
    pub fn bearer(&self, uid: &str) -> String {
        format!("Bearer {}", self.app_password(uid))
    }

    pub fn state_dir(&self) -> &Path {
        self.state.path()
    }

    /// The CREDS file (NC_URL, ALICE_APP, BOB_APP) the conformance scripts read.
    pub fn creds_file(&self) -> &Path {
        &self.creds
    }

    /// The underlying process (pid, logs, terminate, kill9).
    pub fn process(&mut self) -> &mut Process {
        &mut self.process
    }

    /// Runs `dev/nextcloud-standin/seed` (the shared `seed.sh`); idempotent.
    pub fn seed(&self) {
        let out = Command::new(workspace_root().join("dev/nextcloud-standin/seed"))
            .arg(&self.creds)
            .output()
            .expect("run seed");
        assert!(
            out.status.success(),
            "seeding the stand-in failed: {}\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.process.logs()
        );
    }

    /// An RFC 9068-shaped JWT access token for `uid` with audience `aud`, valid for `ttl`
    /// (whole seconds, at least one). The stand-in accepts it as `Bearer` until it expires
    /// and, like Nextcloud, does not check `aud`.
    pub fn mint_jwt(&self, uid: &str, aud: &str, ttl: Duration) -> String {
        let url = format!("{}/standin/token", self.url);
        let auth = self.basic(uid);
        let body = serde_json::json!({ "aud": aud, "ttl_seconds": ttl.as_secs().max(1) });
        let result = std::thread::scope(|s| {
            s.spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
                rt.block_on(async move {
                    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
                    let resp = client.post(&url).header("Authorization", auth).json(&body).send().await?;
                    let status = resp.status();
                    let text = resp.text().await?;
                    anyhow::ensure!(status.is_success(), "status {status}: {text}");
                    let v: serde_json::Value = serde_json::from_str(&text)?;
                    match v.get("access_token").and_then(serde_json::Value::as_str) {
                        Some(t) => Ok(t.to_string()),
                        None => anyhow::bail!("no access_token in {text}"),
                    }
                })
            })
            .join()
        });
        match result {
            Ok(Ok(token)) => token,
            Ok(Err(e)) => panic!("minting a JWT failed: {e:#}\n{}", self.process.logs()),
            Err(_) => panic!("minting a JWT: the calling thread panicked"),
        }
    }
}

fn random_hex() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}
