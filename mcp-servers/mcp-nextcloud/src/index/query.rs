//! Turning whatever text a caller typed into an FTS5 query that means exactly those words.
//!
//! FTS5 has its own query language (`"phrases"`, `AND`/`OR`/`NOT`, `NEAR(…)`, `prefix*`,
//! `^initial`, `column:` filters, parentheses). None of it is exposed: the input is cut
//! into words (runs of letters and digits, as FTS5's unicode61 tokenizer sees them) and
//! every word becomes a quoted FTS5 string, so `heading:budget OR (x` searches for the
//! words "heading", "budget", "or" and "x" and can never be a syntax error.
//!
//! It must never build SQL: the resulting string is bound as the MATCH parameter.

use super::error::IndexError;

/// More words than this are ignored (a pasted paragraph is not a query).
pub const MAX_TERMS: usize = 16;
/// A longer "word" is cut (nobody searches for a 200-letter token).
pub const MAX_TERM_CHARS: usize = 64;

/// The distinct words of `input`, lower-cased, in order of first appearance.
pub fn terms(input: &str) -> Result<Vec<String>, IndexError> {
    let mut out: Vec<String> = Vec::new();
    for word in input.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let word: String = word.chars().take(MAX_TERM_CHARS).collect::<String>().to_lowercase();
        if !out.contains(&word) {
            out.push(word);
        }
        if out.len() == MAX_TERMS {
            break;
        }
    }
    if out.is_empty() {
        return Err(IndexError::InvalidArgument(
            "the query has no words to search for; use words that the document would contain".into(),
        ));
    }
    Ok(out)
}

/// One quoted FTS5 string. Words hold no `"` (they are alphanumeric), but quoting
/// doubles any quote anyway so the function is safe for any input.
pub fn quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// Every term must occur (FTS5's implicit AND between strings).
pub fn all_of(terms: &[String]) -> String {
    terms.iter().map(|t| quote(t)).collect::<Vec<_>>().join(" ")
}

/// Any term may occur; bm25 then favours passages holding more of them.
pub fn any_of(terms: &[String]) -> String {
    terms.iter().map(|t| quote(t)).collect::<Vec<_>>().join(" OR ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fts_syntax_becomes_plain_words() {
        let cases: &[(&str, &[&str])] = &[
            ("budget \"forty", &["budget", "forty"]),
            ("NEAR(budget forty, 3)", &["near", "budget", "forty", "3"]),
            ("budg*", &["budg"]),
            ("^budget", &["budget"]),
            ("heading:budget", &["heading", "budget"]),
            ("(budget OR", &["budget", "or"]),
            ("-budget AND NOT forty", &["budget", "and", "not", "forty"]),
            ("Budgét 四万 naïve 🚀", &["budgét", "四万", "naïve"]),
            ("a'b", &["a", "b"]),
        ];
        for (input, want) in cases {
            assert_eq!(terms(input).expect("has words"), *want, "{input}");
        }
    }

    #[test]
    fn queries_are_quoted_strings_only() {
        let t = terms("heading:x OR y").expect("words");
        assert_eq!(all_of(&t), r#""heading" "x" "or" "y""#);
        assert_eq!(any_of(&t), r#""heading" OR "x" OR "or" OR "y""#);
        assert_eq!(quote("a\"b"), r#""a""b""#);
    }

    #[test]
    fn no_words_is_a_clear_error() {
        for input in ["", "   ", "\"\"", "()*^-:", "🚀🚀"] {
            let err = terms(input).expect_err("no words");
            assert!(err.to_string().contains("no words"), "{input}");
        }
    }

    #[test]
    fn long_inputs_are_bounded() {
        let many = (0..100).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
        assert_eq!(terms(&many).expect("words").len(), MAX_TERMS);
        let long = "x".repeat(1000);
        assert_eq!(terms(&long).expect("word")[0].chars().count(), MAX_TERM_CHARS);
        assert_eq!(terms("Budget budget BUDGET").expect("word"), ["budget"]);
    }
}
