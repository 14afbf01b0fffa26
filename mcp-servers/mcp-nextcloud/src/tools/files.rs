//! File tools over WebDAV: list, read (with text extraction and paging), find by name,
//! write, move. Every path is the caller's own (relative to their root) and every request
//! carries their bearer; what Nextcloud does not return is never obtained. A write or a move
//! is reported once one PROPFIND shows Nextcloud holds it (the size and ETag written, the move's
//! target); otherwise the call fails as unconfirmed, and nothing is retried.

use mcp_resource_server::Caller;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::schemars::JsonSchema;
use rmcp::{tool, tool_router};
use serde::Serialize;

use super::args::{FilesFindArgs, FilesListArgs, FilesMoveArgs, FilesReadArgs, FilesWriteArgs};
use super::{Tools, app, input, output};
use crate::apps;
use crate::error::Error;
use crate::extract::{self, Extracted};
use crate::index::extract::{Format, SheetWindow};
use crate::index::tool::{self as index_tool, FilesGrepArgs, GrepOutput};
use crate::nextcloud::paths::{self, UserPath};
use crate::nextcloud::{self, Session, dav, dav_headers, method};
use crate::output::Output;

/// The files tools: one `#[tool]` function each (see [`super`] for how to add one).
#[tool_router(router = files_router, vis = "pub(super)")]
impl Tools {
    #[tool(
        name = "files_list",
        title = "List a folder",
        description = "List the files and folders in one of the user's folders. `path` is relative to the user's own root ('' for the root). Each row carries the path and file_id the other file tools take.",
        input_schema = input::<FilesListArgs>(),
        output_schema = output::<Listing>(),
        annotations(title = "List a folder", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        meta = app(apps::FILES_TABLE),
    )]
    async fn files_list(&self, caller: Caller, Parameters(args): Parameters<FilesListArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let path = UserPath::parse(&args.path, "path")?;
        let request = s
            .request(method("PROPFIND"), s.files_url(&path))
            .headers(dav_headers(Some("1")))
            .body(dav::propfind_files());
        let found = s.multistatus(request, "listing the folder").await?;
        let prefix = s.files_prefix();
        let mut entries: Vec<FileEntry> = found.iter().filter_map(|e| entry(&prefix, e)).collect();
        // The folder itself comes back first; a file path lists just that file.
        let own = path.display();
        if entries.iter().any(|e| e.path == own && e.is_dir) {
            entries.retain(|e| e.path != own);
        }
        entries.sort_by(|a, b| {
            b.is_dir
                .cmp(&a.is_dir)
                .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
        });
        let shown = if own.is_empty() {
            "your root folder".to_string()
        } else {
            format!("'{own}'")
        };
        let text = format!("{} item(s) in {shown}:\n{}", entries.len(), describe(&entries));
        Output::new(
            text,
            &Listing {
                path: own,
                entries,
                truncated: None,
            },
        )
    }

    #[tool(
        name = "files_read",
        title = "Read a file",
        description = "Read a file's text by `path` or `file_id`. HTML, Markdown, plain text, PDF, DOCX and ODT come back as text; spreadsheets (XLSX, XLSM, ODS, CSV) as one Markdown table per sheet (formulas as their values); presentations (PPTX, ODP) slide by slide with speaker notes; images and other binaries are described, not shown. Long files are paged: pass the returned `next_offset` as `offset`. A sheet cut for length says so; read on with `sheet` and `row`.",
        input_schema = input::<FilesReadArgs>(),
        output_schema = output::<ReadResult>(),
        annotations(title = "Read a file", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
    )]
    async fn files_read(&self, caller: Caller, Parameters(args): Parameters<FilesReadArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let offset = args.offset.unwrap_or(0);
        let limit = args.limit.unwrap_or(DEFAULT_READ_CHARS);
        if limit == 0 || limit > MAX_READ_CHARS {
            return Err(Error::invalid(format!("limit must be between 1 and {MAX_READ_CHARS} characters")));
        }
        if args.row == Some(0) {
            return Err(Error::invalid("row starts at 1"));
        }
        let window = SheetWindow {
            sheet: args.sheet.clone(),
            first_row: args.row.unwrap_or(1),
        };
        let (path, mut file_id) = match (args.path.as_deref(), args.file_id) {
            (Some(p), None) => (UserPath::parse_item(p, "path")?, None),
            (None, Some(id)) => {
                let found = path_of_id(s, id.0).await?;
                if found.is_dir {
                    return Err(Error::invalid("that id is a folder; use files_list with its path"));
                }
                (UserPath::parse_item(&found.path, "path")?, Some(id.0))
            }
            (Some(_), Some(_)) => return Err(Error::invalid("give either path or file_id, not both")),
            (None, None) => return Err(Error::invalid("give path or file_id")),
        };
        let response = s.send(s.request(http::Method::GET, s.files_url(&path)), "reading the file").await?;
        let headers = response.headers().clone();
        let mime = headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/octet-stream")
            .to_string();
        if file_id.is_none() {
            file_id = oc_file_id(&headers);
        }
        let declared = response.content_length();
        let name = path.name().to_string();
        if (args.sheet.is_some() || args.row.is_some()) && !Format::readable(&mime, &name).is_some_and(Format::is_spreadsheet) {
            return Err(Error::invalid("sheet and row apply to spreadsheets only (xlsx, xlsm, ods, csv)"));
        }
        let (extracted, size) = if declared.is_some_and(|n| n > MAX_READ_BYTES) || Format::readable(&mime, &name).is_none() {
            // Not text, or too large to read: describe without downloading the body.
            drop(response);
            let why = if Format::readable(&mime, &name).is_none() {
                "not a text format"
            } else {
                "too large to read"
            };
            (Extracted::Binary { reason: why.into() }, declared.unwrap_or(0))
        } else {
            let bytes = nextcloud::read_bounded(response, MAX_READ_BYTES as usize, "reading the file").await?;
            let size = bytes.len() as u64;
            let (m, n) = (mime.clone(), name.clone());
            // Parsers run on untrusted bytes: off the async threads, and a panic is contained.
            let extracted = tokio::task::spawn_blocking(move || extract::extract(&bytes, &m, &n, &window))
                .await
                .unwrap_or_else(|_| Extracted::Binary {
                    reason: "the content could not be read".into(),
                });
            (extracted, size)
        };
        let display = path.display();
        let result = match extracted {
            Extracted::Text { text, format } => {
                let total = text.chars().count();
                if offset > total {
                    return Err(Error::invalid(format!(
                        "offset {offset} is past the end (the text has {total} characters)"
                    )));
                }
                let page: String = text.chars().skip(offset).take(limit).collect();
                let end = offset + page.chars().count();
                let next = (end < total).then_some(end);
                ReadResult {
                    path: display,
                    file_id,
                    mime,
                    size,
                    format: format.into(),
                    total_chars: total,
                    offset,
                    next_offset: next,
                    text: page,
                }
            }
            Extracted::Binary { reason } => {
                let text = format!("{display} is {mime}, {size} bytes; its content is not shown ({reason}).");
                ReadResult {
                    path: display,
                    file_id,
                    mime,
                    size,
                    format: "binary".into(),
                    total_chars: 0,
                    offset: 0,
                    next_offset: None,
                    text,
                }
            }
        };
        let header = match result.next_offset {
            Some(n) => format!(
                "{} ({}; characters {}-{} of {}; next_offset {n})\n\n",
                result.path, result.format, result.offset, n, result.total_chars
            ),
            None if result.format == "binary" => String::new(),
            None => format!(
                "{} ({}; characters {}-{} of {})\n\n",
                result.path, result.format, result.offset, result.total_chars, result.total_chars
            ),
        };
        let text = format!("{header}{}", result.text);
        Output::new(text, &result)
    }

    #[tool(
        name = "files_find",
        title = "Find files by name",
        description = "Find files and folders whose name matches `pattern` (`*` is a wildcard; without one, names containing the pattern match). Optional `path` limits the search to a folder.",
        input_schema = input::<FilesFindArgs>(),
        output_schema = output::<Listing>(),
        annotations(title = "Find files by name", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        meta = app(apps::FILES_TABLE),
    )]
    async fn files_find(&self, caller: Caller, Parameters(args): Parameters<FilesFindArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let pattern = args.pattern.trim();
        if pattern.is_empty() || pattern.chars().all(|c| c == '*') {
            return Err(Error::invalid("pattern must contain at least one character besides '*'"));
        }
        if pattern.len() > 255 || pattern.contains(['/', '\\', '\0']) || pattern.chars().any(char::is_control) {
            return Err(Error::invalid(
                "pattern is a file name pattern: no '/', '\\' or control characters, at most 255 bytes",
            ));
        }
        let limit = args.limit.unwrap_or(50);
        if limit == 0 || limit > 500 {
            return Err(Error::invalid("limit must be between 1 and 500"));
        }
        let scope_path = UserPath::parse(&args.path, "path")?;
        let like = if pattern.contains('*') {
            pattern.replace('*', "%")
        } else {
            format!("%{pattern}%")
        };
        // The scope is an href: its segments are percent-encoded like any DAV href.
        let scope = paths::href_path(
            ["files", s.uid()]
                .into_iter()
                .chain(scope_path.segments().iter().map(String::as_str)),
        );
        let body = dav::search(&scope, &dav::where_name_like(&like), Some(limit + 1));
        let request = s
            .request(method("SEARCH"), s.url(["remote.php", "dav", ""]))
            .headers(dav_headers(None))
            .body(body);
        let found = s.multistatus(request, "searching files").await?;
        let prefix = s.files_prefix();
        let mut entries: Vec<FileEntry> = found
            .iter()
            .filter_map(|e| entry(&prefix, e))
            .filter(|e| UserPath::parse(&e.path, "path").is_ok_and(|p| scope_path.contains(&p) && p != scope_path))
            .collect();
        let truncated = entries.len() > limit;
        entries.truncate(limit);
        let text = format!(
            "{} match(es) for '{pattern}'{}:\n{}",
            entries.len(),
            if truncated { " (more exist; raise limit)" } else { "" },
            describe(&entries)
        );
        Output::new(
            text,
            &Listing {
                path: scope_path.display(),
                entries,
                truncated: Some(truncated),
            },
        )
    }

    #[tool(
        name = "files_grep",
        title = "Search inside documents",
        description = "Search the text inside the user's documents (text, Markdown, HTML, PDF, DOCX, ODT, spreadsheets, presentations) \
for words, e.g. 'budget forty thousand'. Returns passages with the file's path and file_id, the heading path of the \
section, a snippet with the matching words in **bold**, and an `offset`: call files_read with that path and offset to \
read the whole section. Matching is by words, not meaning: if nothing is found, search again with other words \
(synonyms, the vocabulary the document itself would likely use, another language). Optional `path` limits the \
search to a folder. The index fills as people search, so the answer says how much of the user's documents it covers.",
        input_schema = input::<FilesGrepArgs>(),
        output_schema = output::<GrepOutput>(),
        annotations(title = "Search inside documents", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
    )]
    async fn files_grep(&self, caller: Caller, Parameters(args): Parameters<FilesGrepArgs>) -> Result<Output, Error> {
        index_tool::call(&self.session(&caller), &self.index, args).await
    }

    #[tool(
        name = "files_write",
        title = "Write a text file",
        description = "Create a text file or replace its content. Replacing is destructive; pass `overwrite: false` to refuse when the file exists.",
        input_schema = input::<FilesWriteArgs>(),
        output_schema = output::<WriteResult>(),
        annotations(title = "Write a text file", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false),
    )]
    async fn files_write(&self, caller: Caller, Parameters(args): Parameters<FilesWriteArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let path = UserPath::parse_item(&args.path, "path")?;
        if args.content.len() > MAX_WRITE_BYTES {
            return Err(Error::invalid(format!("content is too large (at most {MAX_WRITE_BYTES} bytes)")));
        }
        let overwrite = args.overwrite.unwrap_or(true);
        let written = put_confirmed(s, &path, args.content.into_bytes(), "text/plain; charset=utf-8", overwrite).await?;
        let (display, size, created, file_id) = (path.display(), written.size, written.created, written.file_id);
        let text = format!("{} {display} ({size} bytes).", if created { "Created" } else { "Replaced" },);
        Output::new(
            text,
            &WriteResult {
                path: display,
                file_id,
                created,
                size: size as usize,
            },
        )
    }

    #[tool(
        name = "files_move",
        title = "Move or rename",
        description = "Move or rename a file or folder. Refuses to replace an existing target unless `overwrite: true`.",
        input_schema = input::<FilesMoveArgs>(),
        output_schema = output::<MoveResult>(),
        annotations(title = "Move or rename", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false),
    )]
    async fn files_move(&self, caller: Caller, Parameters(args): Parameters<FilesMoveArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let from = UserPath::parse_item(&args.from, "from")?;
        let to = UserPath::parse_item(&args.to, "to")?;
        if from == to {
            return Err(Error::invalid("from and to are the same path"));
        }
        if from.contains(&to) {
            return Err(Error::invalid("cannot move a folder into itself"));
        }
        let overwrite = args.overwrite.unwrap_or(false);
        let request = s
            .request(method("MOVE"), s.files_url(&from))
            .header("Destination", s.files_url(&to).as_str())
            .header("Overwrite", if overwrite { "T" } else { "F" });
        // MOVE is not idempotent: a lost answer is unconfirmed, never retryable (issue 32).
        let response = match s.send_once(request, "moving").await {
            Err(Error::Conflict(_)) if !overwrite => {
                return Err(Error::Conflict(format!(
                    "'{}' already exists or its folder is missing; pass overwrite: true to replace it",
                    to.display()
                )));
            }
            other => other?,
        };
        let replaced = response.status() == http::StatusCode::NO_CONTENT;
        // Read the destination back: a move Nextcloud acknowledged is reported only once the
        // target is there.
        let did = format!("Nextcloud accepted moving '{}' to '{}'", from.display(), to.display());
        if stat(s, &to, "reading the target back")
            .await
            .map_err(|e| Error::unconfirmed(&did, e))?
            .is_none()
        {
            return Err(Error::Unconfirmed(format!("{did}, but there is nothing at '{}' now", to.display())));
        }
        let text = format!("Moved {} to {}.", from.display(), to.display());
        Output::new(
            text,
            &MoveResult {
                from: from.display(),
                to: to.display(),
                replaced,
            },
        )
    }
}

