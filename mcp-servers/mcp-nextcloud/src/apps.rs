//! MCP Apps (ext-apps spec 2026-01-26): the `ui://` resources this server ships, served with
//! `resources/list` and `resources/read` as `text/html;profile=mcp-app`.
//!
//! The HTML is compiled in (include_str!), so what a host renders is exactly what was
//! reviewed. These documents must stay self-contained: inline script and style, no network;
//! the shared app runtime (mcp_resource_server::apps) is placed at their runtime marker.
//! Hosts treat them as untrusted code (sandboxed frames, CSP from the document's hashes).

use mcp_resource_server::apps::App;
pub const CALENDAR_WEEK: &str = "ui://nextcloud/calendar-week";
pub const FILES_TABLE: &str = "ui://nextcloud/files-table";

const CALENDAR_WEEK_HTML: &str = include_str!("../apps/calendar-week.html");
const FILES_TABLE_HTML: &str = include_str!("../apps/files-table.html");

/// Every app this server ships (listed and read through `mcp_resource_server::apps`).
pub const APPS: &[App] = &[
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apps_are_self_contained() {
        for a in APPS {
            // The shared runtime (handshake, messages) stands before the app's own script.
            assert!(a.html.contains(mcp_resource_server::apps::RUNTIME_MARKER), "{}", a.uri);
            let doc = mcp_resource_server::apps::document(a);
            assert!(doc.contains("ui/initialize"), "{}", a.uri);
            assert!(doc.contains("mcpApp.on('ui/notifications/tool-result'"), "{}", a.uri);
            for forbidden in ["<script src", "fetch(", "XMLHttpRequest", "<link ", "http://", "https://"] {
                assert!(!doc.contains(forbidden), "{} contains {forbidden}", a.uri);
            }
            // The host's theme, not the OS's (issue #34): a dark palette keyed on the
            // runtime's data-theme, none on prefers-color-scheme; one landmark, one heading.
            assert!(!doc.contains("prefers-color-scheme"), "{} follows the OS theme", a.uri);
            for needed in [":root[data-theme=\"dark\"]", "var(--color-background-primary", "<main>", "<h1"] {
                assert!(doc.contains(needed), "{} lacks {needed}", a.uri);
            }
        }
        assert!(mcp_resource_server::apps::read(APPS, CALENDAR_WEEK).is_some());
        assert!(mcp_resource_server::apps::read(APPS, "ui://nextcloud/nope").is_none());
        assert_eq!(mcp_resource_server::apps::list(APPS).len(), 2);
    }
}
