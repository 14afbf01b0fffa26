//! The tool catalogue: one declaration per tool. Each tool is one `#[tool]` function in its
//! domain's module (files, calendar, contacts, deck), inside that module's `#[tool_router]`
//! block; rmcp's macros turn the attribute into the definition (name, title, description,
//! schemas, annotations, MCP Apps `_meta`) and the function into the dispatch, so the two
//! cannot drift apart. [`Tools`] joins the modules' routers once, at startup.
//!
//! # Adding a tool
//! Write one function in the `#[tool_router]` block of its domain's module:
//! ```ignore
//! #[tool(
//!     name = "files_stat", title = "File details",
//!     description = "What the model reads to decide when to call it.",
//!     input_schema = input::<FilesStatArgs>(), output_schema = output::<FileEntry>(),
//!     annotations(title = "File details", read_only_hint = true, destructive_hint = false,
//!                 idempotent_hint = true, open_world_hint = false),
//! )]
//! async fn files_stat(&self, caller: Caller, Parameters(args): Parameters<FilesStatArgs>) -> Result<Output, Error> {
//!     let s = self.session(&caller);
//!     // … ask Nextcloud as the caller, shape the answer …
//!     Output::new("one line for people", &entry)
//! }
//! ```
//! The arguments are a `Deserialize + JsonSchema` struct in [`args`] (its doc comments become
//! the schema's descriptions); `caller` is the request's verified caller, put there by the
//! auth gate; a bad argument is refused with `invalid_argument` before the function runs.
//! `input_schema`/`output_schema` name the types explicitly because rmcp's defaults strip the
//! schema's title and use the serialize contract: published schemas are fingerprinted by the
//! orchestrator, and a changed one quarantines the tool. `tests/tools_list.rs` pins them all.
//! A new domain module adds its router to [`Tools::new`].
//!
//! # Annotations
//! They are as true as they can be: the orchestrator derives approval from them (G3) and
//! fails closed when they are absent, so a tool with an effect must never claim
//! `readOnlyHint`. MCP defines `destructiveHint: false` as "performs only additive updates";
//! nothing this server writes is additive in that sense (a write can replace content, a move
//! changes where things are, a new event or card lands where other people see it), so every
//! tool that is not read-only says `destructiveHint: true` and G3 asks before each call. Reads
//! say `readOnlyHint: true, destructiveHint: false, idempotentHint: true`; every tool says
//! `openWorldHint: false`. The tests below hold every tool to this.
//!
//! Deliberate omissions, not gaps: there is no public-link tool, no share tool, no delete
//! tool and no mail tool in this server. A public link turns read access into exfiltration in
//! one call; sharing and deleting are the same kind of effect; mail lives elsewhere and is sent
//! only by a human click. Adding any of them re-opens the confused-deputy hole.
//!
//! Failures are tool results with `isError: true`, a clear text, and
//! `structuredContent: {"error": {"kind", "message"}}` (see [`crate::output`]).

pub mod args;
pub mod calendar;
pub mod contacts;
pub mod convert;
pub mod deck;
pub mod files;

use std::sync::Arc;

use mcp_resource_server::{Caller, arguments, mcp, schema, tool_result};
use rmcp::handler::server::common::schema_for_type;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, JsonObject, MetaObject, Tool};
use rmcp::schemars::JsonSchema;
use rmcp::service::{RequestContext, RoleServer};

use crate::convert::Converter;
use crate::error::Error;
use crate::index::Index;
use crate::nextcloud::{Nextcloud, Session};
use crate::output::error_result;

/// Every tool, and what they act through. Built once per process; holds no credential.
pub struct Tools {
    nextcloud: Arc<Nextcloud>,
    index: Index,
    /// The document server behind files_convert, when one is configured.
    converter: Option<Arc<Converter>>,
    router: ToolRouter<Tools>,
}

impl Tools {
    /// Without a `converter`, files_convert is not offered at all (not listed, not callable).
    pub fn new(nextcloud: Arc<Nextcloud>, index: Index, converter: Option<Arc<Converter>>) -> Self {
        let mut router = Self::files_router() + Self::calendar_router() + Self::contacts_router() + Self::deck_router();
        if converter.is_some() {
            router += Self::convert_router();
        }
        // Every published schema in standard JSON Schema only (no schemars `uint64` formats).
        schema::standard_schemas(&mut router);
        Tools {
            nextcloud,
            index,
            converter,
            router,
        }
    }

    /// Every tool's definition (rmcp lists them sorted by name).
    pub fn definitions(&self) -> Vec<Tool> {
        self.router.list_all()
    }

    /// One tool's definition by name, built at startup like all of them.
    pub fn definition(&self, name: &str) -> Option<Tool> {
        self.router.get(name).cloned()
    }

    /// Runs the tool `request` names, as the caller the auth gate attached to `context`.
    /// Never fails at the protocol level: every failure is a tool result with `isError: true`.
    pub async fn call(&self, mut request: CallToolRequestParams, context: RequestContext<RoleServer>) -> CallToolResult {
        if mcp::caller(&context).is_none() {
            return error_result(&Error::AuthExpired);
        }
        let Some(tool) = self.router.get(&request.name) else {
            return error_result(&Error::invalid(format!("there is no tool named {:?}", request.name.as_ref())));
        };
        // `"limit": "5"` reads as 5 where the published schema says integer.
        arguments::integers_from_strings(tool, &mut request);
        match self.router.call(ToolCallContext::new(self, request, context)).await {
            Ok(CallToolResponse::Complete(result)) => with_error_shape(result),
            Ok(_) => error_result(&Error::Retryable("the tool gave an answer of an unexpected kind".into())),
            Err(e) => error_result(&Error::invalid(e.message.into_owned())),
        }
    }

