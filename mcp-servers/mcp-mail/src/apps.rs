//! MCP Apps (ext-apps spec 2026-01-26): the compose app `ui://mail/compose`, served with
//! `resources/list` and `resources/read` as `text/html;profile=mcp-app`.
//!
//! The document is compiled in (include_str!), self-contained (inline script and style, no
//! network) and shows the mail exactly as it will be sent. Its Send and Save draft buttons
//! only *ask* the host (a `tools/call` over postMessage); the island then shows its own
//! confirmation outside the frame, because a click inside a sandboxed frame is invisible to
//! the host and the frame's script could "click" by itself.

use mcp_resource_server::apps::App;

pub const COMPOSE: &str = "ui://mail/compose";

const COMPOSE_HTML: &str = include_str!("../apps/compose.html");

/// Every app this server ships (listed and read through `mcp_resource_server::apps`).
pub const APPS: &[App] = &[App {
    uri: COMPOSE,
    name: "compose",
    title: "Compose a mail",
    description: "The mail mail_compose prepared, exactly as it will be sent, with Send and Save draft buttons.",
    html: COMPOSE_HTML,
}];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_app_is_self_contained() {
        // Served with the shared runtime (handshake, messages) before the app's own script.
        assert!(COMPOSE_HTML.contains(mcp_resource_server::apps::RUNTIME_MARKER));
        let html = &mcp_resource_server::apps::document(&APPS[0]);
        for needed in [
            "ui/initialize",
            "mcpApp.on('ui/notifications/tool-result'",
            "mail_send",
            "mail_save_draft",
            // The host's theme, not the OS's (issue #34); one landmark, one heading.
            ":root[data-theme=\"dark\"]",
            "var(--color-background-primary",
            "<main>",
            "<h1",
        ] {
            assert!(html.contains(needed), "{needed}");
        }
        for forbidden in [
            "<script src",
            "fetch(",
            "XMLHttpRequest",
            "<link ",
            "http://",
            "https://",
            "innerHTML",
            "prefers-color-scheme",
        ] {
            assert!(!html.contains(forbidden), "contains {forbidden}");
        }
        assert!(mcp_resource_server::apps::read(APPS, COMPOSE).is_some());
        assert!(mcp_resource_server::apps::read(APPS, "ui://mail/nope").is_none());
        assert_eq!(mcp_resource_server::apps::list(APPS).len(), 1);
    }
}
