//! Caller-relative paths and the URLs built from them.
//!
//! A path a tool receives is always relative to the caller's own root (`notes.txt`,
//! `Shared-with-bob/plan.md`); the uid in the DAV URL comes only from Nextcloud. This module
//! refuses anything that could step outside that namespace or be read as something else
//! (`..` segments, absolute URLs, backslashes, NUL and control characters) before any request
//! is made, and percent-encodes each segment when building URLs. It never decides whether a
//! path is accessible: Nextcloud does.

use percent_encoding::percent_decode_str;
use url::Url;

use crate::error::Error;

const MAX_PATH_BYTES: usize = 4096;
const MAX_SEGMENT_BYTES: usize = 255;

/// A validated path relative to the caller's root (possibly the root itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserPath {
    segments: Vec<String>,
}

impl UserPath {
    /// The caller's root.
    pub fn root() -> Self {
        UserPath { segments: Vec::new() }
    }

    /// Parses `raw`; `""` and `"/"` are the root. `what` names the argument in messages.
    pub fn parse(raw: &str, what: &str) -> Result<Self, Error> {
        if raw.len() > MAX_PATH_BYTES {
            return Err(Error::invalid(format!("{what} is too long (at most {MAX_PATH_BYTES} bytes)")));
        }
        if raw.contains('\0') || raw.chars().any(char::is_control) {
            return Err(Error::invalid(format!("{what} must not contain NUL or control characters")));
        }
        if raw.contains('\\') {
            return Err(Error::invalid(format!("{what} must use '/' as separator, not '\\'")));
        }
        if looks_like_url(raw) {
            return Err(Error::invalid(format!(
                "{what} must be a path relative to your own files (like 'Documents/report.md'), not a URL"
            )));
        }
        let mut segments = Vec::new();
        for seg in raw.split('/') {
            match seg {
                "" => continue,
                "." | ".." => {
                    return Err(Error::invalid(format!("{what} must not contain '.' or '..' segments")));
                }
                s if s.len() > MAX_SEGMENT_BYTES => {
                    return Err(Error::invalid(format!("{what} has a name longer than {MAX_SEGMENT_BYTES} bytes")));
                }
                s => segments.push(s.to_string()),
            }
        }
        Ok(UserPath { segments })
    }

    /// Like [`parse`](Self::parse) but refuses the root (for files and move targets).
    pub fn parse_item(raw: &str, what: &str) -> Result<Self, Error> {
        let p = Self::parse(raw, what)?;
        if p.is_root() {
            return Err(Error::invalid(format!("{what} must name a file or folder, not the root")));
        }
        Ok(p)
    }

    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// The last segment (the item's name), empty for the root.
    pub fn name(&self) -> &str {
        self.segments.last().map_or("", String::as_str)
    }

    /// `a/b/c` (no leading slash; empty for the root): the form every tool returns.
    pub fn display(&self) -> String {
        self.segments.join("/")
    }

    /// Whether `other` is this path or inside it.
    pub fn contains(&self, other: &UserPath) -> bool {
        other.segments.starts_with(&self.segments)
    }
}

/// Scheme-prefixed or protocol-relative text is a URL, never a path.
fn looks_like_url(raw: &str) -> bool {
    if raw.starts_with("//") || raw.contains("://") {
        return true;
    }
    // "scheme:" with a well-known scheme; "Meeting: notes.txt" stays a valid file name.
    let lower = raw.to_ascii_lowercase();
    [
        "http:",
        "https:",
        "file:",
        "ftp:",
        "data:",
        "javascript:",
        "mailto:",
        "webdav:",
        "dav:",
    ]
    .iter()
    .any(|s| lower.starts_with(s))
}

/// `base` with `segments` appended, each percent-encoded as one path segment.
pub fn join_segments<'a>(base: &Url, segments: impl IntoIterator<Item = &'a str>) -> Url {
    let mut url = base.clone();
    url.set_query(None);
    url.set_fragment(None);
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty();
        path.extend(segments);
    }
    url
}

