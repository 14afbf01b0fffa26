//! Turning a downloaded document into plain text plus its heading structure.
//!
//! This is the one extraction of the server: `files_grep` indexes this text and
//! `files_read` shows it, so an `offset` returned by a search (a character offset into
//! [`Extracted::text`]) lands on the same spot when read. Never write a second one.
//!
//! It owns format detection and the per-format readers (Markdown, HTML, PDF, DOCX, ODT,
//! spreadsheets: XLSX/XLSM, ODS, CSV; presentations: PPTX, ODP; plain text). It must never fetch anything or touch the index: bytes in, text out.
//! Every reader is bounded (input size, decompressed size, output size) so a hostile
//! document costs a bounded amount of work.

mod html;
mod markdown;
mod office;
mod pdf;
mod presentation;
mod spreadsheet;

pub use spreadsheet::{MAX_SHEET_COLS, MAX_SHEET_ROWS, SheetWindow};

use super::error::ExtractError;

/// Largest file the index downloads and extracts.
pub const MAX_INPUT_BYTES: usize = 20 * 1024 * 1024;
/// Largest decompressed XML part read from an office archive (zip-bomb guard).
pub const MAX_PART_BYTES: u64 = 64 * 1024 * 1024;
/// Largest decompressed archive a spreadsheet reader hands to calamine (all members).
pub const MAX_ARCHIVE_BYTES: u64 = 256 * 1024 * 1024;
/// Most members an office archive may have.
pub const MAX_ARCHIVE_ENTRIES: usize = 10_000;
/// Extracted text beyond this many bytes is cut (at a character boundary).
pub const MAX_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// The document formats we can read: the server's one list of them. Two policies pick one:
/// [`Format::detect`] (which documents the index reads; narrow, so it indexes documents
/// rather than data files) and [`Format::readable`] (what `files_read` shows as text; broad,
/// any text-like content).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Plain,
    Markdown,
    Html,
    Pdf,
    Docx,
    Odt,
    /// XLSX and XLSM.
    Xlsx,
    Ods,
    Csv,
    Pptx,
    Odp,
}

/// Content types of the office formats, shared by both policies.
const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const XLSM: &str = "application/vnd.ms-excel.sheet.macroenabled.12";
const ODS: &str = "application/vnd.oasis.opendocument.spreadsheet";
const PPTX: &str = "application/vnd.openxmlformats-officedocument.presentationml.presentation";
const ODP: &str = "application/vnd.oasis.opendocument.presentation";

impl Format {
    /// Picks the format from Nextcloud's content type, falling back on the file name's
    /// extension when the type is generic (`application/octet-stream`, empty).
    pub fn detect(mime: &str, name: &str) -> Option<Format> {
        let mime = mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let by_mime = match mime.as_str() {
            "text/plain" => Some(Format::Plain),
            "text/markdown" | "text/x-markdown" => Some(Format::Markdown),
            "text/html" | "application/xhtml+xml" => Some(Format::Html),
            "application/pdf" => Some(Format::Pdf),
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => Some(Format::Docx),
            "application/vnd.oasis.opendocument.text" => Some(Format::Odt),
            XLSX | XLSM => Some(Format::Xlsx),
            ODS => Some(Format::Ods),
            "text/csv" => Some(Format::Csv),
            PPTX => Some(Format::Pptx),
            ODP => Some(Format::Odp),
            _ => None,
        };
        // Nextcloud reports .md as text/markdown, but some setups say text/plain: the
        // extension decides between the two text flavours.
        match (by_mime, Format::from_name(name)) {
            (Some(Format::Plain), Some(Format::Markdown | Format::Csv)) => Format::from_name(name),
            (Some(f), _) => Some(f),
            (None, ext) if mime.is_empty() || mime == "application/octet-stream" => ext,
            (None, _) => None,
        }
    }

