//! Spreadsheets (XLSX/XLSM, ODS, CSV) as Markdown tables, sheet by sheet.
//!
//! Each sheet becomes a level-1 heading with its name and a table whose first column is the
//! row number and whose header row is the column letters, so a passage says which cell it is
//! ("B7"). Formulas show their cached value (what the spreadsheet last computed); nothing is
//! ever evaluated. XLSX and ODS are read by calamine, CSV by the csv crate: no hand-written
//! parser. Every sheet is bounded to [`MAX_SHEET_ROWS`] filled rows and [`MAX_SHEET_COLS`]
//! columns; beyond that a "cut" note says where the sheet continues and how to read it
//! ([`SheetWindow`]: `files_read {path, sheet, row}`).
//!
//! calamine panics on some malformed files (an overflow in a cell reference, with overflow
//! checks on): each read runs [`contained`], so that is a failed extraction.
//!
//! Bounded work on hostile input: calamine reads archive members without a cap, so the
//! archive is checked first ([`super::office::check_archive`]); XLSX sheets are streamed cell
//! by cell and reading stops at the bound; ODS sheets are dense in memory, so their filled
//! area is measured from `content.xml` before calamine expands it. That same first pass refuses
//! a `content.xml` that ends inside an element (calamine 0.38 loops for ever on one: its table
//! and annotation readers never stop at the end of input, found by the `extract_office` fuzz
//! target) and one whose `<text:s text:c=…>` declare more spaces than [`MAX_ODS_SPACES`] (calamine
//! writes each of them before we can cut the cell). This module never fetches.

use std::collections::BTreeMap;
use std::io::Cursor;

use calamine::{Data, DataRef, Ods, Reader, Xlsx};
use quick_xml::Reader as XmlReader;
use quick_xml::events::Event;

use super::office::{attr, check_archive, open_zip, read_part, xml_err};
use super::{ExtractError, Extracted, Heading, contained};

/// Filled rows shown per sheet.
pub const MAX_SHEET_ROWS: usize = 1000;
/// Columns shown per sheet (from the first used column).
pub const MAX_SHEET_COLS: u32 = 40;
/// Characters shown per cell.
const MAX_CELL_CHARS: usize = 400;
/// Largest ODS sheet area (rows × columns up to the last filled cell) calamine may expand.
const MAX_ODS_AREA: u64 = 2_000_000;
/// Most spaces the `<text:s text:c=…>` of one ODS document may declare in total: far more than
/// a real sheet holds, and calamine writes each into its cell's text before we cut it.
const MAX_ODS_SPACES: u64 = 1_000_000;

/// Which part of a spreadsheet to show: every sheet from its first row (the default, and
/// what the index reads), or one sheet from a given row on (to read past a cut).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SheetWindow {
    /// Only this sheet (its name as the heading shows it).
    pub sheet: Option<String>,
    /// The first row shown, 1-based as the table numbers rows.
    pub first_row: u32,
}

impl SheetWindow {
    fn wants(&self, name: &str) -> bool {
        self.sheet.as_deref().is_none_or(|s| s == name)
    }

    /// 0-based first row.
    fn start(&self) -> u32 {
        self.first_row.saturating_sub(1)
    }
}

/// XLSX and XLSM (the same archive; macros are never run or shown).
pub(super) fn xlsx(bytes: &[u8], window: &SheetWindow) -> Result<Extracted, ExtractError> {
    check_archive(bytes)?;
    contained("spreadsheet", || read_xlsx(bytes, window))
}

/// calamine's part of [`xlsx`], run [`contained`].
fn read_xlsx(bytes: &[u8], window: &SheetWindow) -> Result<Extracted, ExtractError> {
    let mut book = Xlsx::new(Cursor::new(bytes)).map_err(malformed)?;
    let mut out = Tables::new(window);
    for name in book.sheet_names() {
        if !window.wants(&name) {
            continue;
        }
        let mut grid = Grid::new(window.start());
        match book.worksheet_cells_reader(&name) {
            Ok(mut cells) => {
                while let Some(cell) = cells.next_cell().map_err(malformed)? {
                    let (row, col) = cell.get_position();
                    if !grid.add(row, col, data_ref_text(cell.get_value())) {
                        break;
                    }
                }
                out.sheet(Some(&name), &grid);
            }
            // A chart sheet or a dialog sheet has no cells: say so, read the others.
            Err(calamine::XlsxError::WorksheetNotFound(_)) => out.note(&name, "(this sheet holds no cells)"),
            Err(e) => return Err(malformed(e)),
        }
    }
    out.finish()
}