/// `/seg1/seg2…` with each segment percent-encoded (DAV hrefs relative to the DAV root,
/// such as a SEARCH scope `/files/<uid>/<path>`).
pub fn href_path<'a>(segments: impl IntoIterator<Item = &'a str>) -> String {
    match Url::parse("http://h/") {
        Ok(root) => join_segments(&root, segments).path().to_string(),
        Err(_) => String::from("/"),
    }
}

/// Splits an href (absolute URL or absolute path) into decoded segments.
pub fn href_segments(href: &str) -> Vec<String> {
    let path = match Url::parse(href) {
        Ok(u) => u.path().to_string(),
        Err(_) => href.to_string(),
    };
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect()
}

/// The segments of `href` after `prefix` (decoded), or `None` when it is not under it.
///
/// An href whose segments below the prefix are `.` or `..`, or hold a `/` once decoded
/// (`%2F`), is not under it either: a lying server could otherwise name a row
/// `a/../../bob/x.txt`, a path outside the folder that was listed (found by the
/// `dav_multistatus` fuzz target). An absolute URL has its dot segments resolved by the URL
/// parser before this check; a bare path keeps them, so the check is what refuses them.
pub fn strip_prefix(href: &str, prefix: &[String]) -> Option<Vec<String>> {
    let segs = href_segments(href);
    let rest = segs.strip_prefix(prefix)?;
    let plain = |s: &String| s != "." && s != ".." && !s.contains('/');
    rest.iter().all(plain).then(|| rest.to_vec())
}

/// The decoded path segments of `url` (for building prefixes to strip).
pub fn url_segments(url: &Url) -> Vec<String> {
    href_segments(url.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_could_escape_the_namespace() {
        for bad in [
            "../x",
            "a/../../b",
            "a/./b",
            "a\\b",
            "a\0b",
            "http://evil/x",
            "//evil/x",
            "file:/etc/passwd",
            "a\nb",
        ] {
            let e = UserPath::parse(bad, "path").unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{bad:?} -> {e:?}");
        }
        assert!(UserPath::parse_item("/", "path").is_err());
        assert!(UserPath::parse(&"a".repeat(5000), "path").is_err());
    }

    #[test]
    fn accepts_ordinary_names() {
        let p = UserPath::parse("/Shared-with-bob//plan.md/", "path").unwrap();
        assert_eq!(p.display(), "Shared-with-bob/plan.md");
        assert_eq!(p.name(), "plan.md");
        assert!(UserPath::parse("Meeting: notes 100%.txt", "path").is_ok());
        assert!(UserPath::parse("", "path").unwrap().is_root());
    }

    #[test]
    fn urls_encode_each_segment_and_round_trip() {
        let base = Url::parse("http://nc.example/sub/").unwrap();
        let p = UserPath::parse("R&D/a b/100%?#.txt", "path").unwrap();
        let url = join_segments(
            &base,
            ["remote.php", "dav", "files", "alice"]
                .into_iter()
                .chain(p.segments().iter().map(String::as_str)),
        );
        assert_eq!(
            url.as_str(),
            "http://nc.example/sub/remote.php/dav/files/alice/R&D/a%20b/100%25%3F%23.txt"
        );
        let prefix = url_segments(&join_segments(&base, ["remote.php", "dav", "files", "alice"]));
        let rest = strip_prefix(url.path(), &prefix).unwrap();
        assert_eq!(rest.join("/"), "R&D/a b/100%?#.txt");
        assert!(strip_prefix("/remote.php/dav/files/bob/x", &prefix).is_none());
        // Dot segments and encoded slashes below the prefix name no row (fuzz finding).
        for lying in [
            "/sub/remote.php/dav/files/alice/a/../../bob/x.txt",
            "/sub/remote.php/dav/files/alice/./x.txt",
            "/sub/remote.php/dav/files/alice/%2e%2e/bob/x.txt",
            "/sub/remote.php/dav/files/alice/a%2F..%2F..%2Fbob/x.txt",
        ] {
            assert!(strip_prefix(lying, &prefix).is_none(), "{lying}");
        }
        let plain = strip_prefix("/sub/remote.php/dav/files/alice/a/x..txt", &prefix).unwrap();
        assert_eq!(plain.join("/"), "a/x..txt");
    }
}
