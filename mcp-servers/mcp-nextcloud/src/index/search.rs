//! The `files_grep` flow: warm, rank, verify, refresh, record.
//!
//! 1. Warm-up ([`super::warm`]): list the caller's documents, extract a few unknown ones.
//! 2. Rank: FTS5 bm25 over the whole corpus (heading weighted), common words guarded.
//! 3. Verify, a page of candidate file ids at a time: one WebDAV SEARCH by file ids in
//!    the caller's scope with the caller's token. What Nextcloud does not return is
//!    dropped unseen; if the request fails, the whole call fails and returns nothing.
//! 4. Refresh: a survivor whose etag changed (or that a webhook marked stale) is
//!    re-extracted from the caller's download before any of its text is shown.
//! 5. Record counts (never the query or the caller) in the `queries` table.
//!
//! It must never show a passage before step 3 returned its file to this caller, never
//! decide access itself, and never keep the caller's paths beyond the answer.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use serde::Serialize;

use super::dav::{CallerDav, DavFile};
use super::error::IndexError;
use super::query;
use super::store::{FileState, Hit, QueryRecord, Store};
use super::warm::{self, Coverage};
use super::{Index, Settings};
use crate::nextcloud::paths::UserPath;

pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 50;

/// The tool's arguments.
#[derive(Debug, Clone, Default)]
pub struct GrepRequest {
    pub query: String,
    /// Only files under this folder of the caller's tree (e.g. `/Projects`).
    pub path: Option<String>,
    pub limit: Option<usize>,
}

