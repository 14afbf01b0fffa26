//! Contact search over CardDAV: one addressbook-query per address book of the caller (FN,
//! EMAIL or ORG contains the query), vCards parsed with calcard. Read-only.

use calcard::vcard::{VCard, VCardProperty, VCardValue};
use mcp_resource_server::Caller;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::schemars::JsonSchema;
use rmcp::{tool, tool_router};
use serde::Serialize;

use super::args::ContactsSearchArgs;
use super::{Tools, input, output};
use crate::error::Error;
use crate::nextcloud::{dav, dav_headers, method, paths};
use crate::output::Output;

/// The contacts tools: one `#[tool]` function each (see [`super`] for how to add one).
#[tool_router(router = contacts_router, vis = "pub(super)")]
impl Tools {
    #[tool(
        name = "contacts_search",
        title = "Search contacts",
        description = "Search the user's address books: contacts whose name, email or organisation contains `query`.",
        input_schema = input::<ContactsSearchArgs>(),
        output_schema = output::<ContactList>(),
        annotations(title = "Search contacts", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
    )]
    async fn contacts_search(&self, caller: Caller, Parameters(a): Parameters<ContactsSearchArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let query = a.query.trim().to_string();
        if query.is_empty() || query.chars().count() > 200 || query.contains('\0') || query.chars().any(char::is_control) {
            return Err(Error::invalid("query must be 1 to 200 characters of text"));
        }
        let limit = a.limit.unwrap_or(25);
        if limit == 0 || limit > 200 {
            return Err(Error::invalid("limit must be between 1 and 200"));
        }
        let home = s.url(["remote.php", "dav", "addressbooks", "users", s.uid(), ""]);
        let request = s
            .request(method("PROPFIND"), home.clone())
            .headers(dav_headers(Some("1")))
            .body(dav::propfind_collections());
        let books = s.multistatus(request, "listing address books").await?;
        let prefix = paths::url_segments(&home);
        let mut contacts = Vec::new();
        let mut warnings = Vec::new();
        let body = dav::addressbook_query(&query, limit);
        for book in books.iter().filter(|e| e.is_type(dav::CARDDAV, "addressbook")) {
            let Some(rest) = paths::strip_prefix(&book.href, &prefix) else {
                continue;
            };
            let [id] = rest.as_slice() else { continue };
            let url = s.url(["remote.php", "dav", "addressbooks", "users", s.uid(), id.as_str(), ""]);
            let request = s
                .request(method("REPORT"), url.clone())
                .headers(dav_headers(Some("1")))
                .body(body.clone());
            let found = s.multistatus(request, "searching contacts").await?;
            let card_prefix = paths::url_segments(&url);
            for e in &found {
                let Some(data) = e.prop(dav::CARDDAV, "address-data") else {
                    continue;
                };
                let object = paths::strip_prefix(&e.href, &card_prefix)
                    .and_then(|r| r.last().cloned())
                    .unwrap_or_default();
                let href = format!("{id}/{object}");
                match contact(data, &href) {
                    Some(c) => contacts.push(c),
                    None => warnings.push(format!("{href}: the contact could not be parsed and was skipped")),
                }
            }
        }
        contacts.sort_by_key(|c| c.name.to_lowercase());
        contacts.truncate(limit);
        let mut text = format!("{} contact(s) matching '{query}':", contacts.len());
        for c in &contacts {
            text.push_str(&format!(
                "\n- {}{}{}",
                c.name,
                c.emails.first().map(|e| format!(" <{e}>")).unwrap_or_default(),
                c.organisation.as_ref().map(|o| format!(", {o}")).unwrap_or_default()
            ));
        }
        Output::new(text, &ContactList { query, contacts, warnings })
    }
}

#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq)]
#[schemars(crate = "rmcp::schemars")]
pub struct Contact {
    pub name: String,
    pub emails: Vec<String>,
    pub phones: Vec<String>,
    pub organisation: Option<String>,
    pub note: Option<String>,
    /// `<addressbook>/<object>.vcf`.
    pub href: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ContactList {
    pub query: String,
    pub contacts: Vec<Contact>,
    pub warnings: Vec<String>,
}

fn values(card: &VCard, prop: VCardProperty) -> Vec<String> {
    card.properties(&prop)
        .filter_map(|e| {
            let parts: Vec<&str> = e
                .values
                .iter()
                .flat_map(|v| match v {
                    VCardValue::Component(list) => list.iter().map(String::as_str).collect::<Vec<_>>(),
                    other => other.as_text().into_iter().collect(),
                })
                .filter(|s| !s.is_empty())
                .collect();
            (!parts.is_empty()).then(|| parts.join(", "))
        })
        .collect()
}

/// One vCard as a contact row. Pure.
pub fn contact(data: &str, href: &str) -> Option<Contact> {
    let card = VCard::parse(data).ok()?;
    let strip = |v: String| v.strip_prefix("mailto:").map(str::to_string).unwrap_or(v);
    let tel = |v: String| v.strip_prefix("tel:").map(str::to_string).unwrap_or(v);
    Some(Contact {
        name: values(&card, VCardProperty::Fn)
            .into_iter()
            .next()
            .unwrap_or_else(|| "(no name)".into()),
        emails: values(&card, VCardProperty::Email).into_iter().map(strip).collect(),
        phones: values(&card, VCardProperty::Tel).into_iter().map(tel).collect(),
        organisation: values(&card, VCardProperty::Org).into_iter().next(),
        note: values(&card, VCardProperty::Note).into_iter().next(),
        href: href.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_vcard() {
        let v = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:c1\r\nFN:Carol Example\r\nN:Example;Carol;;;\r\nEMAIL;TYPE=WORK:carol@example.com\r\nTEL;TYPE=CELL:+33 1 23 45 67 89\r\nORG:Example Corp;Sales\r\nNOTE:Met at the fair\\, 2025\r\nEND:VCARD\r\n";
        let c = contact(v, "contacts/c1.vcf").unwrap();
        assert_eq!(c.name, "Carol Example");
        assert_eq!(c.emails, ["carol@example.com"]);
        assert_eq!(c.phones, ["+33 1 23 45 67 89"]);
        assert_eq!(c.organisation.as_deref(), Some("Example Corp, Sales"));
        assert_eq!(c.note.as_deref(), Some("Met at the fair, 2025"));
    }
}
