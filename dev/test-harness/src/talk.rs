//! The Talk bot path as a test fixture: the tamebi app's real webhook controller, a Talk
//! conversation on the stand-in with the bot enabled, and a recorder in front of the
//! orchestrator.
//!
//! - [`TalkApp`]: `nextcloud-app/tests/talk-webhook-server.php` under PHP's built-in server. The
//!   app's own classes (TalkController, Webhook, RoomTurns, BotReplies, Orchestrator) run
//!   unchanged; that script does only what Nextcloud's router does for this one route. Nextcloud
//!   itself cannot be installed here, and this is the most real part there is: the PHP the
//!   production app runs, called over HTTP by the stand-in's Talk exactly as Talk calls it.
//! - [`TalkRoom`]: installs the bot with the stand-in's own `occ talk:bot:install`, has alice
//!   create a public conversation, add bob and enable the bot through Talk's OCS API.
//! - [`Recorder`]: a pass-through HTTP proxy that keeps the method, path and headers of every
//!   request, so a test can assert on what the orchestrator received (no credential for a bot turn).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::standin::Standin;
use crate::{Process, free_port, wait_until, workspace_root};

fn probe_port(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(&std::net::SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_millis(200)).is_ok()
}

/// The app's webhook route under `php -S`, killed (with its workers) on drop.
pub struct TalkApp {
    process: Process,
    pub webhook_url: String,
    pub secret: String,
    dir: tempfile::TempDir,
}

impl TalkApp {
    /// Serves the webhook for a bot with a fresh secret; replies go to `standin`, turns to `orchestrator_url`.
    pub fn start(standin: &Standin, orchestrator_url: &str) -> TalkApp {
        let dir = tempfile::Builder::new().prefix("tamebi-talk-app-").tempdir().expect("talk app dir");
        let secret = hex::encode(uuid::Uuid::new_v4().as_bytes()) + &hex::encode(uuid::Uuid::new_v4().as_bytes());
        let port = free_port();
        let script = workspace_root().join("nextcloud-app/tests/talk-webhook-server.php");
        let mut cmd = std::process::Command::new("php");
        cmd.arg("-S")
            .arg(format!("127.0.0.1:{port}"))
            .arg(script)
            .env("TAMEBI_TALK_SECRET", &secret)
            .env("TAMEBI_TALK_NC_URL", standin.url())
            .env("TAMEBI_TALK_ORCHESTRATOR", orchestrator_url)
            .env("TAMEBI_TALK_PROXY_SECRET", crate::orchestrator::PROXY_SECRET)
            .env("TAMEBI_TALK_SIGNING_SECRET", crate::orchestrator::SIGNING_SECRET)
            .env("TAMEBI_TALK_CACHE", dir.path().join("cache"))
            .env("TAMEBI_TALK_LOG", dir.path().join("app.log"))
            .env("PHP_CLI_SERVER_WORKERS", "4");
        let process = Process::spawn("talk-webhook (php -S)", cmd);
        assert!(
            wait_until(Duration::from_secs(15), || probe_port(port)),
            "php -S did not listen\n{}",
            process.logs()
        );
        TalkApp {
            process,
            webhook_url: format!("http://127.0.0.1:{port}/ocs/v2.php/apps/tamebi/api/v1/talk/webhook"),
            secret,
            dir,
        }
    }

    /// What the app logged (level and message, as nextcloud.log gets them).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("app.log")).unwrap_or_default()
    }

    /// php -S's own output, for failure messages.
    pub fn logs(&self) -> String {
        self.process.logs()
    }
}

impl Drop for TalkApp {
    fn drop(&mut self) {
        // php -S with workers forks them: end the children first, then the parent (by pid).
        let pid = self.process.pid();
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        for child in children.split_whitespace() {
            let _ = std::process::Command::new("kill").arg(child).status();
        }
    }
}

/// A public conversation "Planning" of alice's, bob a participant, the Tamebi bot enabled.
pub struct TalkRoom {
    pub token: String,
    pub bot_id: u64,
    base: String,
    http: reqwest::Client,
    basic: Vec<(String, String)>,
}

