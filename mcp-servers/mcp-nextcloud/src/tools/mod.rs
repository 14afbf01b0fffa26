//! The tool catalogue: every tool's definition (name, argument schema, output schema,
//! annotations, MCP Apps metadata) and the one dispatch from a name to its function.
//! Register new tools in [`definitions`] and [`call`]; nowhere else.
//!
//! Annotations are as true as they can be: the orchestrator derives approval from them (G3)
//! and fails closed when they are absent, so a tool with an effect must never claim
//! `readOnlyHint`.
//!
//! Deliberate omissions, not gaps: there is no public-link tool, no share tool, no delete
//! tool and no mail tool in this server. A public link turns read access into exfiltration in
//! one call; sharing and deleting are the same kind of effect; mail lives elsewhere and is sent
//! only by a human click. Adding any of them re-opens the confused-deputy hole.
//!
//! Failures are tool results with `isError: true`, a clear text, and
//! `structuredContent: {"error": {"kind", "message"}}` (see [`crate::error`]).

pub mod args;
pub mod calendar;
pub mod contacts;
pub mod deck;
pub mod files;

use std::sync::Arc;

use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, MetaObject, Tool, ToolAnnotations};
use serde::Serialize;

use crate::apps;
use crate::error::Error;
use crate::index::Index;
use crate::nextcloud::Nextcloud;
use mcp_resource_server::Caller;

/// A successful tool answer: a short human-readable text and the structured rows.
pub struct Output {
    pub text: String,
    pub structured: serde_json::Value,
}

impl Output {
    pub fn new<T: Serialize>(text: impl Into<String>, value: &T) -> Result<Self, Error> {
        let structured = serde_json::to_value(value).map_err(|_| Error::Retryable("the answer could not be encoded".into()))?;
        Ok(Output {
            text: text.into(),
            structured,
        })
    }
}

/// Effect class of a tool, turned into MCP annotations.
///
/// MCP defines `destructiveHint: false` as "performs only additive updates". Nothing this
/// server writes is additive in that sense: a write can replace content, a move changes
/// where things are, and a new event or card lands in calendars and boards other people
/// see. So every tool that is not read-only says `destructiveHint: true`, and G3 asks the
/// user before each call (a non-destructive, idempotent tool would run without asking).
#[derive(Clone, Copy)]
enum Effect {
    /// Reads only.
    Read,
    /// Changes the user's data or what others see: replaces, moves, or adds to shared space.
    Write { idempotent: bool },
}
fn annotations(title: &str, effect: Effect) -> ToolAnnotations {
    let a = ToolAnnotations::with_title(title).open_world(false);
    match effect {
        Effect::Read => a.read_only(true).destructive(false).idempotent(true),
        Effect::Write { idempotent } => a.read_only(false).destructive(true).idempotent(idempotent),
    }
}

fn ui_meta(resource_uri: Option<&str>, visibility: Option<&[&str]>) -> Option<MetaObject> {
    if resource_uri.is_none() && visibility.is_none() {
        return None;
    }
    let mut ui = serde_json::Map::new();
    if let Some(uri) = resource_uri {
        ui.insert("resourceUri".into(), uri.into());
    }
    if let Some(v) = visibility {
        ui.insert("visibility".into(), v.iter().map(|s| serde_json::Value::from(*s)).collect());
    }
    let mut meta = JsonObject::new();
    meta.insert("ui".into(), serde_json::Value::Object(ui));
    Some(MetaObject(meta))
}

fn tool<A: schemars::JsonSchema + 'static, O: schemars::JsonSchema + 'static>(
    name: &'static str,
    title: &str,
    description: &'static str,
    effect: Effect,
    app: Option<&str>,
    visibility: Option<&[&str]>,
) -> Tool {
    let mut t = Tool::new(name, description, schema_for_type::<A>())
        .with_title(title)
        .with_annotations(annotations(title, effect))
        .with_raw_output_schema(schema_for_type::<O>());
    if let Some(meta) = ui_meta(app, visibility) {
        t = t.with_meta(meta);
    }
    t
}

use rmcp::schemars;

