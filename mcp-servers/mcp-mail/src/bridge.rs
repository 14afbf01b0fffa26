//! The HTTP client of the mail bridge: the tamebi Nextcloud app's OCS routes under
//! `/ocs/v2.php/apps/tamebi/api/v1/mail` (contract: docs/mail-bridge-api.md).
//!
//! Owns: the wire types of that contract, building each request with the caller's own
//! `Authorization` header, unwrapping the OCS envelope and mapping statuses to [`Error`].
//! Must never: hold, log or cache a credential (the header map comes with each call and is
//! dropped with it), speak IMAP/SMTP, or decide whose mail may be read: the bridge acts as
//! the token's user and its 404 stands.

use std::time::Duration;

use http::{HeaderMap, StatusCode};
use reqwest::Method;
use rmcp::schemars;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::error::Error;

/// Path of the bridge below the Nextcloud base URL.
pub const BASE_PATH: &str = "ocs/v2.php/apps/tamebi/api/v1/mail";

/// An address as the bridge reports it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct Addr {
    pub label: Option<String>,
    pub email: String,
}

#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Account {
    pub id: i64,
    pub name: String,
    pub email: String,
}

#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Mailbox {
    pub id: i64,
    pub account_id: i64,
    pub name: String,
    #[serde(default)]
    pub special_use: Vec<String>,
    pub unread: i64,
    pub total: i64,
}

/// One message in a search result.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub id: i64,
    pub account_id: i64,
    pub mailbox_id: i64,
    pub subject: String,
    #[serde(default)]
    pub from: Vec<Addr>,
    #[serde(default)]
    pub to: Vec<Addr>,
    pub date: String,
    pub unread: bool,
    /// IMAP \\Answered: the user replied to it.
    #[serde(default)]
    pub answered: bool,
    pub has_attachments: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BodyFormat {
    Text,
    Html,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Body {
    pub format: BodyFormat,
    pub content: String,
}

#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Attachment {
    pub name: String,
    pub mime_type: String,
    pub size: u64,
}

/// One whole message, body as Mail has it (HTML is converted by [`crate::text`]).
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Message {
    #[serde(flatten)]
    pub summary: Summary,
    #[serde(default)]
    pub cc: Vec<Addr>,
    pub message_id: Option<String>,
    /// The Message-ID this mail answers (its In-Reply-To header).
    #[serde(default)]
    pub in_reply_to: Option<String>,
    pub body: Body,
    #[serde(default)]
    pub attachments: Vec<Attachment>,
}

/// The search filters, exactly the query parameters of `GET /messages`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchQuery {
    pub query: String,
    pub mailbox_id: Option<i64>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub unread: Option<bool>,
    pub limit: Option<u32>,
}

impl SearchQuery {
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut p = vec![("query", self.query.clone())];
        let opt = [
            ("mailbox_id", self.mailbox_id.map(|v| v.to_string())),
            ("from", self.from.clone()),
            ("to", self.to.clone()),
            ("since", self.since.clone()),
            ("until", self.until.clone()),
            ("unread", self.unread.map(|v| v.to_string())),
            ("limit", self.limit.map(|v| v.to_string())),
        ];
        p.extend(opt.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))));
        p
    }
}

/// The body of `POST /send` and `POST /drafts`: exactly what the person confirmed.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Outgoing {
    pub account_id: i64,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub body: String,
    pub in_reply_to: Option<i64>,
}

#[derive(Deserialize)]
struct Accounts {
    accounts: Vec<Account>,
}
#[derive(Deserialize)]
struct Mailboxes {
    mailboxes: Vec<Mailbox>,
}
#[derive(Deserialize)]
struct Messages {
    messages: Vec<Summary>,
}
/// `POST /send` and `POST /drafts` answers.
#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Stored {
    pub status: String,
    #[serde(default)]
    pub draft_id: Option<i64>,
}

/// The OCS v2 envelope around every answer.
#[derive(Deserialize)]
struct Envelope<T> {
    ocs: Ocs<T>,
}
#[derive(Deserialize)]
struct Ocs<T> {
    data: T,
}
#[derive(Deserialize)]
struct BridgeError {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// How a failed call is read: a send must not call an unknown outcome a failure.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// Reads and drafts: failing again later is harmless.
    Repeatable,
    /// `POST /send`: once the request may have left, the mail may have gone out.
    Sends,
}

/// The client. Holds a connection pool and the bridge's base URL; no credential.
#[derive(Clone)]
pub struct Bridge {
    http: reqwest::Client,
    base: Url,
}

