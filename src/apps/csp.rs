//! The Content-Security-Policy an MCP App document is served with (second point of distrust).
//!
//! Owns one pure function, [`policy_for`]: it parses the app's HTML with a real HTML parser,
//! hashes every inline `<script>` and `<style>` (sha256, base64) and returns a policy that
//! allows exactly those blocks and nothing else: no network (`connect-src 'none'`), no
//! plugins, no forms, no `<base>`, images only as `data:` URLs, and only our own pages may
//! embed the frame. Because the policy pins hashes rather than saying `'unsafe-inline'`, a
//! document modified after the policy was built does not execute.
//!
//! It refuses, loudly, documents that could only work by breaking the policy: external
//! scripts or stylesheets, inline event-handler attributes, inline `style=` attributes,
//! `javascript:` URLs and `<meta http-equiv="refresh">`. Under the policy these would fail
//! silently; a refusal tells the app's author instead.
//!
//! It must never return a policy containing `'unsafe-inline'`, `'unsafe-eval'`, a host
//! source or a wildcard, and it must never fetch anything: the document is all it sees.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use scraper::{Html, Node};
use sha2::{Digest, Sha256};

/// Why a document was refused. Each variant names what the app's author must change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CspError {
    /// `<script src=…>`: the frame has no network, and we only run code we have hashed.
    #[error("the app loads an external script ({0}); inline it instead")]
    ExternalScript(String),
    /// `<link rel=stylesheet href=…>` or `@import`-style external styles.
    #[error("the app loads an external stylesheet ({0}); inline it instead")]
    ExternalStyle(String),
    /// `onclick=…` and friends: cannot be hashed without `'unsafe-hashes'`, which we never grant.
    #[error("the app uses an inline event handler attribute `{0}`; use addEventListener in a script")]
    EventHandler(String),
    /// `style=…` on an element: blocked by a hash-only `style-src`.
    #[error("the app uses an inline style attribute on <{0}>; move it into a <style> block")]
    StyleAttribute(String),
    /// A `javascript:` URL in a URL-bearing attribute.
    #[error("the app uses a javascript: URL in `{0}`")]
    JavascriptUrl(String),
    /// `<meta http-equiv="refresh">` navigates the frame somewhere we did not vet.
    #[error("the app uses <meta http-equiv=\"refresh\">, which would navigate the frame")]
    MetaRefresh,
}

/// Attributes whose value the browser treats as a URL to navigate to or load.
const URL_ATTRIBUTES: &[&str] = &[
    "href",
    "src",
    "action",
    "formaction",
    "data",
    "poster",
    "background",
    "cite",
    "longdesc",
    "xlink:href",
];

/// Builds the Content-Security-Policy header value for an MCP App document.
///
/// The result always starts with `default-src 'none'`; `script-src` and `style-src` list
/// only the hashes of the document's own inline blocks (or `'none'` when it has none).
pub fn policy_for(html: &str) -> Result<String, CspError> {
    let document = Html::parse_document(html);
    let mut script_hashes = Vec::new();
    let mut style_hashes = Vec::new();

    for node in document.tree.nodes() {
        let Node::Element(element) = node.value() else { continue };
        let name = element.name();
        check_attributes(name, element.attrs())?;
        match name {
            "script" => {
                if let Some(src) = element.attr("src").or_else(|| element.attr("href")) {
                    return Err(CspError::ExternalScript(src.to_string()));
                }
                script_hashes.push(hash_source(&inline_text(node.children().map(|c| c.value()))));
            }
            "style" => style_hashes.push(hash_source(&inline_text(node.children().map(|c| c.value())))),
            "link" if is_stylesheet_link(element) => {
                let href = element.attr("href").unwrap_or_default();
                return Err(CspError::ExternalStyle(href.to_string()));
            }
            "meta" if is_refresh(element) => return Err(CspError::MetaRefresh),
            _ => {}
        }
    }

    Ok(render(&dedup(script_hashes), &dedup(style_hashes)))
}

/// Refuses event handlers, inline styles and `javascript:` URLs on one element.
fn check_attributes<'a>(element: &str, attrs: impl Iterator<Item = (&'a str, &'a str)>) -> Result<(), CspError> {
    for (name, value) in attrs {
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("on") {
            return Err(CspError::EventHandler(lower));
        }
        if lower == "style" {
            return Err(CspError::StyleAttribute(element.to_string()));
        }
        if URL_ATTRIBUTES.contains(&lower.as_str()) && is_javascript_url(value) {
            return Err(CspError::JavascriptUrl(lower));
        }
    }
    Ok(())
}

/// True when a URL would run script once the browser has stripped what it strips:
/// leading/trailing C0 controls and spaces, and tabs/newlines anywhere (URL standard).
fn is_javascript_url(value: &str) -> bool {
    let cleaned: String = value
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    cleaned.to_ascii_lowercase().starts_with("javascript:")
}

fn is_stylesheet_link(element: &scraper::node::Element) -> bool {
    element
        .attr("rel")
        .is_some_and(|rel| rel.split_ascii_whitespace().any(|r| r.eq_ignore_ascii_case("stylesheet")))
}

fn is_refresh(element: &scraper::node::Element) -> bool {
    element.attr("http-equiv").is_some_and(|v| v.trim().eq_ignore_ascii_case("refresh"))
}

/// The text content of a `<script>` or `<style>` exactly as the browser hashes it.
fn inline_text<'a>(children: impl Iterator<Item = &'a Node>) -> String {
    children.filter_map(|child| child.as_text().map(|t| t.to_string())).collect()
}

fn hash_source(source: &str) -> String {
    format!("'sha256-{}'", BASE64.encode(Sha256::digest(source.as_bytes())))
}

