//! MCP Apps (ext-apps spec 2026-01-26): the `ui://` resources this server ships, served with
//! `resources/list` and `resources/read` as `text/html;profile=mcp-app`.
//!
//! The HTML is compiled in (include_str!), so what a host renders is exactly what was
//! reviewed. These documents must stay self-contained: inline script and style, no network.
//! Hosts treat them as untrusted code (sandboxed frames, CSP from the document's hashes).

use rmcp::model::{Resource, ResourceContents};

pub const MIME: &str = "text/html;profile=mcp-app";
pub const CALENDAR_WEEK: &str = "ui://nextcloud/calendar-week";
pub const FILES_TABLE: &str = "ui://nextcloud/files-table";

const CALENDAR_WEEK_HTML: &str = include_str!("../apps/calendar-week.html");
const FILES_TABLE_HTML: &str = include_str!("../apps/files-table.html");

struct App {
    uri: &'static str,
    name: &'static str,
    title: &'static str,
    description: &'static str,
    html: &'static str,
}

const APPS: &[App] = &[
    App {
        uri: CALENDAR_WEEK,
        name: "calendar-week",
        title: "Calendar week",
        description: "A week grid of the events returned by calendar_events; a click shows an event's details.",
        html: CALENDAR_WEEK_HTML,
    },
    App {
        uri: FILES_TABLE,
        name: "files-table",
        title: "Files table",
        description: "A sortable table of the files returned by files_list and files_find.",
        html: FILES_TABLE_HTML,
    },
];

/// Every app, for `resources/list`.
pub fn list() -> Vec<Resource> {
    APPS.iter()
        .map(|a| {
            Resource::new(a.uri, a.name)
                .with_title(a.title)
                .with_description(a.description)
                .with_mime_type(MIME)
                .with_size(a.html.len() as u64)
        })
        .collect()
}

/// One app's document, for `resources/read`; `None` for an unknown URI.
pub fn read(uri: &str) -> Option<ResourceContents> {
    APPS.iter()
        .find(|a| a.uri == uri)
        .map(|a| ResourceContents::text(a.html, a.uri).with_mime_type(MIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apps_are_self_contained() {
        for a in APPS {
            assert!(a.html.contains("ui/initialize"), "{}", a.uri);
            assert!(a.html.contains("ui/notifications/tool-result"), "{}", a.uri);
            for forbidden in ["<script src", "fetch(", "XMLHttpRequest", "<link ", "http://", "https://"] {
                assert!(!a.html.contains(forbidden), "{} contains {forbidden}", a.uri);
            }
        }
        assert!(read(CALENDAR_WEEK).is_some());
        assert!(read("ui://nextcloud/nope").is_none());
        assert_eq!(list().len(), 2);
    }
}
