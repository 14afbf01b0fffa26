//! WebDAV multistatus: the XML request bodies we send and a reader for the 207 answers.
//!
//! Request bodies are fixed templates; the only caller-supplied values that enter them
//! (search patterns, file ids, contact queries) pass through quick-xml's escaping. The reader
//! keeps, per `<response>`, its href, the properties reported with status 200 (keyed in Clark
//! notation, `{namespace}local`, so prefixes do not matter) and the resource types.
//! It never interprets what it reads: that is the tools' job.

use std::collections::BTreeMap;

use quick_xml::events::Event;
use quick_xml::name::ResolveResult;

use crate::error::Error;

pub const DAV: &str = "DAV:";
pub const OC: &str = "http://owncloud.org/ns";
pub const NC: &str = "http://nextcloud.org/ns";
pub const CALDAV: &str = "urn:ietf:params:xml:ns:caldav";
pub const CARDDAV: &str = "urn:ietf:params:xml:ns:carddav";
pub const APPLE: &str = "http://apple.com/ns/ical/";

/// One `<response>` of a multistatus.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry {
    /// The href exactly as sent (still percent-encoded).
    pub href: String,
    /// Properties reported with a 2xx status, by Clark name.
    pub props: BTreeMap<String, String>,
    /// Clark names of the children of `<resourcetype>`.
    pub resource_types: Vec<String>,
}

impl Entry {
    /// A property's text, if present and non-empty.
    pub fn prop(&self, ns: &str, local: &str) -> Option<&str> {
        self.props.get(&clark(ns, local)).map(String::as_str).filter(|s| !s.is_empty())
    }

    /// Whether `<resourcetype>` contains `{ns}local`.
    pub fn is_type(&self, ns: &str, local: &str) -> bool {
        let name = clark(ns, local);
        self.resource_types.contains(&name)
    }

    /// Whether this entry is a collection (a folder, a calendar, an address book).
    pub fn is_collection(&self) -> bool {
        self.is_type(DAV, "collection")
    }
}

/// `{ns}local`.
pub fn clark(ns: &str, local: &str) -> String {
    format!("{{{ns}}}{local}")
}

