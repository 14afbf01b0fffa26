//! `files_convert`: a document converted by the document server, written next to it (or at
//! `target`) as the caller. Offered only when a document server is configured
//! (`MCP_DOCSERVER_URL`); [`super::Tools::new`] leaves this router out otherwise.
//!
//! The order is the guarantee: nothing is lent before Nextcloud has handed the source to the
//! caller (a 404 stops the call with no loan ever made), nothing is written before the whole
//! result is in hand, and the one write is [`super::files::put_confirmed`] (refusing an
//! existing target unless `overwrite: true`). The document server sees the loan URL and the
//! file's name only.

use std::time::{Duration, Instant};

use mcp_resource_server::Caller;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::schemars::JsonSchema;
use rmcp::{tool, tool_router};
use serde::Serialize;

use super::args::FilesConvertArgs;
use super::files::{put_confirmed, stat};
use super::{Tools, input, output};
use crate::convert::{self, docserver};
use crate::error::Error;
use crate::nextcloud::paths::UserPath;
use crate::nextcloud::{self};
use crate::output::Output;

/// The largest source files_convert downloads and lends.
pub const MAX_CONVERT_BYTES: usize = 50 * 1024 * 1024;

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ConvertResult {
    pub source: String,
    /// The path written.
    pub target: String,
    pub format: String,
    pub file_id: Option<u64>,
    /// True when the target did not exist before.
    pub created: bool,
    pub size: u64,
    /// Where the time went, in milliseconds.
    pub timings_ms: Timings,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Timings {
    /// Downloading the source from Nextcloud as the user.
    pub download: u64,
    /// From lending the file until the document server fetched it.
    pub loan: u64,
    /// From that fetch until the document server answered with the result.
    pub conversion: u64,
    /// Fetching the result from the document server.
    pub fetch: u64,
    /// Uploading the result to Nextcloud as the user, and reading it back.
    pub upload: u64,
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The target: `target` as given, or the source's name with the new extension beside it.
pub fn resolve_target(source: &UserPath, to: &str, target: Option<&str>) -> Result<UserPath, Error> {
    if let Some(t) = target {
        return UserPath::parse_item(t, "target");
    }
    let name = source.name();
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    let mut segments = source.segments().to_vec();
    if let Some(last) = segments.last_mut() {
        *last = format!("{stem}.{to}");
    }
    UserPath::parse_item(&segments.join("/"), "target")
}

#[tool_router(router = convert_router, vis = "pub(super)")]
impl Tools {
    #[tool(
        name = "files_convert",
        title = "Convert a document",
        description = "Convert one of the user's documents to another format (pdf, docx, odt, xlsx, ods, pptx, odp, txt, html, md) with the \
document server, e.g. a DOCX to PDF for a customer. The result is written next to the original with the new extension, or at `target`. \
Pass `target` (e.g. the source's folder and name with the new extension) so the person approving sees the exact path written. \
An existing target is refused unless `overwrite: true`. Pairs the document server cannot make are refused with the possible formats.",
        input_schema = input::<FilesConvertArgs>(),
        output_schema = output::<ConvertResult>(),
        annotations(title = "Convert a document", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false),
    )]
    async fn files_convert(&self, caller: Caller, Parameters(args): Parameters<FilesConvertArgs>) -> Result<Output, Error> {
        let Some(converter) = self.converter.as_ref() else {
            return Err(Error::invalid("no document server is configured"));
        };
        let s = &self.session(&caller);
        let source = UserPath::parse_item(&args.path, "path")?;
        let to = args.to.trim().trim_start_matches('.').to_ascii_lowercase();
        let ext = source
            .name()
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        convert::check_pair(&ext, &to)?;
        let target = resolve_target(&source, &to, args.target.as_deref())?;
        if target == source {
            return Err(Error::invalid("target is the source itself"));
        }
        let overwrite = args.overwrite.unwrap_or(false);
        // Refuse an existing target before any work (the upload refuses it again, atomically).
        if let Some(found) = stat(s, &target, "looking at the target").await? {
            if found.is_dir {
                return Err(Error::invalid(format!(
                    "'{}' is a folder; give a file path as target",
                    target.display()
                )));
            }
            if !overwrite {
                return Err(Error::Conflict(format!(
                    "'{}' already exists; pass overwrite: true to replace it",
                    target.display()
                )));
            }
        }

        // 1. The source, as the caller: Nextcloud's 403/404 ends the call here, before any loan.
        let started = Instant::now();
        let response = s
            .send(s.request(http::Method::GET, s.files_url(&source)), "reading the source")
            .await?;
        if response.content_length().is_some_and(|n| n > MAX_CONVERT_BYTES as u64) {
            return Err(Error::invalid(format!("the source is larger than {} MB", MAX_CONVERT_BYTES >> 20)));
        }
        let bytes = nextcloud::read_bounded(response, MAX_CONVERT_BYTES, "reading the source").await?;
        let download = started.elapsed();

        // 2.–3. Lent once, converted, and the loan ended (dropped) whatever happened.
        let lent = Instant::now();
        let key = uuid::Uuid::new_v4().simple().to_string();
        let (result_url, loan_wait) = {
            let lease = converter.loans.lend(bytes)?;
            let url = lease.url.to_string();
            let request = docserver::Request {
                filetype: &ext,
                outputtype: &to,
                key: &key,
                title: source.name(),
                url: &url,
            };
            let answer = converter.docserver.convert(&request).await;
            (answer, lease.claimed_after())
        };
        let result_url = result_url?;
        let converted = lent.elapsed();
        let loan = loan_wait.unwrap_or(converted);

        // 4. The result, whole, before anything is written.
        let fetched = Instant::now();
        let result = converter.docserver.fetch(result_url).await?;
        let fetch = fetched.elapsed();

        // 5. Written as the caller, in one PUT.
        let uploading = Instant::now();
        let written = put_confirmed(s, &target, result, convert::content_type(&to), overwrite).await?;
        let upload = uploading.elapsed();

        let text = format!(
            "{} {} ({} bytes), converted from {} to {to}.",
            if written.created { "Created" } else { "Replaced" },
            target.display(),
            written.size,
            source.display()
        );
        Output::new(
            text,
            &ConvertResult {
                source: source.display(),
                target: target.display(),
                format: to,
                file_id: written.file_id,
                created: written.created,
                size: written.size,
                timings_ms: Timings {
                    download: ms(download),
                    loan: ms(loan),
                    conversion: ms(converted.saturating_sub(loan)),
                    fetch: ms(fetch),
                    upload: ms(upload),
                },
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_target_is_beside_the_source() {
        let src = UserPath::parse_item("Contracts/Customer AG.docx", "path").unwrap();
        assert_eq!(resolve_target(&src, "pdf", None).unwrap().display(), "Contracts/Customer AG.pdf");
        let bare = UserPath::parse_item("README", "path").unwrap();
        assert_eq!(resolve_target(&bare, "pdf", None).unwrap().display(), "README.pdf");
        // The island's approval card names this default (island/src/approval.ts impliedTarget,
        // tested on the same examples): the two must agree.
        let rooted = UserPath::parse_item("/Contracts/Customer AG.docx", "path").unwrap();
        assert_eq!(resolve_target(&rooted, "pdf", None).unwrap().display(), "Contracts/Customer AG.pdf");
        let double = UserPath::parse_item("a.tar.gz", "path").unwrap();
        assert_eq!(resolve_target(&double, "txt", None).unwrap().display(), "a.tar.txt");
        assert_eq!(resolve_target(&src, "pdf", Some("/Out/c.pdf")).unwrap().display(), "Out/c.pdf");
        assert!(resolve_target(&src, "pdf", Some("../x.pdf")).is_err());
    }
}