impl TalkRoom {
    pub async fn create(standin: &Standin, app: &TalkApp) -> TalkRoom {
        let occ = |args: &[&str]| {
            let out = std::process::Command::new(workspace_root().join("dev/nextcloud-standin/occ"))
                .arg("--state")
                .arg(standin.state_dir().join("state"))
                .args(args)
                .output()
                .expect("run occ");
            assert!(out.status.success(), "occ {args:?}: {}", String::from_utf8_lossy(&out.stdout));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        occ(&[
            "talk:bot:install",
            "-f",
            "webhook",
            "-f",
            "response",
            "Tamebi",
            &app.secret,
            &app.webhook_url,
        ]);
        let bots: serde_json::Value = serde_json::from_str(&occ(&["talk:bot:list", "--output=json"])).expect("bot list");
        let bot_id = bots
            .as_array()
            .and_then(|b| b.iter().find(|b| b["url"] == app.webhook_url.as_str()))
            .and_then(|b| b["id"].as_u64())
            .expect("the bot is listed");
        let mut room = TalkRoom {
            token: String::new(),
            bot_id,
            base: standin.url().to_string(),
            http: reqwest::Client::new(),
            basic: ["alice", "bob"].iter().map(|u| (u.to_string(), standin.basic(u))).collect(),
        };
        let (status, data) = room
            .ocs(
                "alice",
                reqwest::Method::POST,
                "/ocs/v2.php/apps/spreed/api/v4/room",
                &[("roomType", "3"), ("roomName", "Planning")],
            )
            .await;
        assert_eq!(status, 201, "create the conversation: {data}");
        room.token = data["token"].as_str().expect("token").to_string();
        let token = room.token.clone();
        let (status, _) = room
            .ocs(
                "alice",
                reqwest::Method::POST,
                &format!("/ocs/v2.php/apps/spreed/api/v4/room/{token}/participants"),
                &[("newParticipant", "bob"), ("source", "users")],
            )
            .await;
        assert_eq!(status, 200, "add bob");
        let (status, _) = room
            .ocs(
                "alice",
                reqwest::Method::POST,
                &format!("/ocs/v2.php/apps/spreed/api/v1/bot/{token}/{bot_id}"),
                &[],
            )
            .await;
        assert_eq!(status, 201, "alice enables the bot");
        room
    }

    /// An OCS request as `uid`; (status, ocs.data).
    pub async fn ocs(&self, uid: &str, method: reqwest::Method, path: &str, form: &[(&str, &str)]) -> (u16, serde_json::Value) {
        let auth = self
            .basic
            .iter()
            .find(|(u, _)| u == uid)
            .map(|(_, b)| b.clone())
            .expect("known user");
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("authorization", auth)
            .header("ocs-apirequest", "true")
            .header("accept", "application/json");
        if !form.is_empty() {
            // A JSON body: Talk's controllers read parameters from JSON as from a form.
            let body: serde_json::Map<String, serde_json::Value> =
                form.iter().map(|(k, v)| (k.to_string(), serde_json::Value::from(*v))).collect();
            req = req.json(&body);
        }
        let response = req.send().await.expect("ocs request");
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        (status, body["ocs"]["data"].clone())
    }

    /// `uid` posts `message`; returns the message id.
    pub async fn post(&self, uid: &str, message: &str) -> u64 {
        let (status, data) = self
            .ocs(
                uid,
                reqwest::Method::POST,
                &format!("/ocs/v2.php/apps/spreed/api/v1/chat/{}", self.token),
                &[("message", message)],
            )
            .await;
        assert_eq!(status, 201, "post: {data}");
        data["id"].as_u64().expect("message id")
    }

    /// A guest posts (the stand-in's control route, as a guest's browser would).
    pub async fn guest_post(&self, message: &str) -> u64 {
        let body = serde_json::json!({"token": self.token, "actorType": "guests", "actorId": "guest-session", "name": "Visitor", "message": message});
        let response = self
            .http
            .post(format!("{}/standin/talk/post", self.base))
            .json(&body)
            .send()
            .await
            .expect("guest post");
        let data: serde_json::Value = response.json().await.expect("guest post answer");
        data["id"].as_u64().expect("message id")
    }

    /// The conversation as `uid` reads it, oldest first.
    pub async fn messages(&self, uid: &str) -> Vec<serde_json::Value> {
        let (_, data) = self
            .ocs(
                uid,
                reqwest::Method::GET,
                &format!("/ocs/v2.php/apps/spreed/api/v1/chat/{}?lookIntoFuture=0&limit=200", self.token),
                &[],
            )
            .await;
        let mut messages = data.as_array().cloned().unwrap_or_default();
        messages.reverse();
        messages
    }

    /// The bot's messages as bob reads them, once there are `count` (or after 20 s).
    pub async fn bot_messages(&self, count: usize) -> Vec<serde_json::Value> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let bots: Vec<serde_json::Value> = self
                .messages("bob")
                .await
                .into_iter()
                .filter(|m| m["actorType"] == "bots")
                .collect();
            if bots.len() >= count || tokio::time::Instant::now() >= deadline {
                return bots;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// One request the recorder passed on.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased, with their values.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// A pass-through HTTP/1.1 proxy to `target` that records every request (runs on the caller's runtime).
pub struct Recorder {
    pub url: String,
    seen: Arc<Mutex<Vec<Recorded>>>,
    /// The serving task, ended when the recorder drops.
    task: tokio::task::JoinSet<()>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.task.abort_all();
    }
}

impl Recorder {
    pub async fn start(target: String) -> Recorder {
        let seen: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind recorder");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let client = reqwest::Client::builder().no_proxy().build().expect("client");
        let store = seen.clone();
        let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
            let (client, target, store) = (client.clone(), target.clone(), store.clone());
            async move { forward(request, &client, &target, &store).await }
        });
        let mut task = tokio::task::JoinSet::new();
        task.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Recorder { url, seen, task }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

async fn forward(
    request: axum::extract::Request,
    client: &reqwest::Client,
    target: &str,
    store: &Mutex<Vec<Recorded>>,
) -> axum::response::Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, 16 * 1024 * 1024).await.unwrap_or_default();
    let path = parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_default();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(n, v)| (n.as_str().to_ascii_lowercase(), v.to_str().unwrap_or("").to_string()))
        .collect();
    if let Ok(mut s) = store.lock() {
        s.push(Recorded {
            method: parts.method.to_string(),
            path: path.clone(),
            headers: headers.clone(),
            body: body.to_vec(),
        });
    }
    let mut out = client.request(parts.method.clone(), format!("{target}{path}")).body(body);
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            out = out.header(name.as_str(), value.as_str());
        }
    }
    match out.send().await {
        Ok(answer) => {
            let status = answer.status();
            let headers = answer.headers().clone();
            let bytes = answer.bytes().await.unwrap_or_default();
            let mut response = axum::response::Response::new(axum::body::Body::from(bytes));
            *response.status_mut() = status;
            for (name, value) in &headers {
                if name != "transfer-encoding" && name != "content-length" {
                    response.headers_mut().insert(name, value.clone());
                }
            }
            response
        }
        Err(_) => {
            let mut response = axum::response::Response::new(axum::body::Body::empty());
            *response.status_mut() = axum::http::StatusCode::BAD_GATEWAY;
            response
        }
    }
}