    /// The caller's view of Nextcloud for one call.
    fn session<'a>(&'a self, caller: &'a Caller) -> Session<'a> {
        self.nextcloud.session(caller)
    }
}

/// Our tools always answer with a structured error; the one failure rmcp answers itself,
/// unreadable arguments, gets the same shape (`invalid_argument`) and the same words as
/// every other refusal.
fn with_error_shape(result: CallToolResult) -> CallToolResult {
    match tool_result::unshaped_error(&result) {
        Some(text) => error_result(&Error::invalid(tool_result::unreadable_arguments(text))),
        None => result,
    }
}

/// A tool's input schema: the argument type's schema as it is (title included).
fn input<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_type::<T>()
}

/// A tool's output schema: the answer type's schema as it is (title included).
fn output<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_type::<T>()
}

/// `_meta.ui`: the MCP App (`ui://…` resource) a host renders the tool's result in.
fn app(resource_uri: &str) -> MetaObject {
    ui(serde_json::json!({ "resourceUri": resource_uri }))
}

/// `_meta.ui.visibility`: who may call the tool (`model`, `app`).
fn visible_to(who: &[&str]) -> MetaObject {
    ui(serde_json::json!({ "visibility": who }))
}

fn ui(ui: serde_json::Value) -> MetaObject {
    let mut meta = JsonObject::new();
    meta.insert("ui".into(), ui);
    MetaObject(meta)
}

#[cfg(test)]
mod tests {
    use rmcp::model::ContentBlock;

    use super::*;

    fn tools() -> Tools {
        let nc = Nextcloud::new(
            url::Url::parse("http://127.0.0.1:9/").unwrap(),
            crate::config::DEFAULT_NEXTCLOUD_TIMEOUT,
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let docserver = crate::config::DocServerConfig {
            url: url::Url::parse("http://127.0.0.1:9/").unwrap(),
            jwt_secret: "0123456789abcdef".into(),
            loan_bind: "127.0.0.1:0".parse().unwrap(),
            loan_base_url: url::Url::parse("http://127.0.0.1:9/").unwrap(),
            loan_ttl: std::time::Duration::from_secs(60),
        };
        let converter = Arc::new(Converter::new(&docserver).unwrap());
        Tools::new(Arc::new(nc), Index::open(&dir.path().join("index.db")).unwrap(), Some(converter))
    }

    #[test]
    fn files_convert_is_offered_only_with_a_document_server() {
        let nc = Nextcloud::new(
            url::Url::parse("http://127.0.0.1:9/").unwrap(),
            crate::config::DEFAULT_NEXTCLOUD_TIMEOUT,
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let without = Tools::new(Arc::new(nc), Index::open(&dir.path().join("index.db")).unwrap(), None);
        assert!(without.definition("files_convert").is_none());
        assert!(without.definitions().iter().all(|t| t.name != "files_convert"));
        assert!(tools().definition("files_convert").is_some());
    }

    /// G3 rests on these: per MCP, `destructiveHint: false` means "only additive updates".
    /// Every tool here is either a pure read or a write that is not additive (replaces,
    /// moves, or lands where others see it), so it must never claim to be non-destructive.
    #[test]
    fn every_write_is_annotated_destructive() {
        let mut writes = Vec::new();
        for t in tools().definitions() {
            let a = t.annotations.clone().unwrap_or_default();
            match a.read_only_hint {
                Some(true) => assert_eq!(a.destructive_hint, Some(false), "{} reads only", t.name),
                _ => {
                    assert_eq!(a.read_only_hint, Some(false), "{} must state readOnlyHint", t.name);
                    assert_eq!(a.destructive_hint, Some(true), "{} writes and must be destructive", t.name);
                    writes.push((t.name.to_string(), a.idempotent_hint));
                }
            }
        }
        writes.sort();
        let expected = [
            ("calendar_create_event", Some(false)),
            ("deck_create_card", Some(false)),
            ("deck_move_card", Some(true)),
            ("files_convert", Some(false)),
            ("files_move", Some(false)),
            ("files_write", Some(true)),
        ]
        .map(|(n, i)| (n.to_string(), i));
        assert_eq!(writes, expected);
    }

    #[test]
    fn every_tool_has_one_title_and_an_object_schema() {
        let tools = tools();
        let all = tools.definitions();
        assert_eq!(all.len(), 16);
        for t in &all {
            let a = t.annotations.clone().unwrap_or_default();
            assert_eq!(a.title, t.title, "{}: the annotation title is the tool title", t.name);
            assert_eq!(a.open_world_hint, Some(false), "{}", t.name);
            assert_eq!(t.input_schema.get("type"), Some(&serde_json::json!("object")), "{}", t.name);
            assert!(t.output_schema.is_some(), "{}", t.name);
            assert_eq!(tools.definition(&t.name).as_ref(), Some(t));
        }
        assert!(tools.definition("files_share").is_none());
    }

    #[test]
    fn unreadable_arguments_get_the_error_shape() {
        let rmcp = CallToolResult::error(vec![ContentBlock::text("failed to deserialize parameters: missing field `path`")]);
        let ours = with_error_shape(rmcp);
        assert_eq!(ours.is_error, Some(true));
        let s = ours.structured_content.unwrap();
        assert_eq!(s["error"]["kind"], "invalid_argument");
        assert_eq!(s["error"]["message"], "invalid arguments: missing field `path`");
        let fine = crate::output::Output::new("ok", &serde_json::json!({"a": 1}))
            .unwrap()
            .into_result();
        assert_eq!(with_error_shape(fine.clone()), fine);
    }
}