    /// The format `files_read` reads a file as, or `None` when it is not text (it is then
    /// described, not shown). The name's extension wins over a generic MIME type
    /// (`application/octet-stream`), because servers often send that for text.
    pub fn readable(mime: &str, name: &str) -> Option<Format> {
        let mime = mime.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
        match (mime.as_str(), ext.as_str()) {
            (_, "md" | "markdown") | ("text/markdown", _) => Some(Format::Markdown),
            ("text/html" | "application/xhtml+xml", _) | (_, "html" | "htm" | "xhtml") => Some(Format::Html),
            ("application/pdf", _) | (_, "pdf") => Some(Format::Pdf),
            ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", _) | (_, "docx") => Some(Format::Docx),
            ("application/vnd.oasis.opendocument.text", _) | (_, "odt") => Some(Format::Odt),
            (XLSX | XLSM, _) | (_, "xlsx" | "xlsm") => Some(Format::Xlsx),
            (ODS, _) | (_, "ods") => Some(Format::Ods),
            ("text/csv" | "application/csv", _) | (_, "csv") => Some(Format::Csv),
            (PPTX, _) | (_, "pptx") => Some(Format::Pptx),
            (ODP, _) | (_, "odp") => Some(Format::Odp),
            (m, _) if m.starts_with("text/") => Some(Format::Plain),
            (
                "application/json"
                | "application/xml"
                | "application/x-yaml"
                | "application/yaml"
                | "application/javascript"
                | "application/x-sh",
                _,
            ) => Some(Format::Plain),
            (
                _,
                "txt" | "tsv" | "json" | "xml" | "yaml" | "yml" | "toml" | "ini" | "log" | "rs" | "py" | "js" | "ts" | "sh" | "ics" | "vcf",
            ) => Some(Format::Plain),
            _ => None,
        }
    }

    fn from_name(name: &str) -> Option<Format> {
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "txt" | "text" | "log" => Some(Format::Plain),
            "csv" => Some(Format::Csv),
            "md" | "markdown" => Some(Format::Markdown),
            "html" | "htm" | "xhtml" => Some(Format::Html),
            "pdf" => Some(Format::Pdf),
            "docx" => Some(Format::Docx),
            "odt" => Some(Format::Odt),
            "xlsx" | "xlsm" => Some(Format::Xlsx),
            "ods" => Some(Format::Ods),
            "pptx" => Some(Format::Pptx),
            "odp" => Some(Format::Odp),
            _ => None,
        }
    }

    /// The file-name patterns (SQL LIKE) the warm-up SEARCH asks Nextcloud for.
    pub const NAME_PATTERNS: &'static [&'static str] = &[
        "%.txt",
        "%.md",
        "%.markdown",
        "%.html",
        "%.htm",
        "%.pdf",
        "%.docx",
        "%.odt",
        "%.xlsx",
        "%.xlsm",
        "%.ods",
        "%.csv",
        "%.pptx",
        "%.odp",
    ];

    /// A stable label, stored as the file's kind in `index.db`.
    pub fn label(self) -> &'static str {
        match self {
            Format::Plain => "text",
            Format::Markdown => "markdown",
            Format::Html => "html",
            Format::Pdf => "pdf",
            Format::Docx => "docx",
            Format::Odt => "odt",
            Format::Xlsx => "xlsx",
            Format::Ods => "ods",
            Format::Csv => "csv",
            Format::Pptx => "pptx",
            Format::Odp => "odp",
        }
    }

    /// True for the spreadsheet formats, the ones a [`SheetWindow`] applies to.
    pub fn is_spreadsheet(self) -> bool {
        matches!(self, Format::Xlsx | Format::Ods | Format::Csv)
    }
}

/// A heading found in the extracted text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 1 for a top-level heading, up to 9.
    pub level: u8,
    pub title: String,
    /// Byte offset in [`Extracted::text`] where the heading (and its section) starts.
    pub start: usize,
}