/// Every tool this server offers, in a stable order.
pub fn definitions() -> Vec<Tool> {
    use args::*;
    vec![
        tool::<FilesListArgs, files::Listing>(
            "files_list",
            "List a folder",
            "List the files and folders in one of the user's folders. `path` is relative to the user's own root ('' for the root). Each row carries the path and file_id the other file tools take.",
            Effect::Read,
            Some(apps::FILES_TABLE),
            None,
        ),
        tool::<FilesReadArgs, files::ReadResult>(
            "files_read",
            "Read a file",
            "Read a file's text by `path` or `file_id`. HTML, Markdown, plain text, PDF, DOCX and ODT come back as text; images and other binaries are described, not shown. Long files are paged: pass the returned `next_offset` as `offset`.",
            Effect::Read,
            None,
            None,
        ),
        tool::<FilesFindArgs, files::Listing>(
            "files_find",
            "Find files by name",
            "Find files and folders whose name matches `pattern` (`*` is a wildcard; without one, names containing the pattern match). Optional `path` limits the search to a folder.",
            Effect::Read,
            Some(apps::FILES_TABLE),
            None,
        ),
        tool::<crate::index::tool::FilesGrepArgs, crate::index::tool::GrepOutput>(
            crate::index::tool::NAME,
            crate::index::tool::TITLE,
            crate::index::tool::DESCRIPTION,
            Effect::Read,
            None,
            None,
        ),
        tool::<FilesWriteArgs, files::WriteResult>(
            "files_write",
            "Write a text file",
            "Create a text file or replace its content. Replacing is destructive; pass `overwrite: false` to refuse when the file exists.",
            Effect::Write { idempotent: true },
            None,
            None,
        ),
        tool::<FilesMoveArgs, files::MoveResult>(
            "files_move",
            "Move or rename",
            "Move or rename a file or folder. Refuses to replace an existing target unless `overwrite: true`.",
            Effect::Write { idempotent: false },
            None,
            None,
        ),
        tool::<NoArgs, calendar::CalendarList>(
            "calendar_list",
            "List calendars",
            "List the user's calendars with their id, name and color. The id is what `calendar` takes in the other calendar tools.",
            Effect::Read,
            None,
            None,
        ),
        tool::<CalendarEventsArgs, calendar::EventList>(
            "calendar_events",
            "Events in a range",
            "Events between `from` and `to` (ISO dates or date-times; a date `to` includes that whole day), recurring events expanded. Times are UTC (RFC 3339) with the original time zone; anything that could not be handled is listed in `warnings`. Optional `calendar` limits to one calendar.",
            Effect::Read,
            Some(apps::CALENDAR_WEEK),
            None,
        ),
        tool::<CalendarEventGetArgs, calendar::EventDetails>(
            "calendar_event_get",
            "Event details",
            "One event's details by the `href` returned by calendar_events.",
            Effect::Read,
            None,
            Some(&["model", "app"]),
        ),
        tool::<CalendarCreateArgs, calendar::Created>(
            "calendar_create_event",
            "Create an event",
            "Create an event in one of the user's calendars. `start` and `end` are ISO date-times (with offset, or UTC) or, for an all-day event, dates.",
            Effect::Write { idempotent: false },
            None,
            None,
        ),
        tool::<ContactsSearchArgs, contacts::ContactList>(
            "contacts_search",
            "Search contacts",
            "Search the user's address books: contacts whose name, email or organisation contains `query`.",
            Effect::Read,
            None,
            None,
        ),
        tool::<NoArgs, deck::BoardList>(
            "deck_boards",
            "List Deck boards",
            "List the Deck boards the user can see, with their ids.",
            Effect::Read,
            None,
            None,
        ),
        tool::<DeckBoardArgs, deck::Board>(
            "deck_board",
            "A Deck board",
            "One Deck board's stacks with their cards (ids, titles, descriptions, due dates).",
            Effect::Read,
            None,
            None,
        ),
        tool::<DeckCreateCardArgs, deck::CardCreated>(
            "deck_create_card",
            "Create a Deck card",
            "Create a card in a stack of a Deck board.",
            Effect::Write { idempotent: false },
            None,
            None,
        ),
        tool::<DeckMoveCardArgs, deck::CardMoved>(
            "deck_move_card",
            "Move a Deck card",
            "Move a card to another stack of the same board.",
            Effect::Write { idempotent: true },
            None,
            None,
        ),
    ]
}

