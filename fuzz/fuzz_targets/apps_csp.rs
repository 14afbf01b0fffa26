//! The MCP Apps Content-Security-Policy builder (`apps::csp::policy_for`), which parses an
//! app's HTML from an MCP server.
//!
//! Properties: nothing panics; an accepted document's policy starts with `default-src
//! 'none'`, is one header line, and grants nothing but hashes and fixed keywords: never
//! `'unsafe-inline'`, `'unsafe-eval'`, a host, a scheme or a wildcard.
#![no_main]

use libfuzzer_sys::fuzz_target;

/// The only source expressions a policy may hold besides hashes.
const KEYWORDS: [&str; 3] = ["'none'", "'self'", "data:"];

fuzz_target!(|html: &str| {
    let Ok(policy) = tamebi::apps::csp::policy_for(html) else { return };
    assert!(policy.starts_with("default-src 'none'"), "{policy}");
    assert!(!policy.contains(['\r', '\n', '\0']), "{policy}");
    for directive in policy.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let mut words = directive.split_ascii_whitespace();
        let name = words.next().expect("a directive has a name");
        assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{policy}");
        for source in words {
            let hash = source
                .strip_prefix("'sha256-")
                .and_then(|h| h.strip_suffix('\''))
                .is_some_and(|h| h.len() == 44 && h.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')));
            assert!(hash || KEYWORDS.contains(&source), "source {source:?} in {policy}");
        }
    }
});
