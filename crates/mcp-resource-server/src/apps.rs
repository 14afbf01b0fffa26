//! MCP Apps documents (ext-apps `text/html;profile=mcp-app`) as a server serves them:
//! `resources/list` and `resources/read` over a fixed table of compiled-in documents.
//!
//! Each server owns its table and its HTML (self-contained, checked by that server's tests);
//! this module owns how a table becomes the two MCP answers, so that every server lists and
//! reads its apps the same way, and the one runtime the documents share (`apps/runtime.js`:
//! JSON-RPC over postMessage, the handshake, size reports), placed where a document says
//! [`RUNTIME_MARKER`]. It must never fetch or template a document with data: what the host
//! renders is exactly the compiled-in document and runtime, the same bytes on every read.

use rmcp::ErrorData;
use rmcp::model::{ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents};

/// The MIME type of an MCP App document.
pub const MIME: &str = "text/html;profile=mcp-app";

/// Where a document wants the shared runtime: before its own script, which uses `mcpApp`.
pub const RUNTIME_MARKER: &str = "<!-- mcp-app-runtime -->";
const RUNTIME: &str = concat!("<script>\n", include_str!("../apps/runtime.js"), "</script>");

/// One app: its `ui://` URI, names for the host, and the document.
pub struct App {
    pub uri: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub html: &'static str,
}

/// Every app of `apps`, for `resources/list`.
pub fn list(apps: &[App]) -> Vec<Resource> {
    apps.iter()
        .map(|a| {
            Resource::new(a.uri, a.name)
                .with_title(a.title)
                .with_description(a.description)
                .with_mime_type(MIME)
                .with_size(document(a).len() as u64)
        })
        .collect()
}

/// One app's document, `None` for a URI that is not in `apps`.
pub fn read(apps: &[App], uri: &str) -> Option<ResourceContents> {
    apps.iter()
        .find(|a| a.uri == uri)
        .map(|a| ResourceContents::text(document(a), a.uri).with_mime_type(MIME))
}

/// The document as served: the app's HTML with the shared runtime at its marker (once).
pub fn document(app: &App) -> String {
    app.html.replacen(RUNTIME_MARKER, RUNTIME, 1)
}

/// The `resources/read` answer: the document, or the protocol's resource-not-found error.
pub fn read_resource(apps: &[App], request: &ReadResourceRequestParams) -> Result<ReadResourceResponse, ErrorData> {
    match read(apps, &request.uri) {
        Some(contents) => Ok(ReadResourceResult::new(vec![contents]).into()),
        None => Err(ErrorData::resource_not_found(format!("no resource {}", request.uri), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APPS: &[App] = &[App {
        uri: "ui://test/one",
        name: "one",
        title: "One",
        description: "the first",
        html: "<p>one</p>",
    }];

    #[test]
    fn lists_and_reads_only_its_own_table() {
        let listed = list(APPS);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].uri, "ui://test/one");
        assert_eq!(listed[0].mime_type.as_deref(), Some(MIME));
        assert_eq!(listed[0].size, Some(10));
        assert!(read(APPS, "ui://test/one").is_some());
        assert!(read(APPS, "ui://test/two").is_none());
    }

    #[test]
    fn the_runtime_stands_where_the_document_asks_for_it() {
        let app = App {
            html: "<p>x</p>\n<!-- mcp-app-runtime -->\n<script>mcpApp.start('x');</script>\n<!-- mcp-app-runtime -->",
            ..APPS[0]
        };
        let doc = document(&app);
        let runtime = doc.find("var mcpApp").unwrap();
        assert!(runtime < doc.find("mcpApp.start('x')").unwrap(), "before the app's script: {doc}");
        assert_eq!(doc.matches("var mcpApp").count(), 1, "once");
        assert!(doc.contains("ui/initialize") && doc.contains("ui/notifications/size-changed"));
        assert!(
            doc.contains("ui/notifications/host-context-changed") && doc.contains("data-theme"),
            "follows the host's theme"
        );
        for forbidden in ["<script src", "fetch(", "XMLHttpRequest", "http://", "https://"] {
            assert!(!RUNTIME.contains(forbidden), "the runtime contains {forbidden}");
        }
        let listed = list(std::slice::from_ref(&app));
        assert_eq!(listed[0].size, Some(doc.len() as u64), "the size is the served document's");
        assert_eq!(document(&APPS[0]), "<p>one</p>", "a document without the marker is served as it is");
    }
}