/// The text of a document and where its headings are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extracted {
    pub text: String,
    /// In document order, with strictly increasing `start`.
    pub headings: Vec<Heading>,
    /// True when the text was cut at [`MAX_TEXT_BYTES`].
    pub truncated: bool,
}

impl Extracted {
    /// Converts a byte offset into `text` to the character offset that tools expose.
    pub fn char_offset(&self, byte: usize) -> usize {
        let end = floor_char_boundary(&self.text, byte);
        self.text[..end].chars().count()
    }

    /// The text from a character offset on: what `files_read {path, offset}` shows.
    pub fn text_from_char(&self, offset: usize) -> &str {
        match self.text.char_indices().nth(offset) {
            Some((byte, _)) => &self.text[byte..],
            None => "",
        }
    }

    fn finish(mut self) -> Extracted {
        if self.text.len() > MAX_TEXT_BYTES {
            let cut = floor_char_boundary(&self.text, MAX_TEXT_BYTES);
            self.text.truncate(cut);
            self.headings.retain(|h| h.start < cut);
            self.truncated = true;
        }
        // Readers emit headings in order; keep the invariant explicit for the chunker.
        self.headings.dedup_by(|b, a| b.start <= a.start);
        self
    }
}

/// Extracts the text of `bytes` in the given format: the whole document (for spreadsheets,
/// every sheet from its first row). This is what the index reads and `files_read` shows.
pub fn extract(format: Format, bytes: &[u8]) -> Result<Extracted, ExtractError> {
    extract_window(format, bytes, &SheetWindow::default())
}

/// [`extract`] with a window into a spreadsheet (one sheet, from a row on), for reading past
/// a sheet's cut. Other formats ignore the window.
pub fn extract_window(format: Format, bytes: &[u8], window: &SheetWindow) -> Result<Extracted, ExtractError> {
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(ExtractError::TooLarge);
    }
    let out = match format {
        Format::Plain => Extracted {
            text: as_text(bytes)?,
            ..Extracted::default()
        },
        Format::Markdown => markdown::extract(&as_text(bytes)?),
        Format::Html => html::extract(bytes)?,
        Format::Pdf => pdf::extract(bytes)?,
        Format::Docx => office::docx(bytes)?,
        Format::Odt => office::odt(bytes)?,
        Format::Xlsx => spreadsheet::xlsx(bytes, window)?,
        Format::Ods => spreadsheet::ods(bytes, window)?,
        Format::Csv => spreadsheet::csv(bytes, window)?,
        Format::Pptx => presentation::pptx(bytes)?,
        Format::Odp => presentation::odp(bytes)?,
    };
    Ok(out.finish())
}

/// Runs a third-party reader (pdf-extract, calamine) so that a panic inside it on a malformed
/// file is a failed extraction of that file, not a crash of the server: a bad upload must be
/// recorded, never take everyone's tools down. Our own code is not run through this, so a
/// panic of ours still surfaces (in tests and in the fuzz targets).
pub(super) fn contained<T>(reader: &str, read: impl FnOnce() -> Result<T, ExtractError>) -> Result<T, ExtractError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read))
        .unwrap_or_else(|_| Err(ExtractError::Malformed(format!("the {reader} reader gave up on this file"))))
}

/// Text files as text: lossy UTF-8, without a byte-order mark. A NUL in the first KiB
/// is a reliable sign of a binary file mislabelled as text.
fn as_text(bytes: &[u8]) -> Result<String, ExtractError> {
    if bytes.iter().take(1024).any(|b| *b == 0) {
        return Err(ExtractError::Malformed("the content is binary".into()));
    }
    let text = String::from_utf8_lossy(bytes);
    Ok(text.strip_prefix('\u{feff}').unwrap_or(&text).to_string())
}

/// The largest index `<= i` that is a char boundary of `s` (stable-Rust stand-in for
/// `str::floor_char_boundary`).
pub(crate) fn floor_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests;
