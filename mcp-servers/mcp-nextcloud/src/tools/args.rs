//! Tool arguments: typed, with JSON schemas, and checked before any request is made.
//! Names here are the contract with the orchestrator and the model; optional arguments may be
//! added freely, required ones never renamed.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use rmcp::model::JsonObject;
use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Deserializer};

use crate::error::Error;

/// Deserialises `arguments` into `T`; any mismatch is `invalid_argument`.
pub fn parse<T: serde::de::DeserializeOwned>(arguments: JsonObject) -> Result<T, Error> {
    serde_json::from_value(serde_json::Value::Object(arguments)).map_err(|e| Error::invalid(format!("invalid arguments: {e}")))
}

/// A positive numeric id (Deck boards, stacks, cards; file ids): a JSON integer of at least 1.
/// A quoted one (`"12"`) arrives here as 12: the shared argument decoding
/// (`mcp_resource_server::arguments`) reads it so because this type's schema says integer,
/// by the same rule as every other integer argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Id(pub u64);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        match v.as_u64() {
            Some(n) if n > 0 => Ok(Id(n)),
            _ => Err(serde::de::Error::custom(format!("ids are positive whole numbers, got {v}"))),
        }
    }
}

impl JsonSchema for Id {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Id".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "integer", "minimum": 1 })
    }
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FilesListArgs {
    /// Folder path relative to the user's root; '' or '/' for the root.
    #[serde(default)]
    pub path: String,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FilesReadArgs {
    /// File path relative to the user's root. Give this or `file_id`.
    pub path: Option<String>,
    /// Nextcloud file id (from files_list, files_find or a search). Give this or `path`.
    pub file_id: Option<Id>,
    /// Character offset to start from (default 0).
    pub offset: Option<usize>,
    /// How many characters to return (default 20000, at most 100000).
    pub limit: Option<usize>,
    /// Spreadsheets only: read just this sheet (its name as the heading shows it).
    pub sheet: Option<String>,
    /// Spreadsheets only: the first row to show (1-based, as the table numbers rows); for
    /// reading past a sheet's cut note.
    pub row: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FilesFindArgs {
    /// Name pattern; `*` matches anything. Without `*`, names containing it match.
    pub pattern: String,
    /// Folder to search in, relative to the user's root (default: everything).
    #[serde(default)]
    pub path: String,
    /// Maximum rows (default 50, at most 500).
    pub limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FilesWriteArgs {
    /// File path relative to the user's root.
    pub path: String,
    /// The complete new text content (UTF-8).
    pub content: String,
    /// Replace an existing file (default true). With false, an existing file is a conflict.
    pub overwrite: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FilesConvertArgs {
    /// The document to convert, relative to the user's root.
    pub path: String,
    /// The format to make: pdf, docx, odt, xlsx, ods, pptx, odp, txt, html or md (what the
    /// document server can make of the source; other pairs are refused, naming the possible ones).
    pub to: String,
    /// Where to write the result, relative to the user's root (default: next to the source,
    /// same name with the new extension).
    pub target: Option<String>,
    /// Replace an existing target (default false: an existing target is refused).
    pub overwrite: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FilesMoveArgs {
    /// Current path relative to the user's root.
    pub from: String,
    /// New path relative to the user's root.
    pub to: String,
    /// Replace an existing target (default false).
    pub overwrite: Option<bool>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CalendarEventsArgs {
    /// Start of the range: ISO date (2026-01-15) or date-time (2026-01-15T09:00:00Z).
    pub from: String,
    /// End of the range: ISO date (that whole day is included) or date-time (exclusive).
    pub to: String,
    /// Only this calendar (an id from calendar_list).
    pub calendar: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CalendarEventGetArgs {
    /// The event's href as returned by calendar_events (`<calendar>/<object>.ics`).
    pub href: String,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CalendarCreateArgs {
    /// Calendar id from calendar_list.
    pub calendar: String,
    /// Event title.
    pub title: String,
    /// Start: ISO date-time with offset (or UTC), or a date for an all-day event.
    pub start: String,
    /// End (after start): same form as `start`.
    pub end: String,
    pub location: Option<String>,
    pub description: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ContactsSearchArgs {
    /// Text contained in the contact's name, email or organisation.
    pub query: String,
    /// Maximum contacts (default 25, at most 200).
    pub limit: Option<usize>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct DeckBoardArgs {
    pub board_id: Id,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct DeckCreateCardArgs {
    pub board_id: Id,
    pub stack_id: Id,
    pub title: String,
    pub description: Option<String>,
    /// Due date: ISO date or date-time.
    pub duedate: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct DeckMoveCardArgs {
    pub board_id: Id,
    pub card_id: Id,
    /// The stack (of the same board) to move the card to.
    pub stack_id: Id,
}

/// A point in time or a whole day, as the caller wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Date(NaiveDate),
    DateTime(DateTime<Utc>),
}

impl When {
    /// Parses an ISO date, an RFC 3339 date-time, or a date-time without offset (read as UTC).
    pub fn parse(raw: &str, what: &str) -> Result<When, Error> {
        let s = raw.trim();
        if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            return Ok(When::Date(d));
        }
        if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
            return Ok(When::DateTime(dt.with_timezone(&Utc)));
        }
        for f in ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"] {
            if let Ok(n) = NaiveDateTime::parse_from_str(s, f) {
                return Ok(When::DateTime(n.and_utc()));
            }
        }
        Err(Error::invalid(format!(
            "{what} must be an ISO date (2026-01-15) or date-time (2026-01-15T09:00:00Z), got {raw:?}"
        )))
    }

    /// The instant this starts at (midnight UTC for a date).
    pub fn start_instant(self) -> DateTime<Utc> {
        match self {
            When::Date(d) => d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc(),
            When::DateTime(t) => t,
        }
    }

    /// The instant a range ending here ends at: a date includes its whole day.
    pub fn end_instant(self) -> DateTime<Utc> {
        match self {
            When::Date(d) => d.succ_opt().unwrap_or(d).and_hms_opt(0, 0, 0).unwrap_or_default().and_utc(),
            When::DateTime(t) => t,
        }
    }
}

/// A required, trimmed, bounded single-line-ish text (titles).
pub fn title(raw: &str, what: &str, max: usize) -> Result<String, Error> {
    let t = raw.trim();
    if t.is_empty() {
        return Err(Error::invalid(format!("{what} must not be empty")));
    }
    if t.chars().count() > max {
        return Err(Error::invalid(format!("{what} is too long (at most {max} characters)")));
    }
    if t.contains('\0') {
        return Err(Error::invalid(format!("{what} must not contain NUL")));
    }
    Ok(t.to_string())
}

/// An optional bounded text.
pub fn optional_text(raw: Option<&str>, what: &str, max: usize) -> Result<Option<String>, Error> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) if s.chars().count() > max => Err(Error::invalid(format!("{what} is too long (at most {max} characters)"))),
        Some(s) if s.contains('\0') => Err(Error::invalid(format!("{what} must not contain NUL"))),
        Some(s) => Ok(Some(s.to_string())),
    }
}

/// A single path segment naming a collection (calendar id, address book id).
pub fn collection_id(raw: &str, what: &str) -> Result<String, Error> {
    let s = raw.trim();
    if s.is_empty() || s.len() > 255 || s == "." || s == ".." || s.contains(['/', '\\', '\0']) || s.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "{what} must be an id from the list (like 'personal'), got {raw:?}"
        )));
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_positive_numbers_only() {
        let p = |v: serde_json::Value| serde_json::from_value::<Id>(v);
        assert_eq!(p(serde_json::json!(12)).unwrap(), Id(12));
        for bad in [
            // Quoted ids are read as integers before this type sees them (see `Id`).
            serde_json::json!("12"),
            serde_json::json!("12a"),
            serde_json::json!(-1),
            serde_json::json!(0),
            serde_json::json!(1.5),
            serde_json::json!("../1"),
        ] {
            assert!(p(bad).is_err());
        }
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(
            When::parse("2026-01-15", "from").unwrap().end_instant().to_rfc3339(),
            "2026-01-16T00:00:00+00:00"
        );
        assert_eq!(
            When::parse("2026-01-15T10:00:00+01:00", "from")
                .unwrap()
                .start_instant()
                .to_rfc3339(),
            "2026-01-15T09:00:00+00:00"
        );
        assert!(When::parse("next tuesday", "from").is_err());
        assert!(title("  ", "title", 10).is_err());
        assert!(collection_id("../x", "calendar").is_err());
    }
}
