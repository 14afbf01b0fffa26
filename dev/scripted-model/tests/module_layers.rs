//! The scripted model's imports run one way, down (issue 34): a module may use only modules
//! of a lower layer, so a ring like the old script ↔ text_form cannot come back unnoticed.
//! The graph is read by the workspace's one reader (`test_harness::layers`).

use std::path::Path;
use test_harness::layers::Layers;

/// Lowest first. `lib.rs` and `main.rs` sit above everything.
const LAYERS: &[&str] = &["error|call", "openai|text_form", "script", "control|reply", "server"];

#[test]
fn imports_only_reach_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (wrong, checked) = Layers::new(LAYERS).with_root_aliases(&[("Error", "error")]).check(&src);
    assert!(wrong.is_empty(), "imports against the layering:\n{}", wrong.join("\n"));
    assert!(checked > 20, "the scan found only {checked} imports; is it reading src/?");
}
