//! Filling the index with use, never with privilege.
//!
//! Each `files_grep` call first lists the caller's files of the formats we read (one
//! WebDAV SEARCH of their tree, with their token), compares file ids and etags with the
//! index, and extracts some unknown or changed ones from the caller's own download within
//! a time and byte budget. So a document enters the index only through someone who can
//! open it, and a first search can already find a small file. The same listing gives the
//! coverage figure ("the index covers 37 % of your files").
//!
//! It must never fetch without a caller, keep anything about the caller (the listing is
//! dropped after the call), or retry a failed extraction before the file's etag changes.

use std::ops::RangeInclusive;
use std::time::Instant;

use futures::StreamExt;

use super::Index;
use super::chunk::{self, MAX_PASSAGE_BYTES};
use super::dav::{CallerDav, DavFile};
use super::error::IndexError;
use super::extract::{self, Format, MAX_INPUT_BYTES};

/// How many documents the warm-up downloads and extracts at once.
const WARM_CONCURRENCY: usize = 4;

/// How much of the caller's readable documents the index holds in their current version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Coverage {
    pub current: usize,
    pub total: usize,
}

impl Coverage {
    pub fn percent(&self) -> u32 {
        if self.total == 0 {
            return 100;
        }
        u32::try_from(self.current * 100 / self.total).unwrap_or(100)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Warmed {
    pub coverage: Coverage,
    /// Files extracted (or recorded as failed) by this call.
    pub extracted: usize,
}

/// Lists the caller's documents and extracts some of those the index lacks.
pub async fn warm<C: CallerDav>(index: &Index, caller: &C) -> Result<Warmed, IndexError> {
    let started = Instant::now();
    let files: Vec<DavFile> = caller
        .documents()
        .await?
        .into_iter()
        .filter(|f| Format::detect(&f.mime, f.name()).is_some())
        .collect();
    let ids: Vec<i64> = files.iter().map(|f| f.file_id).collect();
    let states = index.with(move |s| s.file_states(&ids)).await?;

    let mut todo: Vec<&DavFile> = files
        .iter()
        .filter(|f| !states.get(&f.file_id).is_some_and(|s| s.is_current(&f.etag)))
        .collect();
    // Small files first: more of the caller's documents become searchable per second.
    todo.sort_by_key(|f| f.size);
    let mut current = files.len() - todo.len();
    // The byte budget picks the files up front (the first is always taken, however large);
    // the time budget is checked as each download starts.
    let mut bytes = 0usize;
    let planned: Vec<DavFile> = todo
        .into_iter()
        .enumerate()
        .take_while(|(i, file)| {
            let size = usize::try_from(file.size).unwrap_or(usize::MAX).min(MAX_INPUT_BYTES);
            bytes = bytes.saturating_add(size);
            *i == 0 || bytes <= index.settings.warm_bytes
        })
        .map(|(_, file)| file.clone())
        .collect();
    // Downloads and extraction run WARM_CONCURRENCY at a time; `buffered` yields them in
    // plan order and the index is written in that order, so passage ids, the counts and the
    // first error are what one-by-one would give.
    let mut prepared = futures::stream::iter(planned)
        .map(|file| async move {
            if started.elapsed() >= index.settings.warm_time {
                return None;
            }
            let outcome = prepare(caller, &file).await;
            Some((file, outcome))
        })
        .buffered(WARM_CONCURRENCY);
    let mut extracted = 0;
    while let Some(Some((file, outcome))) = prepared.next().await {
        let stored = match outcome {
            Ok(p) => store(index, &file, p).await,
            Err(e) => Err(e),
        };
        match stored {
            Ok(_) => {
                extracted += 1;
                current += 1;
            }
            // The file went away or out of reach since the listing, or Nextcloud stumbled
            // on this one file: nothing to record, the search goes on without it.
            Err(e) if e.is_not_found() || e.is_retryable() => {
                tracing::info!(file_id = file.file_id, error = %e, "warm-up skipped a file");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Warmed {
        coverage: Coverage {
            current,
            total: files.len(),
        },
        extracted,
    })
}

/// Downloads `file` as the caller, extracts it and replaces its passages (or records the
/// failure against this etag). Returns the ids of the new passages, if any.
pub async fn refresh<C: CallerDav>(index: &Index, caller: &C, file: &DavFile) -> Result<Option<RangeInclusive<i64>>, IndexError> {
    let prepared = prepare(caller, file).await?;
    store(index, file, prepared).await
}

/// What a file turned into, before anything is written.
enum Prepared {
    Passages(Vec<chunk::Passage>),
    Failed(&'static str),
}

/// Downloads and extracts `file` as the caller; touches no index state.
async fn prepare<C: CallerDav>(caller: &C, file: &DavFile) -> Result<Prepared, IndexError> {
    let Some(format) = Format::detect(&file.mime, file.name()) else {
        return Ok(Prepared::Failed("unsupported"));
    };
    if usize::try_from(file.size).map_or(true, |s| s > MAX_INPUT_BYTES) {
        return Ok(Prepared::Failed("too-large"));
    }
    let bytes = match caller.download(&file.path, MAX_INPUT_BYTES).await {
        Ok(bytes) => bytes,
        // Larger than announced, or a name we cannot address: recorded as failed, so it
        // is not fetched again until it changes.
        Err(IndexError::Nextcloud(crate::error::Error::InvalidArgument(_))) => return Ok(Prepared::Failed("not-downloadable")),
        Err(e) => return Err(e),
    };
    // Extraction and chunking are CPU work: off the async executor, outside the lock.
    let parsed = tokio::task::spawn_blocking(move || extract::extract(format, &bytes).map(|doc| chunk::passages(&doc, MAX_PASSAGE_BYTES)))
        .await
        .map_err(|e| IndexError::Task(e.to_string()))?;
    Ok(match parsed {
        Ok(passages) => Prepared::Passages(passages),
        Err(e) => {
            tracing::info!(file_id = file.file_id, kind = format.label(), error = %e, "extraction failed; recorded until the etag changes");
            Prepared::Failed(e.label())
        }
    })
}

/// Writes what [`prepare`] made of `file`: its passages, or the failure against this etag.
async fn store(index: &Index, file: &DavFile, prepared: Prepared) -> Result<Option<RangeInclusive<i64>>, IndexError> {
    let (file_id, etag, size, mime) = (file.file_id, file.etag.clone(), file.size, file.mime.clone());
    match prepared {
        Prepared::Passages(passages) => index.with(move |s| s.replace_file(file_id, &etag, &mime, size, &passages)).await,
        Prepared::Failed(label) => {
            index.with(move |s| s.record_failure(file_id, &etag, &mime, size, label)).await?;
            Ok(None)
        }
    }
}
