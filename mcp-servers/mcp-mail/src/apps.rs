//! MCP Apps (ext-apps spec 2026-01-26): the compose app `ui://mail/compose`, served with
//! `resources/list` and `resources/read` as `text/html;profile=mcp-app`.
//!
//! The document is compiled in (include_str!), self-contained (inline script and style, no
//! network) and shows the mail exactly as it will be sent. Its Send and Save draft buttons
//! only *ask* the host (a `tools/call` over postMessage); the island then shows its own
//! confirmation outside the frame, because a click inside a sandboxed frame is invisible to
//! the host and the frame's script could "click" by itself.

use rmcp::model::{Resource, ResourceContents};

pub const MIME: &str = "text/html;profile=mcp-app";
pub const COMPOSE: &str = "ui://mail/compose";

const COMPOSE_HTML: &str = include_str!("../apps/compose.html");

/// Every app, for `resources/list`.
pub fn list() -> Vec<Resource> {
    vec![
        Resource::new(COMPOSE, "compose")
            .with_title("Compose a mail")
            .with_description("The mail mail_compose prepared, exactly as it will be sent, with Send and Save draft buttons.")
            .with_mime_type(MIME)
            .with_size(COMPOSE_HTML.len() as u64),
    ]
}

/// One app's document, for `resources/read`; `None` for an unknown URI.
pub fn read(uri: &str) -> Option<ResourceContents> {
    (uri == COMPOSE).then(|| ResourceContents::text(COMPOSE_HTML, COMPOSE).with_mime_type(MIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_app_is_self_contained() {
        let html = COMPOSE_HTML;
        for needed in ["ui/initialize", "ui/notifications/tool-result", "mail_send", "mail_save_draft"] {
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
        ] {
            assert!(!html.contains(forbidden), "contains {forbidden}");
        }
        assert!(read(COMPOSE).is_some());
        assert!(read("ui://mail/nope").is_none());
        assert_eq!(list().len(), 1);
    }
}
