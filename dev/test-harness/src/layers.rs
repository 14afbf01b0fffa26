//! Reads a crate's module import graph from its sources and checks it against a layering:
//! the one graph reader behind every crate's layering test (STYLE 4b: imports run one way,
//! down; a test writes the allowed directions down).
//!
//! A crate writes its layers down once, lowest first, as module paths (`"config"`,
//! `"auth::redact"`, `"store|approval"` for several modules in one layer). A file belongs to
//! the most specific entry that is a prefix of its module path, and so does every module an
//! import names. An import may reach only a lower layer, or another file of its own entry
//! (what a module does inside itself is its own business); a module of the same layer but
//! another entry, or of a higher one, is an arrow against the table and fails the test, as does
//! a module with no entry at all, so a new module must be placed before it can be imported.
//!
//! What counts as an import: every `crate::…` path (in `use` trees, braces included, and in
//! expressions), and every `super::…`/`self::…` path resolved from the inline module it is
//! written in. Comments, strings and character literals are not read. `lib.rs` and `main.rs`
//! sit above every layer and are not checked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One import of one file: the module it was written in and the module path it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// The file, relative to the crate's `src/`.
    pub file: PathBuf,
    pub line: usize,
    /// The module path of the file (of the inline module the import is written in).
    pub from: Vec<String>,
    /// The path as written, resolved to the crate root (`crate::` dropped).
    pub path: Vec<String>,
}

/// A crate's layering, lowest layer first.
pub struct Layers<'a> {
    layers: &'a [&'a str],
    /// Items of the crate root that are re-exports of a lower module (`crate::Error` for
    /// `pub use error::Error`), and the module each one stands for.
    root_aliases: &'a [(&'a str, &'a str)],
}

impl<'a> Layers<'a> {
    pub fn new(layers: &'a [&'a str]) -> Self {
        Layers { layers, root_aliases: &[] }
    }

    pub fn with_root_aliases(mut self, aliases: &'a [(&'a str, &'a str)]) -> Self {
        self.root_aliases = aliases;
        self
    }

    /// The entry `module` belongs to (the most specific prefix), and its layer.
    pub fn entry(&self, module: &[String]) -> Option<(usize, &'a str)> {
        let mut best: Option<(usize, &'a str, usize)> = None;
        for (layer, names) in self.layers.iter().enumerate() {
            for name in names.split('|') {
                let parts: Vec<&str> = name.split("::").collect();
                let matches = parts.len() <= module.len() && parts.iter().zip(module).all(|(a, b)| a == b);
                if matches && best.is_none_or(|(_, _, len)| parts.len() > len) {
                    best = Some((layer, name, parts.len()));
                }
            }
        }
        best.map(|(layer, name, _)| (layer, name))
    }

    /// Every import of the crate under `src` that runs against the table, one line each
    /// (`file:line: a uses crate::b…`), and how many imports were read in all.
    pub fn check(&self, src: &Path) -> (Vec<String>, usize) {
        let imports = imports(src);
        let modules = modules(src);
        let mut wrong = Vec::new();
        for import in &imports {
            let top = import.file == Path::new("lib.rs") || import.file == Path::new("main.rs");
            if top || import.file.starts_with("bin") {
                continue;
            }
            let where_ = format!("{}:{}", import.file.display(), import.line);
            let Some((own, own_name)) = self.entry(&import.from) else {
                wrong.push(format!("{where_}: module {} has no layer in LAYERS", import.from.join("::")));
                continue;
            };
            let target = match self.target_module(&import.path, &modules) {
                Some(t) => t,
                None => {
                    wrong.push(format!(
                        "{where_}: {} uses crate::{}, an item of the crate root (lib.rs sits above every layer)",
                        own_name,
                        import.path.join("::")
                    ));
                    continue;
                }
            };
            match self.entry(&target) {
                Some((layer, name)) if layer > own || (layer == own && name != own_name) => wrong.push(format!(
                    "{where_}: {own_name} uses crate::{} ({name} is not below {own_name})",
                    import.path.join("::")
                )),
                Some(_) => {}
                None => wrong.push(format!(
                    "{where_}: crate::{} names module {}, which has no layer in LAYERS",
                    import.path.join("::"),
                    target.join("::")
                )),
            }
        }
        (wrong, imports.len())
    }

    /// The module an import path names: its longest prefix that is a module of the crate.
    fn target_module(&self, path: &[String], modules: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
        if let Some((_, module)) = self.root_aliases.iter().find(|(item, _)| path.first().is_some_and(|p| p == item)) {
            return Some(module.split("::").map(String::from).collect());
        }
        (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains(p))
    }
}

