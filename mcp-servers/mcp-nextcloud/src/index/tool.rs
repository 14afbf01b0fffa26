//! The `files_grep` MCP tool's arguments, output schema and the glue from a tool call (the
//! caller's [`Session`]) to [`super::search::grep`].
//!
//! Declared (name, description, annotations) in [`crate::tools::files`] like every other
//! files tool; this module knows nothing of the catalogue. It must not hold any logic of its
//! own beyond shaping the answer: the flow lives in `search`, access in Nextcloud.

use rmcp::schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Index;
use super::dav::SessionDav;
use super::search::{self, GrepRequest};
use crate::error::Error;
use crate::nextcloud::Session;
use crate::output::Output;

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FilesGrepArgs {
    /// Words to look for. Search syntax is not interpreted: quotes, operators and
    /// punctuation are ignored, only the words count.
    pub query: String,
    /// Folder to search in, relative to the user's root (default: everything).
    pub path: Option<String>,
    /// How many passages to return (default 10, at most 50).
    pub limit: Option<usize>,
}

/// The structured answer (also the tool's output schema).
#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct GrepOutput {
    pub passages: Vec<PassageOut>,
    pub coverage: CoverageOut,
    pub note: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct PassageOut {
    /// The file's path in the user's own tree.
    pub path: String,
    pub file_id: i64,
    /// Heading path of the section, e.g. "Plan > Budget" (empty before the first heading).
    pub heading: String,
    /// Character offset of the section; files_read {path, offset} reads it.
    pub offset: i64,
    pub snippet: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CoverageOut {
    /// The user's documents whose current version is indexed.
    pub indexed_files: usize,
    /// The user's documents of the formats the index reads.
    pub total_files: usize,
    pub percent: u32,
}

/// Runs `files_grep` for the session's caller.
pub async fn call(s: &Session<'_>, index: &Index, args: FilesGrepArgs) -> Result<Output, Error> {
    let dav = SessionDav { session: s };
    let req = GrepRequest {
        query: args.query,
        path: args.path,
        limit: args.limit,
    };
    let result = search::grep(index, &dav, req).await?;
    let out = GrepOutput {
        passages: result
            .passages
            .into_iter()
            .map(|p| PassageOut {
                path: p.path,
                file_id: p.file_id,
                heading: p.heading,
                offset: p.offset,
                snippet: p.snippet,
            })
            .collect(),
        coverage: CoverageOut {
            indexed_files: result.coverage.indexed_files,
            total_files: result.coverage.total_files,
            percent: result.coverage.percent,
        },
        note: result.note,
    };
    Output::new(describe(&out), &out)
}

fn describe(out: &GrepOutput) -> String {
    let mut text = String::new();
    for p in &out.passages {
        let heading = if p.heading.is_empty() {
            String::new()
        } else {
            format!(" — {}", p.heading)
        };
        text.push_str(&format!(
            "- {}{heading} (file_id {}, offset {})\n  {}\n",
            p.path,
            p.file_id,
            p.offset,
            p.snippet.replace('\n', " ")
        ));
    }
    text.push_str(&out.note);
    text
}
