//! The tool catalogue: each tool declared once, with rmcp's `#[tool]` attribute (name,
//! description, annotations, MCP Apps `_meta`) on the function that runs it.
//!
//! Five tools are model-visible and read-only: `mail_accounts`, `mail_mailboxes`,
//! `mail_search`, `mail_read` and `mail_compose` (which sends nothing and saves nothing: it
//! returns the exact message for the compose app to show). Two are app-only and destructive:
//! `mail_send` and `mail_save_draft`, declared with `_meta.ui.visibility: ["app"]` so they
//! are structurally absent from the model's tool list; the orchestrator reaches them only
//! through its dispatch door, after the person confirmed in the island (seed: "cannot send
//! mail"). Adding a model-visible tool that sends, forwards or drafts re-opens the
//! confused-deputy hole an injected mail would use.
//!
//! Failures are tool results with `isError: true` (see [`crate::error`]).

use http::HeaderMap;
use mcp_resource_server::{mcp, schema, tool_result};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, JsonObject, MetaObject};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{schemars, tool, tool_router};
use serde::{Deserialize, Serialize};

use crate::apps::COMPOSE;
use crate::bridge::{Account, Attachment, Bridge, Mailbox, SearchQuery, Summary};
use crate::compose::{self, Composed, MailArgs, Purpose};
use crate::error::Error;

/// Largest `limit` mail_search accepts (the bridge's own maximum).
pub const MAX_SEARCH_LIMIT: u32 = 50;

/// The tools, bound to the bridge client. Holds no credential: each call takes the caller's
/// `Authorization` header from its request.
#[derive(Clone)]
pub struct MailTools {
    bridge: Bridge,
    /// The router `#[tool_router]` builds from the declarations below; built once.
    pub(crate) tool_router: ToolRouter<MailTools>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MailboxesArgs {
    /// The account's id, from mail_accounts.
    pub account_id: i64,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words that must all appear in the subject or body ("" lists the newest messages).
    #[serde(default)]
    pub query: String,
    /// Only this mailbox (an id from mail_mailboxes); omitted = all the user's mailboxes.
    #[serde(default)]
    pub mailbox_id: Option<i64>,
    /// Only messages from this sender (address or part of it).
    #[serde(default)]
    pub from: Option<String>,
    /// Only messages to this recipient (address or part of it).
    #[serde(default)]
    pub to: Option<String>,
    /// Only messages on or after this date (YYYY-MM-DD or RFC 3339).
    #[serde(default)]
    pub since: Option<String>,
    /// Only messages before this date (YYYY-MM-DD or RFC 3339).
    #[serde(default)]
    pub until: Option<String>,
    /// true = only unread messages, false = only read ones.
    #[serde(default)]
    pub unread: Option<bool>,
    /// How many messages, newest first (1 to 50, default 20).
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The message's id, from mail_search.
    pub message_id: i64,
}

/// mail_read's structured answer: the message as plain text.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ReadMessage {
    #[serde(flatten)]
    pub summary: Summary,
    pub cc: Vec<crate::bridge::Addr>,
    pub message_id: Option<String>,
    /// The Message-ID this mail answers, if it is a reply.
    pub in_reply_to: Option<String>,
    /// The body as plain text (HTML converted).
    pub text: String,
    pub attachments: Vec<Attachment>,
}

/// `_meta.ui` of a tool: the app that renders it, and who may call it.
fn ui_meta(resource_uri: Option<&str>, visibility: &[&str]) -> MetaObject {
    let mut ui = JsonObject::new();
    if let Some(uri) = resource_uri {
        ui.insert("resourceUri".into(), uri.into());
    }
    ui.insert(
        "visibility".into(),
        visibility.iter().map(|s| serde_json::Value::from(*s)).collect(),
    );
    let mut meta = JsonObject::new();
    meta.insert("ui".into(), serde_json::Value::Object(ui));
    MetaObject(meta)
}