fn dedup(mut hashes: Vec<String>) -> Vec<String> {
    hashes.sort();
    hashes.dedup();
    hashes
}

fn render(scripts: &[String], styles: &[String]) -> String {
    let list = |hashes: &[String]| {
        if hashes.is_empty() {
            "'none'".to_string()
        } else {
            hashes.join(" ")
        }
    };
    [
        "default-src 'none'".to_string(),
        format!("script-src {}", list(scripts)),
        format!("style-src {}", list(styles)),
        "connect-src 'none'".to_string(),
        "img-src data:".to_string(),
        "font-src 'none'".to_string(),
        "frame-ancestors 'self'".to_string(),
        "base-uri 'none'".to_string(),
        "form-action 'none'".to_string(),
    ]
    .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(s: &str) -> String {
        hash_source(s)
    }

    #[test]
    fn hashes_each_inline_script_and_style() {
        let html = "<!doctype html><html><head><style>body{margin:0}</style></head>\
                    <body><script>console.log(1)</script><script type=module>let a=2;</script></body></html>";
        let policy = policy_for(html).unwrap();
        assert!(policy.starts_with("default-src 'none'; "));
        assert!(policy.contains(&sha("console.log(1)")));
        assert!(policy.contains(&sha("let a=2;")));
        assert!(policy.contains(&format!("style-src {}", sha("body{margin:0}"))));
    }

    #[test]
    fn known_hash_matches_what_browsers_compute() {
        // echo -n 'alert(1)' | openssl dgst -sha256 -binary | base64
        let policy = policy_for("<script>alert(1)</script>").unwrap();
        assert!(
            policy.contains("script-src 'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='"),
            "{policy}"
        );
    }

    #[test]
    fn line_endings_are_normalised_like_the_browser() {
        // The HTML tokenizer turns CRLF into LF before the browser hashes a script.
        let policy = policy_for("<script>a()\r\nb()</script>").unwrap();
        assert!(policy.contains(&sha("a()\nb()")), "{policy}");
    }

    #[test]
    fn has_every_fixed_directive_and_nothing_unsafe() {
        let policy = policy_for("<p>hi</p>").unwrap();
        for directive in [
            "default-src 'none'",
            "script-src 'none'",
            "style-src 'none'",
            "connect-src 'none'",
            "img-src data:",
            "font-src 'none'",
            "frame-ancestors 'self'",
            "base-uri 'none'",
            "form-action 'none'",
        ] {
            assert!(policy.contains(directive), "missing {directive} in {policy}");
        }
        for bad in ["unsafe-inline", "unsafe-eval", "unsafe-hashes", "*", "http:", "https:"] {
            assert!(!policy.contains(bad), "{bad} in {policy}");
        }
    }

    #[test]
    fn identical_blocks_are_listed_once() {
        let policy = policy_for("<script>x()</script><script>x()</script>").unwrap();
        assert_eq!(policy.matches("sha256-").count(), 1, "{policy}");
    }

    #[test]
    fn refuses_external_script() {
        let err = policy_for("<script src=\"https://cdn.example/x.js\"></script>").unwrap_err();
        assert_eq!(err, CspError::ExternalScript("https://cdn.example/x.js".into()));
    }

    #[test]
    fn refuses_external_stylesheet() {
        let err = policy_for("<link rel=\"preload stylesheet\" href=\"/x.css\">").unwrap_err();
        assert_eq!(err, CspError::ExternalStyle("/x.css".into()));
    }

    #[test]
    fn a_non_stylesheet_link_is_not_an_external_style() {
        assert!(policy_for("<link rel=\"icon\" href=\"data:,\">").is_ok());
    }

    #[test]
    fn refuses_event_handler_attributes_in_any_case() {
        for html in [
            "<button onclick=\"x()\">b</button>",
            "<img ONERROR=x() src=data:,>",
            "<svg onload=x()></svg>",
        ] {
            assert!(matches!(policy_for(html), Err(CspError::EventHandler(_))), "{html}");
        }
    }

    #[test]
    fn refuses_inline_style_attributes() {
        assert_eq!(
            policy_for("<div style=\"color:red\">x</div>"),
            Err(CspError::StyleAttribute("div".into()))
        );
    }

    #[test]
    fn refuses_javascript_urls_including_obfuscated_ones() {
        for html in [
            "<a href=\"javascript:alert(1)\">x</a>",
            "<a href=\"  JaVaScRiPt:alert(1)\">x</a>",
            "<a href=\"java\tscript:alert(1)\">x</a>",
            "<a href=\"\x01javascript:alert(1)\">x</a>",
            "<form action=\"javascript:x\"></form>",
            "<iframe src=\"javascript:x\"></iframe>",
            "<svg><a xlink:href=\"javascript:x\"><text>t</text></a></svg>",
        ] {
            assert!(matches!(policy_for(html), Err(CspError::JavascriptUrl(_))), "{html:?}");
        }
    }

    #[test]
    fn a_word_javascript_elsewhere_is_fine() {
        assert!(policy_for("<p title=\"javascript: the language\">javascript:</p>").is_ok());
    }

    #[test]
    fn refuses_meta_refresh() {
        assert_eq!(
            policy_for("<meta http-equiv=\"Refresh\" content=\"0;url=https://evil.example\">"),
            Err(CspError::MetaRefresh)
        );
    }

    #[test]
    fn a_tampered_document_no_longer_matches_its_policy() {
        let original = "<script>render()</script>";
        let tampered = "<script>render();steal()</script>";
        let policy = policy_for(original).unwrap();
        assert!(!policy.contains(&sha("render();steal()")));
        assert_ne!(policy, policy_for(tampered).unwrap());
    }
}