/// Parses a 207 multistatus body.
pub fn parse_multistatus(xml: &str) -> Result<Vec<Entry>, Error> {
    let mut reader = quick_xml::reader::NsReader::from_str(xml);
    let mut state = Multistatus::default();
    loop {
        let (ns, event) = reader.read_resolved_event().map_err(|_| malformed())?;
        let ns = match ns {
            ResolveResult::Bound(n) => n.0.to_string(),
            _ => String::new(),
        };
        match event {
            Event::Start(e) => {
                let name = clark(&ns, e.local_name().into_inner());
                if name == clark(DAV, "response") {
                    state.current = Some(Entry::default());
                }
                state.open(name);
            }
            // An empty element opens and closes at once; an empty `<response/>` is no entry.
            Event::Empty(e) => {
                state.open(clark(&ns, e.local_name().into_inner()));
                state.close();
            }
            Event::End(_) => state.close(),
            Event::Text(t) => state.text(&t.xml10_content()),
            Event::CData(t) => state.text(&t.into_inner()),
            Event::GeneralRef(r) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => {
                        let name = r.xml10_content();
                        quick_xml::escape::resolve_predefined_entity(&name)
                            .ok_or_else(malformed)?
                            .to_string()
                    }
                };
                state.text(&resolved);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    state.finish()
}

fn malformed() -> Error {
    Error::Retryable("Nextcloud sent a WebDAV answer that could not be read".into())
}

/// The reader's state while it walks a multistatus: where it is, the entry being built, and
/// the `<propstat>` being collected (kept only when its `<status>` is 2xx).
#[derive(Default)]
struct Multistatus {
    /// The Clark name of the document's first element: only `{DAV:}multistatus` is an answer
    /// (a 207 whose body is HTML, text or empty is no listing, not an empty one; issue 32).
    root: Option<String>,
    /// Clark names of the open elements, outermost first.
    stack: Vec<String>,
    entries: Vec<Entry>,
    /// The `<response>` being read.
    current: Option<Entry>,
    /// The current `<propstat>`'s properties and resource types.
    propstat: BTreeMap<String, String>,
    propstat_types: Vec<String>,
    /// Whether the current `<propstat>`'s status is 2xx (assumed until it says otherwise).
    status_ok: bool,
    status_text: String,
    /// The text of the property being read.
    prop_text: String,
}

impl Multistatus {
    fn parent_is(&self, local: &str) -> bool {
        self.stack.last().is_some_and(|p| *p == clark(DAV, local))
    }

    /// An element starts.
    fn open(&mut self, name: String) {
        if self.root.is_none() {
            self.root = Some(name.clone());
        }
        if name == clark(DAV, "propstat") {
            self.propstat.clear();
            self.propstat_types.clear();
            self.status_ok = true;
        } else if name == clark(DAV, "status") {
            self.status_text.clear();
        } else if self.parent_is("prop") {
            self.prop_text.clear();
        } else if self.parent_is("resourcetype") {
            self.propstat_types.push(name.clone());
        }
        self.stack.push(name);
    }

    /// The innermost open element ends.
    fn close(&mut self) {
        let Some(name) = self.stack.pop() else { return };
        if name == clark(DAV, "response") {
            if let Some(entry) = self.current.take() {
                self.entries.push(entry);
            }
        } else if name == clark(DAV, "status") && self.parent_is("propstat") {
            // "HTTP/1.1 200 OK": only 2xx property values are real.
            self.status_ok = self.status_text.split_whitespace().nth(1).is_some_and(|c| c.starts_with('2'));
        } else if name == clark(DAV, "propstat") {
            if self.status_ok
                && let Some(entry) = self.current.as_mut()
            {
                entry.props.append(&mut self.propstat);
                entry.resource_types.append(&mut self.propstat_types);
            }
            self.propstat.clear();
            self.propstat_types.clear();
        } else if self.parent_is("prop") {
            self.propstat.insert(name, std::mem::take(&mut self.prop_text).trim().to_string());
        }
    }

    /// Text inside the innermost open element.
    fn text(&mut self, text: &str) {
        let depth = self.stack.len();
        let Some(top) = self.stack.last() else { return };
        if *top == clark(DAV, "href") && depth >= 2 && self.stack[depth - 2] == clark(DAV, "response") {
            if let Some(entry) = self.current.as_mut() {
                entry.href.push_str(text.trim());
            }
        } else if *top == clark(DAV, "status") {
            self.status_text.push_str(text);
        } else if depth >= 2 && self.stack[depth - 2] == clark(DAV, "prop") {
            self.prop_text.push_str(text);
        }
    }

    /// The entries read, or an error when the document ended inside an element or was not a
    /// multistatus at all.
    fn finish(self) -> Result<Vec<Entry>, Error> {
        if self.stack.is_empty() && self.root.as_deref() == Some(clark(DAV, "multistatus").as_str()) {
            Ok(self.entries)
        } else {
            Err(malformed())
        }
    }
}

/// The properties asked for on files (PROPFIND and SEARCH select).
pub const FILE_PROPS: &str = "<d:displayname/><d:getcontentlength/><d:getcontenttype/><d:getlastmodified/><d:getetag/><d:resourcetype/><oc:fileid/><oc:permissions/><oc:size/>";

/// PROPFIND body for file listings.
pub fn propfind_files() -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"><d:prop>{FILE_PROPS}</d:prop></d:propfind>"#
    )
}

/// A WebDAV SEARCH (RFC 5323) over the caller's files under `scope` (e.g. `/files/alice/x`).
/// `where_xml` must already be escaped; `limit` caps the answer.
pub fn search(scope: &str, where_xml: &str, limit: Option<usize>) -> String {
    let limit = limit
        .map(|n| format!("<d:limit><d:nresults>{n}</d:nresults></d:limit>"))
        .unwrap_or_default();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><d:searchrequest xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"><d:basicsearch><d:select><d:prop>{FILE_PROPS}</d:prop></d:select><d:from><d:scope><d:href>{}</d:href><d:depth>infinity</d:depth></d:scope></d:from><d:where>{where_xml}</d:where><d:orderby/>{limit}</d:basicsearch></d:searchrequest>"#,
        quick_xml::escape::escape(scope)
    )
}

/// `<d:like>` on the display name.
pub fn where_name_like(pattern: &str) -> String {
    format!(
        "<d:like><d:prop><d:displayname/></d:prop><d:literal>{}</d:literal></d:like>",
        quick_xml::escape::escape(pattern)
    )
}

/// `oc:fileid` equal to one of `ids` (one round trip verifies many).
pub fn where_file_ids(ids: &[u64]) -> String {
    let eqs: String = ids
        .iter()
        .map(|id| format!("<d:eq><d:prop><oc:fileid/></d:prop><d:literal>{id}</d:literal></d:eq>"))
        .collect();
    if ids.len() == 1 { eqs } else { format!("<d:or>{eqs}</d:or>") }
}

/// PROPFIND body for calendar and address-book homes.
pub fn propfind_collections() -> &'static str {
    r#"<?xml version="1.0" encoding="UTF-8"?><d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:a="http://apple.com/ns/ical/" xmlns:oc="http://owncloud.org/ns"><d:prop><d:displayname/><d:resourcetype/><a:calendar-color/><c:calendar-description/><oc:owner-principal/></d:prop></d:propfind>"#
}

