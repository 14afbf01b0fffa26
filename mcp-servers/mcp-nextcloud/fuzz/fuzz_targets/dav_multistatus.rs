//! The WebDAV readers: a 207 multistatus body (PROPFIND listings, calendar and address-book
//! REPORTs, and the SEARCH answers of files_search and the index warm-up) as
//! `nextcloud::dav::parse_multistatus` reads it, then each entry as the two SEARCH/PROPFIND
//! row readers take it (`tools::files::entry`, `index::dav::DavFile::from_entry`).
//!
//! Properties: nothing panics; a row is only ever made from an href inside the caller's own
//! files (the prefix), and its path never climbs out of it (no `..` segment, no empty one).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_nextcloud::index::dav::DavFile;
use mcp_nextcloud::nextcloud::dav::parse_multistatus;
use mcp_nextcloud::tools::files;

fuzz_target!(|xml: &str| {
    let Ok(entries) = parse_multistatus(xml) else { return };
    let prefix: Vec<String> = ["remote.php", "dav", "files", "alice"].map(String::from).to_vec();
    for e in &entries {
        let _ = e.is_collection();
        if let Some(row) = files::entry(&prefix, e) {
            assert!(
                !row.path.split('/').any(|s| s == ".." || s == "."),
                "path {:?} from {:?}",
                row.path,
                e.href
            );
        }
        if let Some(file) = DavFile::from_entry(&prefix, e) {
            assert!(
                !file.path.split('/').any(|s| s == ".." || s == "." || s.is_empty()),
                "path {:?} from {:?}",
                file.path,
                e.href
            );
            let _ = file.name();
        }
    }
});