#[tool_router(vis = "pub")]
impl MailTools {
    #[tool(
        name = "mail_accounts",
        description = "List the user's mail accounts in Nextcloud Mail (id, name, address). The id is what the other mail tools take as account_id.",
        annotations(
            title = "Mail accounts",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub async fn mail_accounts(&self, ctx: RequestContext<RoleServer>) -> CallToolResult {
        self.run("mail_accounts", &ctx, |bridge, auth| async move {
            let accounts = bridge.accounts(&auth).await?;
            let lines: Vec<String> = accounts.iter().map(|a| format!("{}: {} <{}>", a.id, a.name, a.email)).collect();
            let text = if lines.is_empty() {
                "No mail account is set up in Nextcloud Mail.".to_string()
            } else {
                lines.join("\n")
            };
            output(text, &serde_json::json!({ "accounts": accounts }))
        })
        .await
    }

    #[tool(
        name = "mail_mailboxes",
        description = "List the mailboxes (folders) of one of the user's mail accounts, with unread and total counts.",
        annotations(
            title = "Mailboxes",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub async fn mail_mailboxes(&self, Parameters(args): Parameters<MailboxesArgs>, ctx: RequestContext<RoleServer>) -> CallToolResult {
        self.run("mail_mailboxes", &ctx, |bridge, auth| async move {
            let boxes: Vec<Mailbox> = bridge.mailboxes(&auth, args.account_id).await?;
            let text = boxes
                .iter()
                .map(|m| format!("{}: {} ({} unread of {})", m.id, m.name, m.unread, m.total))
                .collect::<Vec<_>>()
                .join("\n");
            output(text, &serde_json::json!({ "mailboxes": boxes }))
        })
        .await
    }

    #[tool(
        name = "mail_search",
        description = "Search the user's mail, newest first. `query` matches subject and body; from, to, since, until, unread and mailbox_id narrow it. Returns message ids for mail_read.",
        annotations(
            title = "Search mail",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub async fn mail_search(&self, Parameters(args): Parameters<SearchArgs>, ctx: RequestContext<RoleServer>) -> CallToolResult {
        self.run("mail_search", &ctx, |bridge, auth| async move {
            let query = search_query(args)?;
            let found = bridge.search(&auth, &query).await?;
            let text = if found.is_empty() {
                "No messages match.".to_string()
            } else {
                found.iter().map(summary_line).collect::<Vec<_>>().join("\n")
            };
            output(text, &serde_json::json!({ "messages": found }))
        })
        .await
    }

    #[tool(
        name = "mail_read",
        description = "Read one message by its id (from mail_search): headers, the body as plain text (HTML converted), and attachments by name, type and size.",
        annotations(
            title = "Read a message",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    pub async fn mail_read(&self, Parameters(args): Parameters<ReadArgs>, ctx: RequestContext<RoleServer>) -> CallToolResult {
        self.run("mail_read", &ctx, |bridge, auth| async move {
            let m = bridge.message(&auth, args.message_id).await?;
            let read = ReadMessage {
                text: crate::text::plain(&m.body),
                summary: m.summary,
                cc: m.cc,
                message_id: m.message_id,
                in_reply_to: m.in_reply_to,
                attachments: m.attachments,
            };
            output(message_text(&read), &read)
        })
        .await
    }

    #[tool(
        name = "mail_compose",
        description = "Prepare a plain-text mail for the person to review. Nothing is transmitted or stored: it checks the addresses and shows the person the exact message, and only the person decides what happens to it. Use in_reply_to (a message id) for an answer.",
        annotations(title = "Compose a mail", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        meta = ui_meta(Some(COMPOSE), &["model", "app"])
    )]
    pub async fn mail_compose(&self, Parameters(args): Parameters<MailArgs>, ctx: RequestContext<RoleServer>) -> CallToolResult {
        self.run("mail_compose", &ctx, |bridge, auth| async move {
            compose::validate(&args, Purpose::Send)?;
            let from = sender(&bridge, &auth, args.account_id).await?;
            let mail = compose::composed(&args, from);
            let text = format!(
                "The mail is shown to the person for review; nothing was sent or saved. Only the person can send it.\n{}",
                composed_text(&mail)
            );
            let mut out = output(text, &mail)?;
            out.meta = Some(ui_meta(Some(COMPOSE), &["model", "app"]));
            Ok(out)
        })
        .await
    }

    #[tool(
        name = "mail_send",
        description = "Send a plain-text mail exactly as given. App-only: called by the compose app after the person confirmed. An error of kind outcome_unknown means the mail may have gone out: never send it again without checking the Sent folder.",
        annotations(title = "Send a mail", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true),
        meta = ui_meta(None, &["app"])
    )]
    pub async fn mail_send(&self, Parameters(args): Parameters<MailArgs>, ctx: RequestContext<RoleServer>) -> CallToolResult {
        self.run("mail_send", &ctx, |bridge, auth| async move {
            compose::validate(&args, Purpose::Send)?;
            let from = sender(&bridge, &auth, args.account_id).await?;
            let stored = bridge.send(&auth, &compose::outgoing(&args, from.account_id)).await?;
            output(format!("Sent from {} to {}.", from.email, args.to.join(", ")), &stored)
        })
        .await
    }

    #[tool(
        name = "mail_save_draft",
        description = "Save a plain-text mail as a draft in the user's Drafts mailbox. App-only: called by the compose app after the person confirmed.",
        annotations(title = "Save a draft", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false),
        meta = ui_meta(None, &["app"])
    )]
    pub async fn mail_save_draft(&self, Parameters(args): Parameters<MailArgs>, ctx: RequestContext<RoleServer>) -> CallToolResult {
        self.run("mail_save_draft", &ctx, |bridge, auth| async move {
            compose::validate(&args, Purpose::Draft)?;
            let from = sender(&bridge, &auth, args.account_id).await?;
            let stored = bridge.save_draft(&auth, &compose::outgoing(&args, from.account_id)).await?;
            output(format!("Saved as a draft in {}.", from.email), &stored)
        })
        .await
    }
}