/// CalDAV calendar-query for VEVENTs overlapping `[start, end)` (both `YYYYMMDDTHHMMSSZ`).
pub fn calendar_query(start: &str, end: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><d:getetag/><c:calendar-data/></d:prop><c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT"><c:time-range start="{start}" end="{end}"/></c:comp-filter></c:comp-filter></c:filter></c:calendar-query>"#
    )
}

/// CardDAV addressbook-query: FN, EMAIL or ORG contains `query` (case-insensitive).
pub fn addressbook_query(query: &str, limit: usize) -> String {
    let q = quick_xml::escape::escape(query);
    let m = |prop: &str| {
        format!(
            r#"<c:prop-filter name="{prop}"><c:text-match collation="i;unicode-casemap" match-type="contains">{q}</c:text-match></c:prop-filter>"#
        )
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><c:addressbook-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:carddav"><d:prop><d:getetag/><c:address-data/></d:prop><c:filter test="anyof">{}{}{}</c:filter><c:limit><c:nresults>{limit}</c:nresults></c:limit></c:addressbook-query>"#,
        m("FN"),
        m("EMAIL"),
        m("ORG")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"<?xml version="1.0"?>
<d:multistatus xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:s="http://sabredav.org/ns">
 <d:response>
  <d:href>/remote.php/dav/files/alice/</d:href>
  <d:propstat><d:prop><d:resourcetype><d:collection/></d:resourcetype><oc:fileid>1</oc:fileid></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat>
 </d:response>
 <D:response xmlns:D="DAV:">
  <D:href>/remote.php/dav/files/alice/R%26D%20notes.txt</D:href>
  <D:propstat><D:prop><D:getcontentlength>12</D:getcontentlength><D:displayname>R&amp;D &#x41;</D:displayname><D:resourcetype/><oc:fileid>42</oc:fileid></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>
  <D:propstat><D:prop><oc:size/></D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>
 </D:response>
</d:multistatus>"#;

    #[test]
    fn only_a_multistatus_is_an_answer() {
        // A 207 whose body is not a multistatus is unreadable, never an empty listing.
        for body in ["", "Service Unavailable", "<html><body>Maintenance</body></html>", "{\"ok\":true}"] {
            assert!(parse_multistatus(body).is_err(), "{body:?} was read as a listing");
        }
        assert_eq!(parse_multistatus(r#"<d:multistatus xmlns:d="DAV:"/>"#).unwrap(), Vec::new());
        // Cut anywhere inside, it is unreadable too.
        for cut in [10, SAMPLE.len() / 2, SAMPLE.len() - 5] {
            assert!(parse_multistatus(&SAMPLE[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn reads_entries_whatever_the_prefixes() {
        let entries = parse_multistatus(SAMPLE).unwrap();
        assert_eq!(entries.len(), 2);
        assert!(entries[0].is_collection());
        assert_eq!(entries[0].prop(OC, "fileid"), Some("1"));
        assert_eq!(entries[1].href, "/remote.php/dav/files/alice/R%26D%20notes.txt");
        assert!(!entries[1].is_collection());
        assert_eq!(entries[1].prop(DAV, "displayname"), Some("R&D A"));
        assert_eq!(entries[1].prop(OC, "fileid"), Some("42"));
        // A property reported 404 is not a value.
        assert!(!entries[1].props.contains_key(&clark(OC, "size")));
    }

    #[test]
    fn cdata_and_broken_xml() {
        let xml = r#"<d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:response><d:href>/a.ics</d:href><d:propstat><d:prop><c:calendar-data><![CDATA[BEGIN:VCALENDAR
END:VCALENDAR]]></c:calendar-data></d:prop><d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>"#;
        let e = parse_multistatus(xml).unwrap();
        assert_eq!(e[0].prop(CALDAV, "calendar-data"), Some("BEGIN:VCALENDAR\nEND:VCALENDAR"));
        assert!(parse_multistatus("<d:multistatus xmlns:d=\"DAV:\"><d:response>").is_err());
        let empty = r#"<d:multistatus xmlns:d="DAV:"><d:response/><d:response><d:href>/b</d:href></d:response></d:multistatus>"#;
        let e = parse_multistatus(empty).unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].href, "/b");
    }

    #[test]
    fn caller_text_is_escaped_in_bodies() {
        let w = where_name_like("a<b>&%");
        assert!(w.contains("a&lt;b&gt;&amp;%"));
        let q = addressbook_query("</c:text-match>", 10);
        assert!(!q.contains("</c:text-match></c:text-match>"));
        assert_eq!(
            where_file_ids(&[7]),
            "<d:eq><d:prop><oc:fileid/></d:prop><d:literal>7</d:literal></d:eq>"
        );
    }
}