/// One tool's definition by name.
pub fn definition(name: &str) -> Option<Tool> {
    definitions().into_iter().find(|t| t.name == name)
}

/// Runs tool `name` with `arguments` as `caller`. Never fails at the protocol level:
/// every failure is a tool result with `isError: true`.
pub async fn call(nc: &Arc<Nextcloud>, index: &Index, caller: &Caller, name: &str, arguments: JsonObject) -> CallToolResult {
    let session = nc.session(caller);
    let s = &session;
    let a = arguments;
    let outcome = match name {
        "files_list" => match args::parse(a) {
            Ok(x) => files::list(s, x).await,
            Err(e) => Err(e),
        },
        "files_read" => match args::parse(a) {
            Ok(x) => files::read(s, x).await,
            Err(e) => Err(e),
        },
        "files_find" => match args::parse(a) {
            Ok(x) => files::find(s, x).await,
            Err(e) => Err(e),
        },
        "files_grep" => match args::parse(a) {
            Ok(x) => crate::index::tool::call(s, index, x).await,
            Err(e) => Err(e),
        },
        "files_write" => match args::parse(a) {
            Ok(x) => files::write(s, x).await,
            Err(e) => Err(e),
        },
        "files_move" => match args::parse(a) {
            Ok(x) => files::move_item(s, x).await,
            Err(e) => Err(e),
        },
        "calendar_list" => match args::parse::<args::NoArgs>(a) {
            Ok(_) => calendar::list(s).await,
            Err(e) => Err(e),
        },
        "calendar_events" => match args::parse(a) {
            Ok(x) => calendar::events(s, x).await,
            Err(e) => Err(e),
        },
        "calendar_event_get" => match args::parse(a) {
            Ok(x) => calendar::event_get(s, x).await,
            Err(e) => Err(e),
        },
        "calendar_create_event" => match args::parse(a) {
            Ok(x) => calendar::create_event(s, x).await,
            Err(e) => Err(e),
        },
        "contacts_search" => match args::parse(a) {
            Ok(x) => contacts::search(s, x).await,
            Err(e) => Err(e),
        },
        "deck_boards" => match args::parse::<args::NoArgs>(a) {
            Ok(_) => deck::boards(s).await,
            Err(e) => Err(e),
        },
        "deck_board" => match args::parse(a) {
            Ok(x) => deck::board(s, x).await,
            Err(e) => Err(e),
        },
        "deck_create_card" => match args::parse(a) {
            Ok(x) => deck::create_card(s, x).await,
            Err(e) => Err(e),
        },
        "deck_move_card" => match args::parse(a) {
            Ok(x) => deck::move_card(s, x).await,
            Err(e) => Err(e),
        },
        other => Err(Error::invalid(format!("there is no tool named {other:?}"))),
    };
    match outcome {
        Ok(out) => {
            let mut r = CallToolResult::success(vec![ContentBlock::text(out.text)]);
            r.structured_content = Some(out.structured);
            r
        }
        Err(e) => error_result(&e),
    }
}

/// The one shape of a failed tool call.
pub fn error_result(e: &Error) -> CallToolResult {
    let message = e.to_string();
    let mut r = CallToolResult::error(vec![ContentBlock::text(format!("Error: {message}"))]);
    r.structured_content = Some(serde_json::json!({ "error": { "kind": e.kind(), "message": message } }));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// G3 rests on these: per MCP, `destructiveHint: false` means "only additive updates".
    /// Every tool here is either a pure read or a write that is not additive (replaces,
    /// moves, or lands where others see it), so it must never claim to be non-destructive.
    #[test]
    fn every_write_is_annotated_destructive() {
        let mut writes = Vec::new();
        for t in definitions() {
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
            ("files_move", Some(false)),
            ("files_write", Some(true)),
        ]
        .map(|(n, i)| (n.to_string(), i));
        assert_eq!(writes, expected);
    }
}