impl MailTools {
    pub fn new(bridge: Bridge) -> Self {
        let mut tool_router = Self::tool_router();
        // Every published schema in standard JSON Schema only (no schemars `int64` formats).
        schema::standard_schemas(&mut tool_router);
        MailTools { bridge, tool_router }
    }

    /// Runs one tool body with the caller's own `Authorization` header (the shared auth gate
    /// put the caller into the request); every failure becomes an error result.
    async fn run<F, Fut>(&self, name: &'static str, ctx: &RequestContext<RoleServer>, body: F) -> CallToolResult
    where
        F: FnOnce(Bridge, HeaderMap) -> Fut,
        Fut: Future<Output = Result<CallToolResult, Error>>,
    {
        let Some(caller) = mcp::caller(ctx) else {
            return error_result(&Error::AuthExpired);
        };
        tracing::info!(tool = name, uid = caller.uid(), "tool call");
        let span = mcp::tool_span(ctx, name);
        let result = tracing::Instrument::instrument(body(self.bridge.clone(), caller.bearer().headers()), span.clone()).await;
        match result {
            Ok(r) => r,
            Err(e) => {
                span.record("error.type", "tool_error");
                error_result(&e)
            }
        }
    }
}

/// The account a mail goes out from: the one named (if it is the caller's), else the first.
async fn sender(bridge: &Bridge, auth: &HeaderMap, account_id: Option<i64>) -> Result<compose::Sender, Error> {
    let accounts: Vec<Account> = bridge.accounts(auth).await?;
    let account = match account_id {
        Some(id) => accounts.into_iter().find(|a| a.id == id).ok_or(Error::NotFound)?,
        None => accounts
            .into_iter()
            .next()
            .ok_or_else(|| Error::invalid("no mail account is set up in Nextcloud Mail for this user"))?,
    };
    Ok(compose::Sender {
        account_id: account.id,
        name: account.name,
        email: account.email,
    })
}

fn search_query(args: SearchArgs) -> Result<SearchQuery, Error> {
    if let Some(limit) = args.limit
        && !(1..=MAX_SEARCH_LIMIT).contains(&limit)
    {
        return Err(Error::invalid(format!("limit must be between 1 and {MAX_SEARCH_LIMIT}")));
    }
    if args.query.chars().count() > 500 {
        return Err(Error::invalid("query is longer than 500 characters"));
    }
    // The bridge turns these into Mail's `from:`/`to:` search tokens: one word each.
    for (name, value) in [("from", &args.from), ("to", &args.to)] {
        if value.as_deref().is_some_and(|v| v.contains(char::is_whitespace) || v.contains(':')) {
            return Err(Error::invalid(format!("{name} takes one word or address, without spaces or ':'")));
        }
    }
    Ok(SearchQuery {
        query: args.query,
        mailbox_id: args.mailbox_id,
        from: args.from,
        to: args.to,
        since: args.since,
        until: args.until,
        unread: args.unread,
        limit: args.limit,
    })
}

fn addr_list(list: &[crate::bridge::Addr]) -> String {
    list.iter()
        .map(|a| match &a.label {
            Some(l) if !l.is_empty() => format!("{l} <{}>", a.email),
            _ => a.email.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn summary_line(s: &Summary) -> String {
    let marks: Vec<&str> = [(s.unread, "unread"), (s.answered, "answered"), (s.has_attachments, "attachments")]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
    let flags = if marks.is_empty() {
        String::new()
    } else {
        format!(" [{}]", marks.join(", "))
    };
    format!("{}: {} — from {} — {}{flags}", s.id, s.subject, addr_list(&s.from), s.date)
}

fn message_text(m: &ReadMessage) -> String {
    let mut t = format!("From: {}\nTo: {}\n", addr_list(&m.summary.from), addr_list(&m.summary.to));
    if !m.cc.is_empty() {
        t.push_str(&format!("Cc: {}\n", addr_list(&m.cc)));
    }
    t.push_str(&format!("Date: {}\nSubject: {}\n\n{}\n", m.summary.date, m.summary.subject, m.text));
    if !m.attachments.is_empty() {
        t.push_str("\nAttachments:\n");
        for a in &m.attachments {
            t.push_str(&format!("- {} ({}, {} bytes)\n", a.name, a.mime_type, a.size));
        }
    }
    t
}

fn composed_text(m: &Composed) -> String {
    let mail = &m.mail;
    let mut t = format!("From: {} <{}>\nTo: {}\n", m.from.name, m.from.email, mail.to.join(", "));
    if !mail.cc.is_empty() {
        t.push_str(&format!("Cc: {}\n", mail.cc.join(", ")));
    }
    if !mail.bcc.is_empty() {
        t.push_str(&format!("Bcc: {}\n", mail.bcc.join(", ")));
    }
    t.push_str(&format!("Subject: {}\n\n{}", mail.subject, mail.body));
    t
}

fn output<T: Serialize>(text: String, value: &T) -> Result<CallToolResult, Error> {
    let structured = serde_json::to_value(value).map_err(|_| Error::Retryable("the answer could not be encoded".into()))?;
    Ok(tool_result::success(text, structured))
}

/// A failed tool call, in the shape every Tamebi MCP server uses.
pub fn error_result(e: &Error) -> CallToolResult {
    tool_result::error(e.kind(), &e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<rmcp::model::Tool> {
        MailTools::tool_router().list_all()
    }

    fn visibility(t: &rmcp::model::Tool) -> Vec<String> {
        t.meta
            .as_ref()
            .and_then(|m| m.0.get("ui"))
            .and_then(|u| u.get("visibility"))
            .and_then(|v| v.as_array())
            .map(|v| v.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    }

    #[test]
    fn model_tools_read_only_and_app_tools_destructive() {
        let mut model = Vec::new();
        let mut app_only = Vec::new();
        for t in tools() {
            let a = t.annotations.clone().unwrap_or_default();
            let vis = visibility(&t);
            if vis.iter().any(|v| v == "model") || vis.is_empty() {
                assert_eq!((a.read_only_hint, a.destructive_hint), (Some(true), Some(false)), "{}", t.name);
                model.push(t.name.to_string());
            } else {
                assert_eq!(vis, ["app"], "{}", t.name);
                assert_eq!((a.read_only_hint, a.destructive_hint), (Some(false), Some(true)), "{}", t.name);
                app_only.push(t.name.to_string());
            }
        }
        assert_eq!(
            model,
            ["mail_accounts", "mail_compose", "mail_mailboxes", "mail_read", "mail_search"]
        );
        assert_eq!(app_only, ["mail_save_draft", "mail_send"]);
    }

    #[test]
    fn compose_names_its_app() {
        let t = tools().into_iter().find(|t| t.name == "mail_compose").unwrap();
        let meta = serde_json::to_value(t.meta.unwrap()).unwrap();
        assert_eq!(meta["ui"]["resourceUri"], COMPOSE);
    }

    #[test]
    fn search_limit_is_checked() {
        let e = search_query(SearchArgs {
            limit: Some(51),
            ..SearchArgs::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("between 1 and 50"));
        assert!(
            search_query(SearchArgs {
                limit: Some(0),
                ..SearchArgs::default()
            })
            .is_err()
        );
        assert_eq!(search_query(SearchArgs::default()).unwrap(), SearchQuery::default());
        let two_words = SearchArgs {
            from: Some("Bob Baker".into()),
            ..SearchArgs::default()
        };
        assert!(search_query(two_words).unwrap_err().to_string().contains("one word"));
    }

    #[test]
    fn summary_line_names_the_flags() {
        let s = |unread, answered, has_attachments| Summary {
            id: 7,
            account_id: 1,
            mailbox_id: 1,
            subject: "Hi".into(),
            from: vec![],
            to: vec![],
            date: "2026-11-30T09:00:00Z".into(),
            unread,
            answered,
            has_attachments,
        };
        assert!(summary_line(&s(false, false, false)).ends_with("2026-11-30T09:00:00Z"));
        assert!(summary_line(&s(true, true, true)).ends_with("[unread, answered, attachments]"));
        assert!(summary_line(&s(false, true, false)).ends_with("[answered]"));
    }

    #[test]
    fn read_text_lists_attachments() {
        let m = ReadMessage {
            summary: Summary {
                id: 1,
                account_id: 1,
                mailbox_id: 1,
                subject: "Q3".into(),
                from: vec![crate::bridge::Addr {
                    label: Some("Bob".into()),
                    email: "bob@example.com".into(),
                }],
                to: vec![],
                date: "2026-11-30T09:00:00Z".into(),
                unread: true,
                answered: false,
                has_attachments: true,
            },
            cc: vec![],
            message_id: None,
            in_reply_to: None,
            text: "numbers".into(),
            attachments: vec![Attachment {
                name: "q3.pdf".into(),
                mime_type: "application/pdf".into(),
                size: 1234,
            }],
        };
        let t = message_text(&m);
        assert!(t.contains("From: Bob <bob@example.com>"));
        assert!(t.contains("- q3.pdf (application/pdf, 1234 bytes)"));
    }
}