const DEFAULT_READ_CHARS: usize = 20_000;
const MAX_READ_CHARS: usize = 100_000;
/// Files larger than this are described, not downloaded.
const MAX_READ_BYTES: u64 = 50 * 1024 * 1024;
/// The largest content files_write accepts.
pub const MAX_WRITE_BYTES: usize = 2 * 1024 * 1024;

/// One file or folder.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct FileEntry {
    pub name: String,
    /// Path relative to the caller's root: what the other file tools take.
    pub path: String,
    pub file_id: Option<u64>,
    pub size: Option<u64>,
    pub mime: Option<String>,
    /// Last modification, RFC 3339 UTC.
    pub modified: Option<String>,
    /// Nextcloud permission letters (R share, S shared, M mounted, G read, D delete, NV rename/move, W write, CK create).
    pub permissions: Option<String>,
    pub is_dir: bool,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Listing {
    /// The folder listed or searched ('' is the root).
    pub path: String,
    pub entries: Vec<FileEntry>,
    /// Set by files_find when more matches may exist than were returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ReadResult {
    pub path: String,
    pub file_id: Option<u64>,
    pub mime: String,
    pub size: u64,
    /// `text`, `markdown`, `html`, `pdf`, `docx`, `odt`, `xlsx`, `ods`, `csv`, `pptx`, `odp`, or
    /// `binary` (described only).
    pub format: String,
    /// Length of the whole extracted text, in characters.
    pub total_chars: usize,
    pub offset: usize,
    /// Where the next page starts; absent at the end.
    pub next_offset: Option<usize>,
    pub text: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct WriteResult {
    pub path: String,
    pub file_id: Option<u64>,
    /// True when the file did not exist before.
    pub created: bool,
    pub size: usize,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct MoveResult {
    pub from: String,
    pub to: String,
    /// True when an existing target was replaced.
    pub replaced: bool,
}

/// Turns one DAV entry into a row, or `None` when its href is outside the caller's files.
/// Public for the `dav_multistatus` fuzz target (issue #32) only.
#[doc(hidden)]
pub fn entry(prefix: &[String], e: &dav::Entry) -> Option<FileEntry> {
    let rel = paths::strip_prefix(&e.href, prefix)?;
    let is_dir = e.is_collection();
    let name = e
        .prop(dav::DAV, "displayname")
        .map(str::to_string)
        .or_else(|| rel.last().cloned())
        .unwrap_or_default();
    let number = |ns, local| e.prop(ns, local).and_then(|s| s.parse::<u64>().ok());
    let size = if is_dir {
        number(dav::OC, "size")
    } else {
        number(dav::DAV, "getcontentlength").or_else(|| number(dav::OC, "size"))
    };
    let modified = e
        .prop(dav::DAV, "getlastmodified")
        .and_then(|s| chrono::DateTime::parse_from_rfc2822(s).ok())
        .map(|d| d.with_timezone(&chrono::Utc).to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    Some(FileEntry {
        name,
        path: rel.join("/"),
        file_id: number(dav::OC, "fileid"),
        size,
        mime: if is_dir {
            None
        } else {
            e.prop(dav::DAV, "getcontenttype").map(str::to_string)
        },
        modified,
        permissions: e.prop(dav::OC, "permissions").map(str::to_string),
        is_dir,
    })
}

fn describe(entries: &[FileEntry]) -> String {
    entries
        .iter()
        .map(|e| {
            if e.is_dir {
                format!("- {}/ (folder, id {})", e.path, e.file_id.map_or("?".into(), |i| i.to_string()))
            } else {
                format!(
                    "- {} ({} bytes, id {})",
                    e.path,
                    e.size.unwrap_or(0),
                    e.file_id.map_or("?".into(), |i| i.to_string())
                )
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Finds the caller's path for a file id with one SEARCH in the caller's scope.
async fn path_of_id(s: &Session<'_>, id: u64) -> Result<FileEntry, Error> {
    let scope = paths::href_path(["files", s.uid()]);
    let body = dav::search(&scope, &dav::where_file_ids(&[id]), Some(1));
    let request = s
        .request(method("SEARCH"), s.url(["remote.php", "dav", ""]))
        .headers(dav_headers(None))
        .body(body);
    let found = s.multistatus(request, "looking up the file id").await?;
    let prefix = s.files_prefix();
    found
        .iter()
        .filter_map(|e| entry(&prefix, e))
        .find(|e| e.file_id == Some(id))
        .ok_or(Error::NotFound)
}

/// What [`put_confirmed`] wrote, as Nextcloud holds it now.
pub(super) struct Written {
    pub created: bool,
    pub size: u64,
    pub file_id: Option<u64>,
}

/// PUTs `body` to `path` as the caller and reads it back: reported only once one PROPFIND
/// shows Nextcloud holds that size and the version the PUT answered. Without `overwrite`, an
/// existing file is a conflict (`If-None-Match: *`, so a file created meanwhile is not
/// replaced either). Nextcloud stores an upload whole or not at all, so a failed PUT leaves
/// no partial file. The one write of files_write and files_convert.
pub(super) async fn put_confirmed(
    s: &Session<'_>,
    path: &UserPath,
    body: Vec<u8>,
    content_type: &str,
    overwrite: bool,
) -> Result<Written, Error> {
    let len = body.len() as u64;
    let mut request = s
        .request(http::Method::PUT, s.files_url(path))
        .header(http::header::CONTENT_TYPE, content_type)
        .body(body);
    if !overwrite {
        request = request.header(http::header::IF_NONE_MATCH, "*");
    }
    let display = path.display();
    let response = match s.send(request, "writing the file").await {
        Err(Error::Conflict(_)) if !overwrite => {
            return Err(Error::Conflict(format!(
                "'{display}' already exists; pass overwrite: true to replace it"
            )));
        }
        Err(Error::Conflict(_)) => {
            return Err(Error::Conflict(
                "the file could not be written: its folder does not exist or it changed meanwhile".into(),
            ));
        }
        other => other?,
    };
    let created = nextcloud::created(response.status());
    let written_etag = etag(response.headers());
    // Read the file back: the size Nextcloud holds, and its version (ETag) against the one
    // the PUT answered, so a write Nextcloud acknowledged but does not hold is not reported.
    let did = format!("Nextcloud accepted writing '{display}'");
    let now = stat(s, path, "reading the file back")
        .await
        .map_err(|e| Error::unconfirmed(&did, e))?
        .ok_or_else(|| Error::Unconfirmed(format!("{did}, but there is no such file now")))?;
    let size = now.size.unwrap_or_default();
    if now.is_dir || size != len {
        return Err(Error::Unconfirmed(format!("{did} ({len} bytes), but it holds {size} bytes now")));
    }
    if let (Some(written), Some(held)) = (&written_etag, &now.etag)
        && written != held
    {
        return Err(Error::Unconfirmed(format!(
            "{did}, but it holds another version now (ETag {held}, written {written}): it changed since"
        )));
    }
    Ok(Written {
        created,
        size,
        file_id: oc_file_id(response.headers()).or(now.file_id),
    })
}

/// What a read-back needs of one file or folder.
pub(super) struct Stat {
    pub is_dir: bool,
    pub size: Option<u64>,
    pub file_id: Option<u64>,
    pub etag: Option<String>,
}

/// One PROPFIND (Depth 0) of `path`; `None` when Nextcloud says it is not there (404).
pub(super) async fn stat(s: &Session<'_>, path: &UserPath, what: &str) -> Result<Option<Stat>, Error> {
    let request = s
        .request(method("PROPFIND"), s.files_url(path))
        .headers(dav_headers(Some("0")))
        .body(dav::propfind_files());
    let found = match s.multistatus(request, what).await {
        Ok(found) => found,
        Err(Error::NotFound) => return Ok(None),
        Err(e) => return Err(e),
    };
    let prefix = s.files_prefix();
    Ok(found.iter().find_map(|e| {
        let row = entry(&prefix, e)?;
        (row.path == path.display()).then(|| Stat {
            is_dir: row.is_dir,
            size: row.size,
            file_id: row.file_id,
            etag: e.prop(dav::DAV, "getetag").map(unquoted),
        })
    }))
}

/// The ETag a write answered (`OC-ETag` is Nextcloud's copy of it), without quotes.
fn etag(headers: &http::HeaderMap) -> Option<String> {
    ["etag", "oc-etag"]
        .iter()
        .find_map(|h| headers.get(*h)?.to_str().ok())
        .map(unquoted)
        .filter(|e| !e.is_empty())
}

/// An entity tag as a bare value: `W/"abc"`, `"abc"` and `abc` are the same version.
fn unquoted(raw: &str) -> String {
    raw.trim().trim_start_matches("W/").trim_matches('"').to_string()
}

/// Nextcloud's `OC-FileId` header is the numeric id, zero-padded, followed by the instance id.
fn oc_file_id(headers: &http::HeaderMap) -> Option<u64> {
    let v = headers.get("oc-fileid")?.to_str().ok()?;
    let digits: String = v.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|n| *n > 0)
}
