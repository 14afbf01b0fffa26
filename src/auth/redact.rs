//! Keeps credentials out of logs.
//!
//! Upstream error text (a reqwest error with a URL, an MCP server's message) can carry a
//! token. Anything that might is passed through [`redact`] before it is logged. It removes
//! Bearer/Basic credentials by value shape and `key=value` pairs whose key names a secret.

/// Returns `text` with credential-looking values replaced by `***`.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((idx, skip)) = next_secret(rest) {
        out.push_str(&rest[..idx + skip]);
        out.push_str("***");
        let tail = &rest[idx + skip..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '&' | ';' | '}' | ')'))
            .unwrap_or(tail.len());
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

const MARKERS: [&str; 10] = [
    "bearer ",
    "basic ",
    "token=",
    "password=",
    "secret=",
    "api_key=",
    "apikey=",
    "authorization=",
    "access_token=",
    "refresh_token=",
];

/// Finds the earliest marker (case-insensitive) and returns (its index, its length).
fn next_secret(s: &str) -> Option<(usize, usize)> {
    let lower = s.to_ascii_lowercase();
    MARKERS
        .iter()
        .filter_map(|m| lower.find(m).map(|i| (i, m.len())))
        .min_by_key(|(i, _)| *i)
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn removes_credentials_by_shape_and_key() {
        let r = redact("GET failed: Authorization: Bearer eyJhbGciOi.abc.def while basic dXNlcjpwdw== retried");
        assert!(!r.contains("eyJhbGciOi"));
        assert!(!r.contains("dXNlcjpwdw"));
        assert!(r.contains("retried"));
        let r = redact("url http://x/?access_token=abc123&x=1 password=hunter2, ok");
        assert!(!r.contains("abc123") && !r.contains("hunter2"));
        assert!(r.contains("x=1") && r.contains("ok"));
        assert_eq!(redact("nothing secret here"), "nothing secret here");
    }
}