/// ODS: the area of each sheet is measured before calamine expands it into memory.
pub(super) fn ods(bytes: &[u8], window: &SheetWindow) -> Result<Extracted, ExtractError> {
    check_archive(bytes)?;
    let content = read_part(&mut open_zip(bytes)?, "content.xml")?.ok_or_else(|| ExtractError::Malformed("no content.xml".into()))?;
    check_ods_content(&content)?;
    drop(content);
    contained("spreadsheet", || read_ods(bytes, window))
}

/// calamine's part of [`ods`], run [`contained`] once the content is checked.
fn read_ods(bytes: &[u8], window: &SheetWindow) -> Result<Extracted, ExtractError> {
    let mut book: Ods<_> = Ods::new(Cursor::new(bytes)).map_err(malformed)?;
    let mut out = Tables::new(window);
    for name in book.sheet_names() {
        if !window.wants(&name) {
            continue;
        }
        let range = book.worksheet_range(&name).map_err(malformed)?;
        let (top, left) = range.start().unwrap_or((0, 0));
        let mut grid = Grid::new(window.start());
        for (r, c, value) in range.used_cells() {
            if !grid.add(top + r as u32, left + c as u32, data_text(value)) {
                break;
            }
        }
        out.sheet(Some(&name), &grid);
    }
    out.finish()
}

/// CSV: one table without a heading; the delimiter is whichever of `,` `;` tab the first
/// line uses most (a German Excel writes `;`).
pub(super) fn csv(bytes: &[u8], window: &SheetWindow) -> Result<Extracted, ExtractError> {
    if bytes.iter().take(1024).any(|b| *b == 0) {
        return Err(ExtractError::Malformed("the content is binary".into()));
    }
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    let first_line = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let delimiter = [b',', b';', b'\t']
        .into_iter()
        .max_by_key(|d| first_line.iter().filter(|b| *b == d).count())
        .unwrap_or(b',');
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(delimiter)
        .from_reader(bytes);
    let mut grid = Grid::new(window.start());
    'rows: for (row, record) in reader.byte_records().enumerate() {
        let record = record.map_err(|e| ExtractError::Malformed(e.to_string()))?;
        let row = u32::try_from(row).unwrap_or(u32::MAX);
        for (col, field) in record.iter().enumerate() {
            let col = u32::try_from(col).unwrap_or(u32::MAX);
            if !grid.add(row, col, String::from_utf8_lossy(field).into_owned()) {
                break 'rows;
            }
        }
    }
    let mut out = Tables::new(window);
    out.sheet(None, &grid);
    out.finish()
}

fn malformed(e: impl std::fmt::Display) -> ExtractError {
    ExtractError::Malformed(e.to_string())
}

/// The cells of one sheet inside the window, at most [`MAX_SHEET_ROWS`] filled rows and
/// [`MAX_SHEET_COLS`] filled cells per row (cells arrive row by row).
struct Grid {
    start: u32,
    rows: BTreeMap<u32, Vec<(u32, String)>>,
    /// The first filled row past the bound, when there is one.
    more_rows_at: Option<u32>,
    /// True when a row had more filled cells than are kept.
    more_cols: bool,
}

impl Grid {
    fn new(start: u32) -> Grid {
        Grid {
            start,
            rows: BTreeMap::new(),
            more_rows_at: None,
            more_cols: false,
        }
    }

    /// Adds a cell; false once the row bound is passed (the caller stops reading).
    fn add(&mut self, row: u32, col: u32, text: String) -> bool {
        let text = text.trim();
        if text.is_empty() || row < self.start {
            return true;
        }
        if !self.rows.contains_key(&row) && self.rows.len() >= MAX_SHEET_ROWS {
            self.more_rows_at = Some(row);
            return false;
        }
        let cells = self.rows.entry(row).or_default();
        if cells.len() >= MAX_SHEET_COLS as usize {
            self.more_cols = true;
        } else {
            cells.push((col, cell_text(text)));
        }
        true
    }

    /// The Markdown table, and whether columns were left out.
    fn table(&self) -> (String, bool) {
        let Some(first) = self.rows.values().flatten().map(|(c, _)| *c).min() else {
            return (String::new(), self.more_cols);
        };
        let last_allowed = first.saturating_add(MAX_SHEET_COLS - 1);
        let last = self
            .rows
            .values()
            .flatten()
            .map(|(c, _)| *c)
            .filter(|c| *c <= last_allowed)
            .max()
            .unwrap_or(first);
        let cut_cols = self.more_cols || self.rows.values().flatten().any(|(c, _)| *c > last_allowed);
        let mut out = String::from("| |");
        for c in first..=last {
            out.push_str(&format!(" {} |", column_name(c)));
        }
        out.push_str("\n| --- |");
        out.push_str(&" --- |".repeat((last - first + 1) as usize));
        out.push('\n');
        for (row, cells) in &self.rows {
            let mut line = vec![""; (last - first + 1) as usize];
            for (c, text) in cells {
                if (first..=last).contains(c) {
                    line[(c - first) as usize] = text;
                }
            }
            out.push_str(&format!("| {} |", row + 1));
            for text in line {
                out.push(' ');
                out.push_str(text);
                out.push_str(" |");
            }
            out.push('\n');
        }
        (out, cut_cols)
    }
}

