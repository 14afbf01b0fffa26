//! The crate's imports run one way (issue 18: no import cycles): each top-level module may
//! use only modules of a lower layer. A `use crate::x` (or `crate::x::…` path) from a lower
//! layer into a higher one fails here, naming the file, so a ring like the old
//! auth ↔ server ↔ tools ↔ index cannot come back unnoticed. Comments are not imports.
//! The graph is read by the workspace's one reader (`test_harness::layers`).

use std::path::Path;
use test_harness::layers::Layers;

/// Lowest first. `lib.rs` and `main.rs` sit above everything.
const LAYERS: &[&str] = &[
    "error",
    "config|apps|output",
    "nextcloud|convert",
    "index",
    "extract",
    "tools",
    "server",
];

#[test]
fn imports_only_reach_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (wrong, checked) = Layers::new(LAYERS)
        .with_root_aliases(&[("Error", "error"), ("Config", "config")])
        .check(&src);
    assert!(wrong.is_empty(), "imports against the layering:\n{}", wrong.join("\n"));
    assert!(checked > 50, "the scan found only {checked} crate:: paths; is it reading src/?");
}
