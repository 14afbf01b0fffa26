//! Document extraction of PDF (`index::extract::extract_window` with `Format::Pdf`, through
//! pdf-extract), as the index and files_read read an upload.
//!
//! pdf-extract panics on some malformed files; the extractor catches that and reports a
//! failed extraction (a bad upload must not take the server down), so a panic caught there
//! is no finding: the panic hook libfuzzer-sys installs (which aborts at once) is replaced by
//! a silent one, and a panic that escapes the extractor still aborts the run (libfuzzer-sys
//! aborts on any panic leaving the target). Bounded work is the property that matters here:
//! dev/fuzz.sh runs it with `-timeout` and `-rss_limit_mb` (docs/testing.md states them).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_nextcloud::index::extract::{self, Format, MAX_TEXT_BYTES};

fuzz_target!(
    init: {
        std::panic::set_hook(Box::new(|_| {}));
    },
    |data: &[u8]| {
        if let Ok(doc) = extract::extract(Format::Pdf, data) {
            assert!(doc.text.len() <= MAX_TEXT_BYTES);
        }
    }
);
