//! What the index asks Nextcloud, and how it reads the answers.
//!
//! Two WebDAV SEARCH requests, both scoped to `/files/<caller uid>` and sent with the
//! caller's own token: one verifies a page of candidate file ids in a single round trip
//! (an `<d:or>` of `oc:fileid` equalities), one lists the caller's files of the formats we
//! extract (an `<d:or>` of file-name patterns). Nextcloud answers only what the caller can
//! open, in the caller's own paths; that answer is the whole of the permission logic.
//!
//! It owns the request bodies and the multistatus parsing. It must never send anything
//! itself: the transport is [`CallerDav`], implemented over the server's WebDAV client.

use std::future::Future;

use quick_xml::Reader;
use quick_xml::Writer;
use quick_xml::events::{BytesText, Event};

use super::error::{IndexError, NextcloudFailure};

/// What the index needs from Nextcloud, always as the calling user.
pub trait CallerDav: Send + Sync {
    /// The caller's uid, used only to scope the SEARCH (never stored).
    fn uid(&self) -> &str;
    /// `SEARCH /remote.php/dav/` with this body; returns the 207 multistatus body.
    fn search(&self, body: String) -> impl Future<Output = Result<String, IndexError>> + Send;
    /// `GET` of a file in the caller's tree (path relative to their home, starting with
    /// `/`), refusing more than `max_bytes`.
    fn download(
        &self,
        path: &str,
        max_bytes: usize,
    ) -> impl Future<Output = Result<Vec<u8>, IndexError>> + Send;
}

/// A file as Nextcloud showed it to the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DavFile {
    pub file_id: i64,
    /// Without the surrounding quotes.
    pub etag: String,
    /// The caller's own path, relative to their home, decoded, starting with `/`.
    pub path: String,
    pub mime: String,
    pub size: u64,
}

impl DavFile {
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or("")
    }
}

/// SEARCH body: the caller's files whose id is one of `ids`.
pub fn by_ids_body(uid: &str, ids: &[i64]) -> Result<String, IndexError> {
    search_body(uid, |w| {
        w.create_element("d:or").write_inner_content(|w| {
            for id in ids {
                w.create_element("d:eq").write_inner_content(|w| {
                    w.create_element("d:prop")
                        .write_inner_content(|w| w.create_element("oc:fileid").write_empty().map(|_| ()))?;
                    w.create_element("d:literal")
                        .write_text_content(BytesText::new(&id.to_string()))?;
                    Ok(())
                })?;
            }
            Ok(())
        })?;
        Ok(())
    })
}

/// SEARCH body: the caller's files whose name matches one of `patterns` (SQL LIKE).
pub fn by_names_body(uid: &str, patterns: &[&str]) -> Result<String, IndexError> {
    search_body(uid, |w| {
        w.create_element("d:or").write_inner_content(|w| {
            for p in patterns {
                w.create_element("d:like").write_inner_content(|w| {
                    w.create_element("d:prop").write_inner_content(|w| {
                        w.create_element("d:displayname").write_empty().map(|_| ())
                    })?;
                    w.create_element("d:literal").write_text_content(BytesText::new(p))?;
                    Ok(())
                })?;
            }
            Ok(())
        })?;
        Ok(())
    })
}

type XmlWriter = Writer<Vec<u8>>;

fn search_body(
    uid: &str,
    condition: impl FnOnce(&mut XmlWriter) -> std::io::Result<()>,
) -> Result<String, IndexError> {
    let mut w = Writer::new(Vec::new());
    let scope = format!("/files/{uid}");
    w.create_element("d:searchrequest")
        .with_attribute(("xmlns:d", "DAV:"))
        .with_attribute(("xmlns:oc", "http://owncloud.org/ns"))
        .write_inner_content(|w| {
            w.create_element("d:basicsearch").write_inner_content(|w| {
                w.create_element("d:select").write_inner_content(|w| {
                    w.create_element("d:prop").write_inner_content(|w| {
                        for p in ["oc:fileid", "d:getetag", "d:getcontenttype", "d:getcontentlength", "d:resourcetype"] {
                            w.create_element(p).write_empty()?;
                        }
                        Ok(())
                    })?;
                    Ok(())
                })?;
                w.create_element("d:from").write_inner_content(|w| {
                    w.create_element("d:scope").write_inner_content(|w| {
                        w.create_element("d:href").write_text_content(BytesText::new(&scope))?;
                        w.create_element("d:depth").write_text_content(BytesText::new("infinity"))?;
                        Ok(())
                    })?;
                    Ok(())
                })?;
                w.create_element("d:where").write_inner_content(condition)?;
                w.create_element("d:orderby").write_empty()?;
                Ok(())
            })?;
            Ok(())
        })
        .map_err(|e| IndexError::Task(format!("building SEARCH body: {e}")))?;
    String::from_utf8(w.into_inner()).map_err(|e| IndexError::Task(e.to_string()))
}

