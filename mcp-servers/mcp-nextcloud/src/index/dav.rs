//! What the index asks Nextcloud, always as the calling user, over the server's own
//! WebDAV client ([`crate::nextcloud`]).
//!
//! Three requests, all with the caller's token: a SEARCH that verifies a page of
//! candidate file ids in one round trip (an `<d:or>` of `oc:fileid` equalities scoped to
//! `/files/<caller uid>`), a SEARCH that lists the caller's files of the formats we read,
//! and the download of one file. Nextcloud answers only what the caller can open, in the
//! caller's own paths; that answer is the whole of the permission logic.
//!
//! It must never send anything without the caller's session, nor keep what it learns.
//! The search flow talks to the [`CallerDav`] trait so its logic reads without HTTP.

use std::future::Future;

use super::error::IndexError;
use super::extract::Format;
use crate::error::Error;
use crate::nextcloud::paths::{self, UserPath};
use crate::nextcloud::{self, Session, dav, dav_headers, method};

/// What the index needs from Nextcloud, as the calling user.
pub trait CallerDav: Send + Sync {
    /// The caller's files among `ids` (what is not returned, the caller cannot open).
    fn by_ids(&self, ids: &[i64]) -> impl Future<Output = Result<Vec<DavFile>, IndexError>> + Send;
    /// The caller's files whose names look like documents we extract.
    fn documents(&self) -> impl Future<Output = Result<Vec<DavFile>, IndexError>> + Send;
    /// A file of the caller's tree, refusing more than `max_bytes`.
    fn download(&self, path: &str, max_bytes: usize) -> impl Future<Output = Result<Vec<u8>, IndexError>> + Send;
}

/// A file as Nextcloud showed it to the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DavFile {
    pub file_id: i64,
    /// Without the surrounding quotes.
    pub etag: String,
    /// The caller's own path, relative to their root (`Shared-with-bob/plan.md`).
    pub path: String,
    pub mime: String,
    pub size: u64,
}

impl DavFile {
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or("")
    }

    /// A file row from a multistatus entry; folders and hrefs outside the caller's
    /// files are skipped. A file without a numeric id cannot be matched and is skipped.
    /// Public for the `dav_multistatus` fuzz target (issue #32) only.
    #[doc(hidden)]
    pub fn from_entry(prefix: &[String], e: &dav::Entry) -> Option<DavFile> {
        if e.is_collection() {
            return None;
        }
        let rel = paths::strip_prefix(&e.href, prefix)?;
        // The root of the person's files is a folder whatever its resourcetype claims: an
        // answer that calls it a file names no file (found by the `dav_multistatus` target).
        if rel.is_empty() {
            return None;
        }
        Some(DavFile {
            file_id: e.prop(dav::OC, "fileid")?.parse().ok()?,
            etag: e.prop(dav::DAV, "getetag").unwrap_or("").trim_matches('"').to_string(),
            path: rel.join("/"),
            mime: e.prop(dav::DAV, "getcontenttype").unwrap_or("").to_string(),
            size: e.prop(dav::DAV, "getcontentlength").and_then(|s| s.parse().ok()).unwrap_or(0),
        })
    }
}

/// [`CallerDav`] over one tool call's [`Session`].
pub struct SessionDav<'a, 's> {
    pub session: &'s Session<'a>,
}

impl SessionDav<'_, '_> {
    async fn search(&self, where_xml: &str, what: &str) -> Result<Vec<DavFile>, IndexError> {
        let s = self.session;
        let scope = paths::href_path(["files", s.uid()]);
        let body = dav::search(&scope, where_xml, None);
        let request = s
            .request(method("SEARCH"), s.url(["remote.php", "dav", ""]))
            .headers(dav_headers(None))
            .body(body);
        let found = s.multistatus(request, what).await?;
        let prefix = s.files_prefix();
        Ok(found.iter().filter_map(|e| DavFile::from_entry(&prefix, e)).collect())
    }
}

impl CallerDav for SessionDav<'_, '_> {
    async fn by_ids(&self, ids: &[i64]) -> Result<Vec<DavFile>, IndexError> {
        let ids: Vec<u64> = ids.iter().filter_map(|i| u64::try_from(*i).ok()).collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.search(&dav::where_file_ids(&ids), "verifying search results").await
    }

    async fn documents(&self) -> Result<Vec<DavFile>, IndexError> {
        let likes: String = Format::NAME_PATTERNS.iter().map(|p| dav::where_name_like(p)).collect();
        self.search(&format!("<d:or>{likes}</d:or>"), "listing your documents").await
    }

    async fn download(&self, path: &str, max_bytes: usize) -> Result<Vec<u8>, IndexError> {
        let s = self.session;
        let path = UserPath::parse_item(path, "path")?;
        let response = s
            .send(s.request(http::Method::GET, s.files_url(&path)), "reading a document")
            .await?;
        Ok(nextcloud::read_bounded(response, max_bytes, "reading a document").await?)
    }
}

impl From<Error> for IndexError {
    fn from(e: Error) -> Self {
        IndexError::Nextcloud(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn entry(href: &str, props: &[(&str, &str, &str)], folder: bool) -> dav::Entry {
        let mut map = BTreeMap::new();
        for (ns, local, v) in props {
            map.insert(dav::clark(ns, local), (*v).to_string());
        }
        dav::Entry {
            href: href.into(),
            props: map,
            resource_types: if folder {
                vec![dav::clark(dav::DAV, "collection")]
            } else {
                Vec::new()
            },
        }
    }

    #[test]
    fn entries_become_caller_paths_ids_and_bare_etags() {
        let prefix = paths::href_segments("/remote.php/dav/files/bob");
        let e = entry(
            "/remote.php/dav/files/bob/Shared-with-bob/plan%20v2.md",
            &[
                (dav::OC, "fileid", "42"),
                (dav::DAV, "getetag", "\"abc\""),
                (dav::DAV, "getcontenttype", "text/markdown"),
                (dav::DAV, "getcontentlength", "120"),
            ],
            false,
        );
        let f = DavFile::from_entry(&prefix, &e).expect("a file");
        assert_eq!(
            f,
            DavFile {
                file_id: 42,
                etag: "abc".into(),
                path: "Shared-with-bob/plan v2.md".into(),
                mime: "text/markdown".into(),
                size: 120
            }
        );
        assert_eq!(f.name(), "plan v2.md");
        assert!(DavFile::from_entry(&prefix, &entry("/remote.php/dav/files/bob/x/", &[(dav::OC, "fileid", "1")], true)).is_none());
        assert!(DavFile::from_entry(&prefix, &entry("/remote.php/dav/files/alice/x", &[(dav::OC, "fileid", "1")], false)).is_none());
        assert!(DavFile::from_entry(&prefix, &entry("/remote.php/dav/files/bob/x", &[], false)).is_none());
        // The root answered as a file (a mis-cased `collecTion`): no file with an empty path.
        assert!(DavFile::from_entry(&prefix, &entry("/remote.php/dav/files/bob/", &[(dav::OC, "fileid", "1")], false)).is_none());
    }
}