impl Bridge {
    /// `timeout` bounds one bridge call (IMAP searches on big mailboxes and SMTP can be slow).
    pub fn new(nc_url: &Url, timeout: Duration) -> Result<Self, Error> {
        let mut root = nc_url.clone();
        if !root.path().ends_with('/') {
            root.set_path(&format!("{}/", root.path()));
        }
        let base = root
            .join(&format!("{BASE_PATH}/"))
            .map_err(|e| Error::Config(format!("NC_URL cannot be extended to the mail bridge: {e}")))?;
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Bridge { http, base })
    }

    /// The bridge's base URL (for tests and the benchmark).
    pub fn base(&self) -> &Url {
        &self.base
    }

    pub async fn accounts(&self, auth: &HeaderMap) -> Result<Vec<Account>, Error> {
        let a: Accounts = self.get(auth, "accounts", &[]).await?;
        Ok(a.accounts)
    }

    pub async fn mailboxes(&self, auth: &HeaderMap, account_id: i64) -> Result<Vec<Mailbox>, Error> {
        let m: Mailboxes = self.get(auth, &format!("accounts/{account_id}/mailboxes"), &[]).await?;
        Ok(m.mailboxes)
    }

    pub async fn search(&self, auth: &HeaderMap, query: &SearchQuery) -> Result<Vec<Summary>, Error> {
        let m: Messages = self.get(auth, "messages", &query.pairs()).await?;
        Ok(m.messages)
    }

    pub async fn message(&self, auth: &HeaderMap, id: i64) -> Result<Message, Error> {
        self.get(auth, &format!("messages/{id}"), &[]).await
    }

    /// Sends. A failure after the request may have reached the bridge is
    /// [`Error::OutcomeUnknown`], never retryable: the mail may have gone out.
    pub async fn send(&self, auth: &HeaderMap, mail: &Outgoing) -> Result<Stored, Error> {
        self.post(auth, "send", mail, Effect::Sends).await
    }

    pub async fn save_draft(&self, auth: &HeaderMap, mail: &Outgoing) -> Result<Stored, Error> {
        self.post(auth, "drafts", mail, Effect::Repeatable).await
    }

    async fn get<T: DeserializeOwned>(&self, auth: &HeaderMap, path: &str, query: &[(&str, String)]) -> Result<T, Error> {
        let mut url = self.url(path)?;
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        self.send_request(self.request(Method::GET, url, auth), Effect::Repeatable).await
    }

    async fn post<T: DeserializeOwned, B: Serialize>(&self, auth: &HeaderMap, path: &str, body: &B, effect: Effect) -> Result<T, Error> {
        let url = self.url(path)?;
        self.send_request(self.request(Method::POST, url, auth).json(body), effect).await
    }

    fn url(&self, path: &str) -> Result<Url, Error> {
        self.base
            .join(path)
            .map_err(|_| Error::invalid("the request could not be addressed"))
    }

    fn request(&self, method: Method, url: Url, auth: &HeaderMap) -> reqwest::RequestBuilder {
        self.http
            .request(method, url)
            .headers(auth.clone())
            .header("OCS-APIRequest", "true")
            .header(http::header::ACCEPT, "application/json")
    }

    async fn send_request<T: DeserializeOwned>(&self, request: reqwest::RequestBuilder, effect: Effect) -> Result<T, Error> {
        let transport = |e: reqwest::Error| match effect {
            Effect::Repeatable => Error::transport(&e),
            Effect::Sends => Error::send_transport(&e),
        };
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(transport)?;
        answer(status, &bytes, effect)
    }
}

/// Reads one bridge answer: its status (with the bridge's own error code and reason) and then
/// its OCS envelope, as a `T`.
fn answer<T: DeserializeOwned>(status: StatusCode, bytes: &[u8], effect: Effect) -> Result<T, Error> {
    let reason = bridge_error(bytes);
    let failed = match effect {
        Effect::Repeatable => Error::from_status(status, reason.message.as_deref()),
        Effect::Sends => Error::from_send_status(status, reason.error.as_deref(), reason.message.as_deref()),
    };
    if let Some(e) = failed {
        if matches!(e, Error::Retryable(_) | Error::OutcomeUnknown) {
            tracing::warn!(status = i64::from(status.as_u16()), kind = ?e.kind(), "the mail bridge failed");
        }
        return Err(e);
    }
    serde_json::from_slice::<Envelope<T>>(bytes).map(|e| e.ocs.data).map_err(|e| {
        tracing::warn!(error = %e, "the mail bridge answered outside its contract");
        match effect {
            // A 2xx to a send that cannot be read: it most likely went out, but who knows.
            Effect::Sends => Error::OutcomeUnknown,
            Effect::Repeatable => Error::Retryable("the mail bridge gave an unreadable answer".into()),
        }
    })
}