/// Reads a multistatus answer into the files it lists (folders are skipped). Anything
/// unreadable fails the whole answer: a verification we cannot read fails closed.
pub fn parse_multistatus(xml: &str) -> Result<Vec<DavFile>, IndexError> {
    let bad = |m: String| IndexError::nextcloud(NextcloudFailure::Unavailable, format!("unreadable SEARCH answer: {m}"));
    let mut reader = Reader::from_str(xml);
    let mut out = Vec::new();
    let mut cur = Partial::default();
    let mut field: Option<&'static str> = None;
    let mut text = String::new();
    let mut depth = 0usize;
    loop {
        match reader.read_event().map_err(|e| bad(e.to_string()))? {
            Event::Start(e) => {
                depth += 1;
                match e.local_name().as_ref() {
                    "response" => cur = Partial::default(),
                    "collection" => cur.folder = true,
                    name => field = field_of(name),
                }
                text.clear();
            }
            Event::Empty(e) if e.local_name().as_ref() == "collection" => cur.folder = true,
            Event::Text(t) => text.push_str(&t.xml10_content()),
            Event::GeneralRef(r) => {
                let s = match r.resolve_char_ref().map_err(|e| bad(e.to_string()))? {
                    Some(c) => c.to_string(),
                    None => quick_xml::escape::resolve_predefined_entity(&r).unwrap_or("").to_string(),
                };
                text.push_str(&s);
            }
            Event::End(e) => {
                depth = depth.saturating_sub(1);
                let name = e.local_name();
                if name.as_ref() == "response" {
                    if let Some(f) = std::mem::take(&mut cur).finish()? {
                        out.push(f);
                    }
                } else if let Some(f) = field.take().filter(|f| field_of(name.as_ref()) == Some(*f)) {
                    cur.set(f, text.trim());
                }
                text.clear();
            }
            Event::Eof if depth > 0 => return Err(bad("the answer ends inside an element".into())),
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

fn field_of(local: &str) -> Option<&'static str> {
    match local {
        "href" => Some("href"),
        "fileid" => Some("fileid"),
        "getetag" => Some("getetag"),
        "getcontenttype" => Some("getcontenttype"),
        "getcontentlength" => Some("getcontentlength"),
        _ => None,
    }
}

#[derive(Default)]
struct Partial {
    href: Option<String>,
    file_id: Option<String>,
    etag: Option<String>,
    mime: String,
    size: u64,
    folder: bool,
}

impl Partial {
    fn set(&mut self, field: &str, value: &str) {
        match field {
            "href" => self.href = Some(value.to_string()),
            "fileid" => self.file_id = Some(value.to_string()),
            "getetag" => self.etag = Some(value.trim_matches('"').to_string()),
            "getcontenttype" => self.mime = value.to_string(),
            "getcontentlength" => self.size = value.parse().unwrap_or(0),
            _ => {}
        }
    }

    fn finish(self) -> Result<Option<DavFile>, IndexError> {
        if self.folder {
            return Ok(None);
        }
        let bad = |m: &str| IndexError::nextcloud(NextcloudFailure::Unavailable, format!("unreadable SEARCH answer: {m}"));
        let href = self.href.ok_or_else(|| bad("a response without href"))?;
        let file_id = self
            .file_id
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| bad("a file without a numeric oc:fileid"))?;
        Ok(Some(DavFile {
            file_id,
            etag: self.etag.unwrap_or_default(),
            path: home_relative(&href).ok_or_else(|| bad("an href outside /remote.php/dav/files/"))?,
            mime: self.mime,
            size: self.size,
        }))
    }
}

/// `/remote.php/dav/files/bob/Shared-with-bob/plan%20v2.md` → `/Shared-with-bob/plan v2.md`.
fn home_relative(href: &str) -> Option<String> {
    const MARK: &str = "/dav/files/";
    let after = &href[href.find(MARK)? + MARK.len()..];
    let rest = after.find('/').map_or("", |i| &after[i..]);
    let decoded = percent_encoding::percent_decode_str(rest).decode_utf8().ok()?;
    Some(if decoded.is_empty() { "/".into() } else { decoded.into_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_well_formed_and_scoped_to_the_caller() {
        let body = by_ids_body("bob", &[12, 34]).expect("body");
        assert!(body.contains("<d:href>/files/bob</d:href>"));
        assert!(body.contains("<d:or><d:eq><d:prop><oc:fileid/></d:prop><d:literal>12</d:literal></d:eq><d:eq>"));
        let names = by_names_body("a&b", &["%.md"]).expect("body");
        assert!(names.contains("<d:href>/files/a&amp;b</d:href>"), "{names}");
        assert!(names.contains("<d:like><d:prop><d:displayname/></d:prop><d:literal>%.md</d:literal></d:like>"));
    }

    #[test]
    fn multistatus_gives_caller_paths_ids_and_etags() {
        let xml = r#"<?xml version="1.0"?>
<d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns">
 <d:response><d:href>/remote.php/dav/files/bob/Shared-with-bob/plan%20v2.md</d:href>
  <d:propstat><d:prop><oc:fileid>42</oc:fileid><d:getetag>&quot;abc&quot;</d:getetag>
   <d:getcontenttype>text/markdown</d:getcontenttype><d:getcontentlength>120</d:getcontentlength><d:resourcetype/></d:prop>
   <d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response>
 <d:response><d:href>/remote.php/dav/files/bob/Shared-with-bob/</d:href>
  <d:propstat><d:prop><oc:fileid>41</oc:fileid><d:resourcetype><d:collection/></d:resourcetype></d:prop></d:propstat></d:response>
</d:multistatus>"#;
        let files = parse_multistatus(xml).expect("parses");
        assert_eq!(
            files,
            [DavFile {
                file_id: 42,
                etag: "abc".into(),
                path: "/Shared-with-bob/plan v2.md".into(),
                mime: "text/markdown".into(),
                size: 120
            }]
        );
        assert_eq!(files[0].name(), "plan v2.md");
    }

    #[test]
    fn unreadable_answers_fail() {
        assert!(parse_multistatus("<d:multistatus xmlns:d=\"DAV:\"><d:response><d:href>/x</d:href></d:response></d:multistatus>").is_err());
        assert!(parse_multistatus("<d:multistatus xmlns:d=\"DAV:\"><d:response><d:propstat><d:prop><oc:fileid>x</oc:fileid>").is_err());
        assert!(parse_multistatus("<a><b></a>").is_err());
        assert_eq!(parse_multistatus("<d:multistatus xmlns:d=\"DAV:\"/>").expect("empty").len(), 0);
    }
}
