//! The store against a real SQLite FTS5 database (a temporary file in WAL mode).

use super::*;
use crate::index::chunk::Passage;
use crate::index::query;

fn passage(heading: &str, body: &str, offset: usize) -> Passage {
    Passage {
        heading: heading.into(),
        body: body.into(),
        section_offset: offset,
    }
}

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = Store::open(&dir.path().join("index.db")).expect("open");
    (dir, s)
}

fn q(words: &str) -> String {
    query::all_of(&query::terms(words).expect("words"))
}

#[test]
fn passages_are_ranked_heading_first_and_shown_with_snippets() {
    let (_d, mut s) = store();
    s.replace_file(
        1,
        "e1",
        "markdown",
        10,
        &[passage("Plan > Budget", "The budget is forty thousand euros.", 7)],
    )
    .expect("insert");
    s.replace_file(
        2,
        "e2",
        "text/markdown",
        10,
        &[passage(
            "Notes",
            "Someone said budget once, in passing, next to forty other things and a thousand words.",
            0,
        )],
    )
    .expect("insert");
    let hits = s.rank(&q("budget"), 1000, 10).expect("rank");
    assert_eq!(
        hits.iter().map(|h| h.file_id).collect::<Vec<_>>(),
        [1, 2],
        "heading match ranks first"
    );
    let shown = s.show(&q("forty thousand"), hits[0].passage_id).expect("show").expect("exists");
    assert_eq!(shown.heading, "Plan > Budget");
    assert_eq!(shown.section_offset, 7);
    assert!(shown.snippet.contains("**forty** **thousand**"), "{}", shown.snippet);
}

#[test]
fn replacing_a_file_removes_its_old_text() {
    let (_d, mut s) = store();
    s.replace_file(1, "e1", "text/plain", 3, &[passage("", "old words here", 0)])
        .expect("insert");
    let ids = s
        .replace_file(
            1,
            "e2",
            "text",
            3,
            &[passage("", "new words here", 0), passage("", "and more new", 0)],
        )
        .expect("replace");
    let ids = ids.expect("two passages");
    assert_eq!(ids.clone().count(), 2);
    assert!(s.rank(&q("old"), 100, 10).expect("rank").is_empty());
    assert_eq!(s.rank_within(&q("new"), ids, 1).expect("rank").len(), 2);
    assert_eq!(s.counts().expect("counts"), (1, 2));
    let st = s.file_states(&[1, 99]).expect("states");
    assert_eq!(st.len(), 1);
    assert!(st[&1].is_current("e2") && !st[&1].is_current("e1"));
}

#[test]
fn stale_and_gone_marks_change_only_that_file() {
    let (_d, mut s) = store();
    s.replace_file(1, "e1", "text/plain", 3, &[passage("", "alpha", 0)])
        .expect("insert");
    s.replace_file(2, "e2", "text/plain", 3, &[passage("", "alpha", 0)])
        .expect("insert");
    assert!(s.mark_stale(1).expect("stale"));
    assert!(!s.mark_stale(42).expect("unknown id"));
    let st = s.file_states(&[1, 2]).expect("states");
    assert!(st[&1].stale && !st[&1].is_current("e1"));
    assert!(st[&2].is_current("e2"));
    assert_eq!(s.rank(&q("alpha"), 100, 10).expect("rank").len(), 2, "stale text stays a candidate");
    assert!(s.mark_gone(1).expect("gone"));
    assert_eq!(s.rank(&q("alpha"), 100, 10).expect("rank").len(), 1);
    assert_eq!(s.counts().expect("counts"), (1, 1));
}

#[test]
fn failures_are_kept_per_etag() {
    let (_d, mut s) = store();
    s.replace_file(1, "e1", "application/pdf", 3, &[passage("", "alpha", 0)])
        .expect("insert");
    s.record_failure(1, "e2", "application/pdf", 3, "malformed").expect("failure");
    let st = s.file_states(&[1]).expect("states");
    assert!(
        st[&1].failed && st[&1].is_current("e2"),
        "a failure is current for its etag: no retry loop"
    );
    assert!(!st[&1].is_current("e3"), "a new etag is tried again");
    assert!(
        s.rank(&q("alpha"), 100, 10).expect("rank").is_empty(),
        "the old version's text is gone"
    );
}

#[test]
fn the_scan_cap_bounds_work_for_common_words() {
    let (_d, mut s) = store();
    let docs: Vec<Passage> = (0..300).map(|i| passage("", &format!("common word number {i}"), 0)).collect();
    s.replace_file(1, "e", "text/plain", 1, &docs).expect("insert");
    assert_eq!(s.match_count_capped(&q("common"), 50).expect("count"), 51);
    assert_eq!(s.match_count_capped(&q("number 7"), 50).expect("count"), 1);
    assert_eq!(s.rank(&q("common"), 40, 100).expect("rank").len(), 40);
    let newest = s.newest(&q("common word"), 5).expect("newest");
    assert_eq!(newest.len(), 5);
    assert!(
        newest
            .windows(2)
            .all(|w| w[0].passage_id > w[1].passage_id && w[0].score < w[1].score)
    );
}

#[test]
fn the_queries_table_holds_counts_and_nothing_else() {
    let (dir, s) = store();
    let rec = QueryRecord {
        terms: 3,
        mode: "any",
        candidates: 5,
        survivors: 2,
        returned: 4,
        refreshed: 1,
        warmed: 7,
        failed: false,
        duration_ms: 12,
    };
    s.record_query(&rec).expect("record");
    s.record_query(&QueryRecord {
        failed: true,
        mode: "all",
        ..QueryRecord::default()
    })
    .expect("record");
    let rows = s.recent_queries(10).expect("rows");
    assert_eq!(rows.len(), 2);
    assert!(rows[0].failed);
    assert_eq!(rows[1], rec);
    drop(s);
    // No column anywhere in the file can hold a user, a path or query text.
    let conn = rusqlite::Connection::open(dir.path().join("index.db")).expect("reopen");
    let mut stmt = conn
        .prepare("SELECT name FROM pragma_table_list WHERE schema = 'main'")
        .expect("tables");
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    for t in tables {
        let mut cols = conn.prepare("SELECT name FROM pragma_table_info(?1)").expect("cols");
        let names: Vec<String> = cols
            .query_map([&t], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        for c in names {
            let c = c.to_lowercase();
            assert!(
                !["user", "uid", "owner", "path", "share", "token", "query", "text"]
                    .iter()
                    .any(|w| c.contains(w)),
                "{t}.{c}"
            );
        }
    }
}

#[test]
fn wal_mode_is_on() {
    let (_d, s) = store();
    let mode: String = s.conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).expect("pragma");
    assert_eq!(mode, "wal");
}