/// The module path of every `.rs` file under `src` (`store/mod.rs` is `store`).
pub fn modules(src: &Path) -> BTreeSet<Vec<String>> {
    rust_files(src)
        .iter()
        .map(|f| module_of(f.strip_prefix(src).unwrap_or(f)))
        .collect()
}

fn module_of(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if !matches!(stem, "mod" | "lib" | "main") {
            parts.push(stem.to_string());
        }
    }
    parts
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d)
            .unwrap_or_else(|e| panic!("read {}: {e}", d.display()))
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every `crate::`, `super::` and `self::` path of every file under `src`.
pub fn imports(src: &Path) -> Vec<Import> {
    let mut out = Vec::new();
    for file in rust_files(src) {
        let relative = file.strip_prefix(src).unwrap_or(&file).to_path_buf();
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        for (line, from, path) in file_imports(&text, &module_of(&relative)) {
            out.push(Import {
                file: relative.clone(),
                line,
                from,
                path,
            });
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Other,
}

/// Tokens with their line, comments, strings and character literals dropped.
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize, s: &str| s.chars().enumerate().all(|(k, c)| chars.get(i + k) == Some(&c));
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if at(i, "//") {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if at(i, "/*") {
            let mut depth = 0;
            while i < chars.len() {
                if at(i, "/*") {
                    depth += 1;
                    i += 2;
                } else if at(i, "*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                if chars[j] == '\\' {
                    j += 1;
                }
                line += usize::from(chars.get(j) == Some(&'\n'));
                j += 1;
            }
            i = j + 1;
            out.push((Tok::Other, line));
        } else if c == '\'' {
            // A character literal ('a', '\n', '\u{1F600}') or a lifetime ('a).
            if chars.get(i + 1) == Some(&'\\') {
                let mut j = i + 3;
                while j < chars.len() && chars[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
            out.push((Tok::Other, line));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // A raw string, r"…" or r#"…"#, ends at a quote and as many #s as it began with.
            let hashes = chars[i..].iter().take_while(|c| **c == '#').count();
            if matches!(word.as_str(), "r" | "br" | "cr") && chars.get(i + hashes) == Some(&'"') {
                let end: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                let mut j = i + hashes + 1;
                while j < chars.len() && !at(j, &end) {
                    line += usize::from(chars[j] == '\n');
                    j += 1;
                }
                i = j + end.len();
                out.push((Tok::Other, line));
                continue;
            }
            out.push((Tok::Ident(word), line));
        } else if at(i, "::") {
            out.push((Tok::Colons, line));
            i += 2;
        } else {
            out.push((
                match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    _ => Tok::Other,
                },
                line,
            ));
            i += 1;
        }
    }
    out
}

/// The imports of one file whose module path is `module`: (line, module written in, path).
fn file_imports(text: &str, module: &[String]) -> Vec<(usize, Vec<String>, Vec<String>)> {
    let toks = tokens(text);
    let mut out = Vec::new();
    // The inline modules (`mod tests {`) open around the current token, with the brace depth
    // each one closes at.
    let mut scopes: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let ident = |k: usize| match toks.get(k) {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    while i < toks.len() {
        let here: Vec<String> = module.iter().cloned().chain(scopes.iter().map(|(m, _)| m.clone())).collect();
        match &toks[i].0 {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth = depth.saturating_sub(1);
                if scopes.last().is_some_and(|(_, d)| *d == depth) {
                    scopes.pop();
                }
            }
            Tok::Ident(word) if word == "mod" => {
                if let (Some(name), Some((Tok::Open, _))) = (ident(i + 1), toks.get(i + 2)) {
                    scopes.push((name.to_string(), depth));
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Tok::Ident(word)
                if matches!(word.as_str(), "crate" | "super" | "self")
                    && toks.get(i + 1).is_some_and(|(t, _)| *t == Tok::Colons)
                    // `x.self::` cannot occur, but `$crate::` and a path's inner `…::self` can:
                    // only a path's first segment starts one.
                    && !matches!(toks.get(i.wrapping_sub(1)), Some((Tok::Colons, _))) =>
            {
                let line = toks[i].1;
                let mut base: Vec<String> = match word.as_str() {
                    "crate" => Vec::new(),
                    _ => here.clone(),
                };
                let mut j = i;
                // `super::super::…`
                while matches!(ident(j), Some("super" | "self")) && toks.get(j + 1).is_some_and(|(t, _)| *t == Tok::Colons) {
                    if ident(j) == Some("super") {
                        base.pop();
                    }
                    j += 2;
                }
                if word == "crate" {
                    j = i + 2;
                }
                let mut paths = Vec::new();
                let end = use_tree(&toks, j, base, &mut paths);
                for path in paths {
                    out.push((line, here.clone(), path));
                }
                i = end.max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Reads a path or use tree starting at token `i` under `prefix`; pushes every full path it
/// names and returns the index after it.
fn use_tree(toks: &[(Tok, usize)], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let mut path = prefix;
    loop {
        match toks.get(i).map(|(t, _)| t) {
            Some(Tok::Ident(s)) => {
                if s != "self" {
                    path.push(s.clone());
                }
                i += 1;
                if toks.get(i).is_some_and(|(t, _)| *t == Tok::Colons) {
                    i += 1;
                    continue;
                }
                out.push(path);
                return i;
            }
            Some(Tok::Open) => {
                i += 1;
                loop {
                    match toks.get(i).map(|(t, _)| t) {
                        Some(Tok::Close) => return i + 1,
                        Some(Tok::Comma) => i += 1,
                        None => return i,
                        Some(_) => {
                            let next = use_tree(toks, i, path.clone(), out);
                            if next == i {
                                i += 1;
                            } else {
                                i = next;
                            }
                        }
                    }
                }
            }
            // `*`, a turbofish `::<`, or the end: the path so far.
            _ => {
                out.push(path);
                return i;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str, module: &[&str]) -> Vec<String> {
        let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
        file_imports(text, &module).into_iter().map(|(_, _, p)| p.join("::")).collect()
    }

    #[test]
    fn reads_use_trees_expressions_and_relative_paths() {
        let text = r#"
            //! See [`crate::config`].
            use crate::{a::X, b::{c, d::Y}};
            use crate::e as f;
            /* crate::commented */
            fn g() { let s = "crate::in_a_string"; crate::h::call::<u8>(); let c = '"'; }
            use super::sibling::Z;
            mod tests {
                use super::*;
                use super::super::up::W;
            }
            use self::inner::V;
        "#;
        assert_eq!(
            paths(text, &["top", "here"]),
            vec![
                "a::X",
                "b::c",
                "b::d::Y",
                "e",
                "h::call",
                "top::sibling::Z",
                "top::here",
                "top::up::W",
                "top::here::inner::V"
            ]
        );
    }

    #[test]
    fn an_arrow_up_or_sideways_or_to_an_unplaced_module_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path();
        std::fs::create_dir_all(src.join("store")).unwrap();
        std::fs::write(src.join("lib.rs"), "pub mod types; pub mod store; use crate::store::x;").unwrap();
        std::fs::write(src.join("types.rs"), "use crate::store::Backend;\nuse crate::nowhere::Y;").unwrap();
        std::fs::write(src.join("nowhere.rs"), "").unwrap();
        std::fs::write(src.join("store/mod.rs"), "pub mod chat;\nuse crate::types::T;\nuse self::chat::C;").unwrap();
        std::fs::write(src.join("store/chat.rs"), "use super::Backend;\nuse crate::auth::Z;").unwrap();
        std::fs::write(src.join("auth.rs"), "use crate::store::key;").unwrap();
        let (wrong, checked) = Layers::new(&["types", "store|auth"]).check(src);
        assert_eq!(checked, 8, "lib.rs is read but not checked: {wrong:?}");
        assert_eq!(
            wrong,
            vec![
                "auth.rs:1: auth uses crate::store::key (store is not below auth)",
                "store/chat.rs:2: store uses crate::auth::Z (auth is not below store)",
                "types.rs:1: types uses crate::store::Backend (store is not below types)",
                "types.rs:2: crate::nowhere::Y names module nowhere, which has no layer in LAYERS",
            ]
        );
    }

    #[test]
    fn the_most_specific_entry_wins_and_arrows_must_point_down() {
        let layers = Layers::new(&["types", "store|auth::identity", "auth"]);
        let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
        assert_eq!(layers.entry(&m("auth::identity::x")), Some((1, "auth::identity")));
        assert_eq!(layers.entry(&m("auth::replay")), Some((2, "auth")));
        assert_eq!(layers.entry(&m("types")), Some((0, "types")));
        assert_eq!(layers.entry(&m("nowhere")), None);
    }
}