/// The extracted text of a workbook: one section per sheet.
struct Tables {
    out: Extracted,
    window: SheetWindow,
}

impl Tables {
    fn new(window: &SheetWindow) -> Tables {
        Tables {
            out: Extracted::default(),
            window: window.clone(),
        }
    }

    fn heading(&mut self, name: &str) {
        if !self.out.text.is_empty() {
            self.out.text.push('\n');
        }
        self.out.headings.push(Heading {
            level: 1,
            title: name.to_string(),
            start: self.out.text.len(),
        });
        self.out.text.push_str(&format!("# {name}\n\n"));
    }

    fn note(&mut self, name: &str, note: &str) {
        self.heading(name);
        self.out.text.push_str(note);
        self.out.text.push('\n');
    }

    fn sheet(&mut self, name: Option<&str>, grid: &Grid) {
        if let Some(name) = name {
            self.heading(name);
        }
        let (table, cut_cols) = grid.table();
        if table.is_empty() {
            self.out.text.push_str(if grid.start > 0 {
                "(no filled rows from here on)\n"
            } else {
                "(empty sheet)\n"
            });
        }
        self.out.text.push_str(&table);
        if let Some(at) = grid.more_rows_at {
            let sheet = name.map_or(String::new(), |n| format!("sheet: {n:?}, "));
            self.out.text.push_str(&format!(
                "\n(cut: only {MAX_SHEET_ROWS} filled rows are shown; the table continues at row {}. Read on with files_read {{path, {sheet}row: {}}}.)\n",
                at + 1,
                at + 1
            ));
        }
        if cut_cols {
            self.out.text.push_str(&format!(
                "\n(cut: only {MAX_SHEET_COLS} columns are shown; columns further right are left out.)\n"
            ));
        }
    }

    fn finish(mut self) -> Result<Extracted, ExtractError> {
        if let Some(sheet) = &self.window.sheet
            && self.out.headings.is_empty()
        {
            return Err(ExtractError::Malformed(format!("there is no sheet named {sheet:?}")));
        }
        if self.out.text.is_empty() {
            self.out.text.push_str("(empty)\n");
        }
        Ok(self.out)
    }
}