/// Every answer mcp-mail reads from the bridge, for one status and body: each call's reading
/// of it (`accounts`, `mailboxes`, `messages`, `message` with its body as the model reads it,
/// `send`, `drafts`). Public for the `bridge_json` fuzz target (issue #32) only.
#[doc(hidden)]
pub fn read_every_answer(status: u16, body: &[u8]) -> Vec<(&'static str, Result<(), Error>)> {
    let Ok(status) = StatusCode::from_u16(status) else {
        return Vec::new();
    };
    let message = answer::<Message>(status, body, Effect::Repeatable).map(|m| {
        let _ = crate::text::plain(&m.body);
    });
    vec![
        ("accounts", answer::<Accounts>(status, body, Effect::Repeatable).map(drop)),
        ("mailboxes", answer::<Mailboxes>(status, body, Effect::Repeatable).map(drop)),
        ("messages", answer::<Messages>(status, body, Effect::Repeatable).map(drop)),
        ("message", message),
        ("send", answer::<Stored>(status, body, Effect::Sends).map(drop)),
        ("drafts", answer::<Stored>(status, body, Effect::Repeatable).map(drop)),
    ]
}

/// The bridge's own error code and reason in an error envelope, where it gave them.
fn bridge_error(body: &[u8]) -> BridgeError {
    serde_json::from_slice::<Envelope<BridgeError>>(body).map_or(
        BridgeError {
            error: None,
            message: None,
        },
        |e| e.ocs.data,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_keeps_a_subpath() {
        let t = Duration::from_secs(60);
        let b = Bridge::new(&Url::parse("https://cloud.example.com/nextcloud").unwrap(), t).unwrap();
        assert_eq!(
            b.base().as_str(),
            "https://cloud.example.com/nextcloud/ocs/v2.php/apps/tamebi/api/v1/mail/"
        );
        let b = Bridge::new(&Url::parse("http://127.0.0.1:9000/").unwrap(), t).unwrap();
        assert_eq!(
            b.url("messages/7").unwrap().as_str(),
            "http://127.0.0.1:9000/ocs/v2.php/apps/tamebi/api/v1/mail/messages/7"
        );
    }

    #[test]
    fn search_sends_only_given_filters() {
        let q = SearchQuery {
            query: "budget".into(),
            unread: Some(true),
            limit: Some(5),
            ..SearchQuery::default()
        };
        assert_eq!(
            q.pairs(),
            vec![("query", "budget".into()), ("unread", "true".into()), ("limit", "5".into())]
        );
    }

    #[test]
    fn message_decodes_from_the_contract() {
        let raw = serde_json::json!({"ocs": {"meta": {"status": "ok", "statuscode": 200, "message": "OK"}, "data": {
            "id": 3, "account_id": 1, "mailbox_id": 2, "subject": "Hi", "from": [{"label": "Bob", "email": "bob@example.com"}],
            "to": [{"label": null, "email": "alice@example.com"}], "date": "2026-11-30T09:00:00Z", "unread": false,
            "has_attachments": true, "cc": [], "message_id": "<a@b>", "body": {"format": "html", "content": "<p>x</p>"},
            "attachments": [{"name": "a.pdf", "mime_type": "application/pdf", "size": 10}]}}});
        let m: Envelope<Message> = serde_json::from_value(raw).unwrap();
        assert_eq!(m.ocs.data.summary.subject, "Hi");
        assert_eq!(m.ocs.data.body.format, BodyFormat::Html);
        assert_eq!(m.ocs.data.attachments[0].size, 10);
    }

    #[test]
    fn error_envelope_message_is_read() {
        let raw = br#"{"ocs":{"meta":{"status":"failure","statuscode":400,"message":"bad"},"data":{"error":"invalid_request","message":"limit must be between 1 and 50"}}}"#;
        let e = bridge_error(raw);
        assert_eq!(e.message.as_deref(), Some("limit must be between 1 and 50"));
        assert_eq!(e.error.as_deref(), Some("invalid_request"));
        assert_eq!(bridge_error(b"not json").message, None);
    }
}
