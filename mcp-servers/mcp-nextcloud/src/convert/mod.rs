//! Converting documents through a document server that holds nothing: the formats it is
//! asked for, the loan ([`loan`]) and the ConvertService client ([`docserver`]).
//!
//! The flow (run by the `files_convert` tool in [`crate::tools::convert`]): download the source
//! as the user; lend it at a one-time URL; ask the document server to convert it from there;
//! fetch the result from the server; upload it as the user. The document server gets the
//! loan URL and the file's name, never a credential or a Nextcloud URL. This module owns the
//! conversion table and the [`Converter`] that holds the loans and the client; it must never
//! talk to Nextcloud itself (the tool does, as the caller).

pub mod docserver;
pub mod loan;

use crate::config::DocServerConfig;
use crate::error::Error;

pub use loan::{Lease, Loans};

/// The formats `to` may name, in the order the tool's description lists them.
pub const TARGETS: &[&str] = &["pdf", "docx", "odt", "xlsx", "ods", "pptx", "odp", "txt", "html", "md"];

/// What the document server makes of each kind of source (OnlyOffice's conversion table,
/// narrowed to the formats above). Markdown is never an output: the server cannot write it.
const TEXT_OUT: &[&str] = &["pdf", "docx", "odt", "txt", "html"];
const SHEET_OUT: &[&str] = &["pdf", "xlsx", "ods"];
const SLIDES_OUT: &[&str] = &["pdf", "pptx", "odp"];

/// The formats a source with extension `ext` can become (its own format left out), or
/// `None` when the document server does not read it.
pub fn outputs_for(ext: &str) -> Option<Vec<&'static str>> {
    let all = match ext {
        "docx" | "doc" | "odt" | "rtf" | "txt" | "html" | "htm" | "md" => TEXT_OUT,
        "xlsx" | "xlsm" | "xls" | "ods" | "csv" => SHEET_OUT,
        "pptx" | "ppt" | "odp" => SLIDES_OUT,
        _ => return None,
    };
    Some(
        all.iter()
            .copied()
            .filter(|f| *f != ext && !(ext == "htm" && *f == "html"))
            .collect(),
    )
}

/// Checks the pair; the error names what is possible.
pub fn check_pair(ext: &str, to: &str) -> Result<(), Error> {
    if !TARGETS.contains(&to) {
        return Err(Error::invalid(format!("to must be one of {}", TARGETS.join(", "))));
    }
    let Some(possible) = outputs_for(ext) else {
        return Err(Error::invalid(format!(
            "the document server cannot read .{ext} files; it converts text documents (docx, odt, doc, rtf, txt, html, md), spreadsheets (xlsx, xlsm, xls, ods, csv) and presentations (pptx, ppt, odp)"
        )));
    };
    if ext == to {
        return Err(Error::invalid(format!("the file is already .{ext}")));
    }
    if !possible.contains(&to) {
        return Err(Error::invalid(format!(
            "a .{ext} file cannot become .{to}; possible: {}",
            possible.join(", ")
        )));
    }
    Ok(())
}

/// The content type an uploaded result is sent with.
pub fn content_type(ext: &str) -> &'static str {
    match ext {
        "pdf" => "application/pdf",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "odt" => "application/vnd.oasis.opendocument.text",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ods" => "application/vnd.oasis.opendocument.spreadsheet",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odp" => "application/vnd.oasis.opendocument.presentation",
        "txt" => "text/plain; charset=utf-8",
        "html" => "text/html; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The loans and the document server client; one per process, and only when a document
/// server is configured.
pub struct Converter {
    pub loans: Loans,
    pub docserver: docserver::DocServer,
}

impl Converter {
    pub fn new(config: &DocServerConfig) -> Result<Converter, Error> {
        Ok(Converter {
            loans: Loans::new(config.loan_base_url.clone(), config.loan_ttl),
            docserver: docserver::DocServer::new(config.url.clone(), config.jwt_secret.clone())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_follow_the_kind_of_document() {
        assert!(check_pair("docx", "pdf").is_ok());
        assert!(check_pair("ods", "xlsx").is_ok());
        assert!(check_pair("odp", "pptx").is_ok());
        let e = check_pair("docx", "xlsx").unwrap_err().to_string();
        assert_eq!(e, "a .docx file cannot become .xlsx; possible: pdf, odt, txt, html");
        let e = check_pair("docx", "md").unwrap_err().to_string();
        assert!(e.contains("possible: pdf, odt, txt, html"), "{e}");
        assert!(check_pair("png", "pdf").unwrap_err().to_string().contains("cannot read .png"));
        assert!(check_pair("pdf", "docx").is_err());
        assert!(check_pair("docx", "docx").unwrap_err().to_string().contains("already"));
        assert!(
            check_pair("docx", "exe")
                .unwrap_err()
                .to_string()
                .starts_with("to must be one of pdf, docx")
        );
    }
}