/// One cell as table text: no line breaks or pipes that would break the row, bounded.
fn cell_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_CELL_CHARS));
    for (i, ch) in text.chars().enumerate() {
        if i == MAX_CELL_CHARS {
            out.push('…');
            break;
        }
        match ch {
            '|' => out.push_str("\\|"),
            '\r' => {}
            '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// 0 → A, 25 → Z, 26 → AA.
fn column_name(col: u32) -> String {
    let mut n = col as u64 + 1;
    let mut name = Vec::new();
    while n > 0 {
        let rem = ((n - 1) % 26) as u8;
        name.push(b'A' + rem);
        n = (n - 1) / 26;
    }
    name.reverse();
    String::from_utf8(name).unwrap_or_default()
}

fn number_text(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

fn date_text(d: &calamine::ExcelDateTime) -> String {
    match d.as_datetime() {
        Some(dt) if dt.time() == chrono::NaiveTime::MIN => dt.format("%Y-%m-%d").to_string(),
        Some(dt) => dt.format("%Y-%m-%d %H:%M:%S").to_string(),
        None => number_text(d.as_f64()),
    }
}

fn data_ref_text(v: &DataRef<'_>) -> String {
    match v {
        DataRef::Int(i) => i.to_string(),
        DataRef::Float(f) => number_text(*f),
        DataRef::String(s) | DataRef::DateTimeIso(s) | DataRef::DurationIso(s) => s.clone(),
        DataRef::SharedString(s) => (*s).to_string(),
        DataRef::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
        DataRef::DateTime(d) => date_text(d),
        DataRef::Error(e) => e.to_string(),
        DataRef::Empty => String::new(),
    }
}

fn data_text(v: &Data) -> String {
    match v {
        Data::Int(i) => i.to_string(),
        Data::Float(f) => number_text(*f),
        Data::String(s) | Data::DateTimeIso(s) | Data::DurationIso(s) => s.clone(),
        Data::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
        Data::DateTime(d) => date_text(d),
        Data::Error(e) => e.to_string(),
        Data::Empty => String::new(),
    }
}

/// What calamine is about to read, checked before it reads it: the content must close every
/// element it opens, and it must declare neither a sheet area over [`MAX_ODS_AREA`] nor more
/// than [`MAX_ODS_SPACES`] spaces.
fn check_ods_content(xml: &str) -> Result<(), ExtractError> {
    let measured = measure_ods(xml)?;
    if measured.open_at_end > 0 {
        return Err(ExtractError::Malformed(format!(
            "content.xml ends inside {} unclosed element(s)",
            measured.open_at_end
        )));
    }
    if measured.largest_area > MAX_ODS_AREA || measured.declared_spaces > MAX_ODS_SPACES {
        return Err(ExtractError::TooLarge);
    }
    Ok(())
}

/// One pass over an ODS `content.xml` (see [`measure_ods`]).
#[derive(Debug, Default, PartialEq, Eq)]
struct OdsMeasure {
    /// The largest sheet area: rows up to the last row with a filled cell, times columns up to
    /// the last filled cell of the widest row.
    largest_area: u64,
    /// The spaces all `<text:s text:c=…>` declare together (one for each without a count).
    declared_spaces: u64,
    /// Elements still open when the input ended (0 for a complete document).
    open_at_end: u64,
}

/// Measures an ODS `content.xml`. The area counts `number-rows-repeated` and
/// `number-columns-repeated` (a few bytes of XML can declare billions of cells; LibreOffice
/// itself writes a million empty trailing rows, which do not count because they hold nothing).
fn measure_ods(xml: &str) -> Result<OdsMeasure, ExtractError> {
    const MAX_ROWS: u64 = 1_048_576;
    const MAX_COLS: u64 = 16_384;
    let repeat = |e: &quick_xml::events::BytesStart<'_>, name: &str, max: u64| {
        attr(e, name).and_then(|v| v.parse::<u64>().ok()).unwrap_or(1).clamp(1, max)
    };
    let mut reader = XmlReader::from_str(xml);
    let mut measured = OdsMeasure::default();
    let (mut rows, mut height, mut width) = (0u64, 0u64, 0u64);
    // Per row: its repeat count, the columns seen so far and up to the last filled cell.
    let (mut row_repeat, mut col, mut filled_to) = (1u64, 0u64, 0u64);
    // The cell being read: its repeat count, and whether it holds anything.
    let mut cell: Option<(u64, bool)> = None;
    loop {
        let event = reader.read_event().map_err(xml_err)?;
        match &event {
            Event::Start(_) => measured.open_at_end += 1,
            Event::End(_) => measured.open_at_end = measured.open_at_end.saturating_sub(1),
            _ => {}
        }
        match event {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "s" => {
                // calamine reads the count as a number of any size; one it cannot parse fails
                // there, so only a parsed count adds here.
                let spaces = attr(&e, "c").map_or(Some(1), |v| v.parse::<u64>().ok()).unwrap_or(0);
                measured.declared_spaces = measured.declared_spaces.saturating_add(spaces);
                if let Some(c) = cell.as_mut() {
                    c.1 = true;
                }
            }
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == "table" => {
                measured.largest_area = measured.largest_area.max(height.saturating_mul(width));
                (rows, height, width) = (0, 0, 0);
            }
            Event::Start(e) if e.local_name().as_ref() == "table-row" => {
                (row_repeat, col, filled_to) = (repeat(&e, "number-rows-repeated", MAX_ROWS), 0, 0);
            }
            Event::End(e) if e.local_name().as_ref() == "table-row" => {
                rows = (rows + row_repeat).min(MAX_ROWS);
                if filled_to > 0 {
                    height = rows;
                    width = width.max(filled_to);
                }
            }
            Event::Empty(e) if matches!(e.local_name().as_ref(), "table-cell" | "covered-table-cell") => {
                col = (col + repeat(&e, "number-columns-repeated", MAX_COLS)).min(MAX_COLS);
                if attr(&e, "value-type").is_some() {
                    filled_to = col;
                }
            }
            Event::Start(e) if matches!(e.local_name().as_ref(), "table-cell" | "covered-table-cell") => {
                cell = Some((repeat(&e, "number-columns-repeated", MAX_COLS), attr(&e, "value-type").is_some()));
            }
            Event::Start(_) | Event::Text(_) if cell.is_some() => {
                if let Some(c) = cell.as_mut() {
                    c.1 = true;
                }
            }
            Event::End(e) if matches!(e.local_name().as_ref(), "table-cell" | "covered-table-cell") => {
                if let Some((n, filled)) = cell.take() {
                    col = (col + n).min(MAX_COLS);
                    if filled {
                        filled_to = col;
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    measured.largest_area = measured.largest_area.max(height.saturating_mul(width));
    Ok(measured)
}
