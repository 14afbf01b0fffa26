//! The crate's imports run one way (issue 18: no import cycles): each top-level module may
//! use only modules of a lower layer. A `use crate::x` (or `crate::x::…` path) from a lower
//! layer into a higher one fails here, naming the file, so a ring like the old
//! auth ↔ server ↔ tools ↔ index cannot come back unnoticed. Comments are not imports.

use std::path::Path;

/// Lowest first. `lib.rs` and `main.rs` sit above everything.
const LAYERS: &[&str] = &["error", "config|apps|output", "nextcloud", "index", "extract", "tools", "server"];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.split('|').any(|m| m == module))
}

#[expect(clippy::unwrap_used, reason = "test helper")]
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn imports_only_reach_down() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut checked = 0;
    let mut wrong = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_string_lossy();
        let module = first.trim_end_matches(".rs");
        let Some(own) = layer(module) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for used in code.split("crate::").skip(1) {
                let target: String = used.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                checked += 1;
                match layer(&target) {
                    Some(l) if l > own || (l == own && target != module) => {
                        wrong.push(format!("{}:{}: {module} uses crate::{target}", relative.display(), n + 1))
                    }
                    None if !target.is_empty() && target != "Error" && target != "Config" => {
                        wrong.push(format!("{}:{}: crate::{target} has no layer in LAYERS", relative.display(), n + 1))
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layering:\n{}", wrong.join("\n"));
    assert!(checked > 50, "the scan found only {checked} crate:: paths; is it reading src/?");
}
