//! MCP Apps documents (ext-apps `text/html;profile=mcp-app`) as a server serves them:
//! `resources/list` and `resources/read` over a fixed table of compiled-in documents.
//!
//! Each server owns its table and its HTML (self-contained, checked by that server's tests);
//! this module owns only how a table becomes the two MCP answers, so that every server lists
//! and reads its apps the same way. It must never fetch or template a document: what the
//! host renders is exactly the bytes compiled into the binary.

use rmcp::ErrorData;
use rmcp::model::{ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents};

/// The MIME type of an MCP App document.
pub const MIME: &str = "text/html;profile=mcp-app";

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
                .with_size(a.html.len() as u64)
        })
        .collect()
}

/// One app's document, `None` for a URI that is not in `apps`.
pub fn read(apps: &[App], uri: &str) -> Option<ResourceContents> {
    apps.iter()
        .find(|a| a.uri == uri)
        .map(|a| ResourceContents::text(a.html, a.uri).with_mime_type(MIME))
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
}
