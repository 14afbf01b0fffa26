//! The `files_grep` MCP tool: its arguments, description, output schema and the glue from
//! a tool call (the caller's [`Session`]) to [`super::search::grep`].
//!
//! Registered in [`crate::tools`] like every other tool. It must not hold any logic of its
//! own beyond shaping the answer: the flow lives in `search`, access in Nextcloud.

use rmcp::schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Index;
use super::dav::SessionDav;
use super::search::{self, GrepRequest};
use crate::error::Error;
use crate::nextcloud::Session;
use crate::tools::Output;

pub const NAME: &str = "files_grep";
pub const TITLE: &str = "Search inside documents";
pub const DESCRIPTION: &str = "Search the text inside the user's documents (text, Markdown, HTML, PDF, DOCX, ODT) \
for words, e.g. 'budget forty thousand'. Returns passages with the file's path and file_id, the heading path of the \
section, a snippet with the matching words in **bold**, and an `offset`: call files_read with that path and offset to \
read the whole section. Matching is by words, not meaning: if nothing is found, search again with other words \
(synonyms, the vocabulary the document itself would likely use, another language). Optional `path` limits the \
search to a folder. The index fills as people search, so the answer says how much of the user's documents it covers.";

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