/// One passage, in the caller's own namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Passage {
    pub path: String,
    pub file_id: i64,
    /// Heading path of the section, e.g. "Plan: ship the agent > Budget".
    pub heading: String,
    /// Character offset of the section: `files_read {path, offset}` reads it whole.
    pub offset: i64,
    /// Matching words are marked `**like this**`.
    pub snippet: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoverageOut {
    pub indexed_files: usize,
    pub total_files: usize,
    pub percent: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrepResult {
    pub passages: Vec<Passage>,
    pub coverage: CoverageOut,
    /// What the model should know: coverage, and what to do when nothing was found.
    pub note: String,
}

/// Runs one search for the caller. Every outcome, failed or not, is counted in `queries`.
pub async fn grep<C: CallerDav>(index: &Index, caller: &C, req: GrepRequest) -> Result<GrepResult, IndexError> {
    let started = Instant::now();
    let terms = query::terms(&req.query)?;
    let limit = match req.limit {
        None => DEFAULT_LIMIT,
        Some(n) if (1..=MAX_LIMIT).contains(&n) => n,
        Some(n) => {
            return Err(IndexError::InvalidArgument(format!(
                "limit must be between 1 and {MAX_LIMIT} (got {n})"
            )));
        }
    };
    let prefix = UserPath::parse(req.path.as_deref().unwrap_or(""), "path")?;
    let mut record = QueryRecord {
        terms: terms.len(),
        mode: "all",
        ..QueryRecord::default()
    };
    let outcome = run(index, caller, &terms, &prefix, limit, &mut record).await;
    record.failed = outcome.is_err();
    record.returned = outcome.as_ref().map_or(0, |r| r.passages.len());
    record.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    if let Err(e) = index.with(move |s| s.record_query(&record)).await {
        tracing::warn!(error = %e, "could not record the query counts");
    }
    outcome
}

/// Whether a verified path lies in the folder the caller asked about.
fn under(path: &str, folder: &UserPath) -> bool {
    UserPath::parse(path, "path").is_ok_and(|p| folder.contains(&p))
}

async fn run<C: CallerDav>(
    index: &Index,
    caller: &C,
    terms: &[String],
    prefix: &UserPath,
    limit: usize,
    record: &mut QueryRecord,
) -> Result<GrepResult, IndexError> {
    let warmed = warm::warm(index, caller).await?;
    record.warmed = warmed.extracted;

    let settings = index.settings.clone();
    let (owned_terms, rank_settings) = (terms.to_vec(), settings.clone());
    let (expr, mode, hits) = index.with(move |s| rank(s, &owned_terms, &rank_settings)).await?;
    record.mode = mode;

    // Candidate files in order of their best passage.
    let mut by_file: HashMap<i64, Vec<Hit>> = HashMap::new();
    let mut order: Vec<i64> = Vec::new();
    for h in hits {
        by_file
            .entry(h.file_id)
            .or_insert_with(|| {
                order.push(h.file_id);
                Vec::new()
            })
            .push(h);
    }

    let mut usable: Vec<(Hit, DavFile)> = Vec::new();
    for page in order.chunks(settings.verify_page.max(1)).take(settings.max_pages) {
        record.candidates += page.len();
        let verified = verify(caller, page).await?;
        let verified: Vec<DavFile> = verified.into_iter().filter(|f| under(&f.path, prefix)).collect();
        record.survivors += verified.len();
        let ids: Vec<i64> = verified.iter().map(|f| f.file_id).collect();
        let states: HashMap<i64, FileState> = index.with(move |s| s.file_states(&ids)).await?;
        for file in verified {
            let fresh = states.get(&file.file_id).is_some_and(|s| s.is_current(&file.etag) && !s.failed);
            let hits = if fresh {
                by_file.remove(&file.file_id).unwrap_or_default()
            } else {
                // Changed since it was indexed: re-extract from the caller's own copy
                // and look again, so old text is never returned.
                match warm::refresh(index, caller, &file).await {
                    Ok(Some(ids)) => {
                        record.refreshed += 1;
                        let (expr, id) = (expr.clone(), file.file_id);
                        index.with(move |s| s.rank_within(&expr, ids, id)).await?
                    }
                    Ok(None) => {
                        record.refreshed += 1;
                        Vec::new()
                    }
                    Err(e) => {
                        tracing::info!(file_id = file.file_id, error = %e, "refresh failed; file left out");
                        Vec::new()
                    }
                }
            };
            usable.extend(hits.into_iter().take(settings.per_file).map(|h| (h, file.clone())));
        }
        if usable.len() >= limit {
            break;
        }
    }

    usable.sort_by(|a, b| a.0.score.total_cmp(&b.0.score));
    usable.truncate(limit);
    let passages = index
        .with(move |s| {
            let mut out = Vec::with_capacity(usable.len());
            for (hit, file) in usable {
                if let Some(shown) = s.show(&expr, hit.passage_id)? {
                    out.push(Passage {
                        path: file.path,
                        file_id: file.file_id,
                        heading: shown.heading,
                        offset: shown.section_offset,
                        snippet: shown.snippet,
                    });
                }
            }
            Ok(out)
        })
        .await?;
    Ok(GrepResult {
        note: note(&passages, warmed.coverage),
        coverage: CoverageOut {
            indexed_files: warmed.coverage.current,
            total_files: warmed.coverage.total,
            percent: warmed.coverage.percent(),
        },
        passages,
    })
}

/// Step 2, on the store: the FTS5 expression used, how the words were combined, and the
/// best candidate passages of the whole corpus. Public so benchmarks time exactly this.
pub fn rank(s: &Store, terms: &[String], settings: &Settings) -> Result<(String, &'static str, Vec<Hit>), IndexError> {
    // Guard: a word in nearly every passage (the, and, budget in a finance corpus) is
    // dropped when rarer words remain; it would only slow the query down.
    let mut kept: Vec<String> = Vec::new();
    if terms.len() > 1 {
        for t in terms {
            if s.match_count_capped(&query::quote(t), settings.common_cap)? <= settings.common_cap {
                kept.push(t.clone());
            }
        }
    }
    // Only very common words ("the of"): bm25 would first count, for each word, every
    // passage that holds it across the whole corpus, which is what makes such queries
    // slow. Their ranking means little anyway: the newest matching passages are taken.
    let all_common = kept.is_empty() && terms.len() > 1;
    if kept.is_empty() {
        kept = terms.to_vec();
    }
    let pick = |expr: &str| {
        if all_common {
            s.newest(expr, settings.candidate_passages)
        } else {
            s.rank(expr, settings.scan_cap, settings.candidate_passages)
        }
    };
    let all = query::all_of(&kept);
    let hits = pick(&all)?;
    if !hits.is_empty() || kept.len() == 1 {
        return Ok((all, "all", hits));
    }
    // No passage holds every word: take passages holding some; bm25 ranks those with
    // more (and rarer) words first.
    let any = query::any_of(&kept);
    let hits = pick(&any)?;
    Ok((any, "any", hits))
}

/// One SEARCH by file ids as the caller. Only ids we asked about are kept (a confused
/// answer cannot add files), and any failure fails the whole search.
async fn verify<C: CallerDav>(caller: &C, ids: &[i64]) -> Result<Vec<DavFile>, IndexError> {
    let asked: HashSet<i64> = ids.iter().copied().collect();
    let mut seen = HashSet::new();
    Ok(caller
        .by_ids(ids)
        .await?
        .into_iter()
        .filter(|f| asked.contains(&f.file_id) && seen.insert(f.file_id))
        .collect())
}

fn note(passages: &[Passage], coverage: Coverage) -> String {
    let covered = format!(
        "The index covers {} % of your documents ({} of {}); it fills as you search, so results may be incomplete.",
        coverage.percent(),
        coverage.current,
        coverage.total
    );
    if passages.is_empty() {
        format!("No passage found. {covered} Search again with other words: synonyms, and the words the document itself would likely use.")
    } else {
        covered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::index::chunk::Passage as Draft;

    fn corpus() -> Store {
        let mut s = Store::open_in_memory().expect("store");
        let p = |body: &str| Draft {
            heading: String::new(),
            body: body.into(),
            section_offset: 0,
        };
        let common: Vec<Draft> = (0..20).map(|i| p(&format!("common word filler {i}"))).collect();
        s.replace_file(1, "e", "text/plain", 1, &common).expect("file 1");
        s.replace_file(2, "e", "text/plain", 1, &[p("common word budget"), p("only forty here")])
            .expect("file 2");
        s
    }

    fn settings() -> Settings {
        Settings {
            common_cap: 5,
            scan_cap: 100,
            ..Settings::default()
        }
    }

    fn terms(q: &str) -> Vec<String> {
        query::terms(q).expect("words")
    }

    #[test]
    fn common_words_are_dropped_when_rarer_ones_remain() {
        let s = corpus();
        let (expr, mode, hits) = rank(&s, &terms("common budget"), &settings()).expect("rank");
        assert_eq!((expr.as_str(), mode), ("\"budget\"", "all"));
        assert_eq!(hits.iter().map(|h| h.file_id).collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn only_common_words_take_the_newest_matches_without_bm25() {
        let s = corpus();
        let (_, mode, hits) = rank(&s, &terms("common word"), &settings()).expect("rank");
        assert_eq!(mode, "all");
        assert_eq!(hits.len(), 21);
        assert_eq!(hits[0].file_id, 2, "newest first");
    }

    #[test]
    fn without_a_passage_holding_every_word_any_word_counts() {
        let s = corpus();
        let (expr, mode, hits) = rank(&s, &terms("budget forty"), &settings()).expect("rank");
        assert_eq!((expr.as_str(), mode), ("\"budget\" OR \"forty\"", "any"));
        assert_eq!(hits.len(), 2);
        let (_, mode, hits) = rank(&s, &terms("nowhere"), &settings()).expect("rank");
        assert_eq!((mode, hits.len()), ("all", 0));
    }

    #[test]
    fn folders_match_by_segment() {
        let projects = UserPath::parse("/Projects/", "path").expect("path");
        assert!(under("Projects/a.md", &projects));
        assert!(!under("Projects2/a.md", &projects));
        assert!(under("x.md", &UserPath::root()));
    }
}
