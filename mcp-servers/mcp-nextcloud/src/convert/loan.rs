//! The lent file: a downloaded document held in memory and handed out once, at
//! `GET /loan/<token>`, to the document server.
//!
//! The token is the capability (256 random bits, hex): the loan listener asks for no
//! credential, and the document server never sees one of the user's. A loan is single use
//! (the first fetch takes it), lives at most the configured lifetime (never more than 60 s),
//! and ends when its [`Lease`] is dropped, whether the conversion succeeded or not. At most
//! [`MAX_LOANS`] loans and [`MAX_LOAN_BYTES`] bytes are held at once; beyond that, lending
//! fails with a "busy, try again" error rather than holding more. Unknown, expired and already
//! claimed tokens get the same 404, byte for byte, so an answer says nothing about which.
//! Only hashes of tokens are kept, so the map itself holds no usable capability.
//!
//! This module must never: log a token, answer anything but the one file to a good token, or
//! be mounted on the MCP listener (it has its own, `MCP_LOAN_BIND`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};
use url::Url;

use crate::error::Error;

/// Loans held at once.
pub const MAX_LOANS: usize = 16;
/// Bytes held in loans at once.
pub const MAX_LOAN_BYTES: usize = 256 * 1024 * 1024;
/// The one answer to every token that does not lend a file now.
const NOT_FOUND: &str = "not found\n";

type Key = [u8; 32];

struct Entry {
    body: bytes::Bytes,
    expires: Instant,
    claimed: Arc<OnceLock<Instant>>,
}

#[derive(Default)]
struct Held {
    loans: HashMap<Key, Entry>,
    bytes: usize,
}

impl Held {
    fn remove(&mut self, key: &Key) -> Option<Entry> {
        let entry = self.loans.remove(key)?;
        self.bytes -= entry.body.len();
        Some(entry)
    }

    fn purge(&mut self, now: Instant) {
        let expired: Vec<Key> = self.loans.iter().filter(|(_, e)| e.expires <= now).map(|(k, _)| *k).collect();
        for key in expired {
            self.remove(&key);
        }
    }
}

/// The loans of this process. Cheap to clone (shared).
#[derive(Clone)]
pub struct Loans {
    held: Arc<Mutex<Held>>,
    ttl: Duration,
    base_url: Url,
    max_loans: usize,
    max_bytes: usize,
}

impl Loans {
    /// `base_url` is the loan listener as the document server reaches it (`MCP_LOAN_BASE_URL`).
    pub fn new(base_url: Url, ttl: Duration) -> Loans {
        Loans::bounded(base_url, ttl, MAX_LOANS, MAX_LOAN_BYTES)
    }

    fn bounded(base_url: Url, ttl: Duration, max_loans: usize, max_bytes: usize) -> Loans {
        Loans {
            held: Arc::new(Mutex::new(Held::default())),
            ttl: ttl.min(crate::config::MAX_LOAN_TTL),
            base_url,
            max_loans,
            max_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        // A panic while holding the lock cannot leave the map inconsistent in a way that
        // matters (entries are whole or absent), so a poisoned lock is used as it is.
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Lends `body` until the lease is dropped, the file is fetched once, or the lifetime ends.
    pub fn lend(&self, body: Vec<u8>) -> Result<Lease, Error> {
        let mut token = [0u8; 32];
        rand::fill(&mut token[..]);
        let token = hex::encode(token);
        let key = key_of(&token);
        let now = Instant::now();
        let claimed = Arc::new(OnceLock::new());
        {
            let mut held = self.lock();
            held.purge(now);
            if held.loans.len() >= self.max_loans || held.bytes + body.len() > self.max_bytes {
                return Err(Error::Retryable(
                    "the document server is busy with other conversions right now; try again in a minute".into(),
                ));
            }
            held.bytes += body.len();
            held.loans.insert(
                key,
                Entry {
                    body: body.into(),
                    expires: now + self.ttl,
                    claimed: claimed.clone(),
                },
            );
        }
        let url = self
            .base_url
            .join(&format!("loan/{token}"))
            .map_err(|e| Error::Retryable(format!("the loan URL could not be formed: {e}")))?;
        Ok(Lease {
            loans: self.clone(),
            key,
            url,
            lent_at: now,
            claimed,
        })
    }

    /// Takes the file a token lends, once; `None` for unknown, expired or claimed tokens.
    fn claim(&self, token: &str) -> Option<bytes::Bytes> {
        let key = key_of(token);
        let now = Instant::now();
        let mut held = self.lock();
        held.purge(now);
        let entry = held.remove(&key)?;
        let _ = entry.claimed.set(now);
        Some(entry.body)
    }

    /// How many loans are held right now (for tests and the busy bound).
    pub fn held(&self) -> usize {
        let mut held = self.lock();
        held.purge(Instant::now());
        held.loans.len()
    }

    /// The loan listener's router: `GET /loan/<token>` and nothing else.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/loan/{token}", get(fetch))
            .fallback(|| async { not_found() })
            .with_state(self.clone())
    }
}

fn key_of(token: &str) -> Key {
    Sha256::digest(token.as_bytes()).into()
}

/// The same bytes for every token that lends nothing now, and for every other path.
fn not_found() -> Response {
    (
        http::StatusCode::NOT_FOUND,
        [
            (http::header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (http::header::CACHE_CONTROL, "no-store"),
        ],
        NOT_FOUND,
    )
        .into_response()
}

/// `GET /loan/<token>`. Any `Authorization` header is ignored: the token is the capability
/// (OnlyOffice signs its downloads with its own JWT; it proves nothing here).
async fn fetch(State(loans): State<Loans>, Path(token): Path<String>) -> Response {
    match loans.claim(&token) {
        Some(body) => (
            http::StatusCode::OK,
            [
                (http::header::CONTENT_TYPE, "application/octet-stream"),
                (http::header::CACHE_CONTROL, "no-store"),
            ],
            Body::from(body),
        )
            .into_response(),
        None => not_found(),
    }
}

/// One loan, ended when dropped.
pub struct Lease {
    loans: Loans,
    key: Key,
    /// Where the document server fetches the file (under `MCP_LOAN_BASE_URL`).
    pub url: Url,
    lent_at: Instant,
    claimed: Arc<OnceLock<Instant>>,
}

impl Lease {
    /// How long after lending the document server fetched the file, once it has.
    pub fn claimed_after(&self) -> Option<Duration> {
        self.claimed.get().map(|at| at.duration_since(self.lent_at))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.loans.lock().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loans(ttl_ms: u64, max: usize, bytes: usize) -> Loans {
        Loans::bounded(
            Url::parse("http://loan.test:9/").unwrap(),
            Duration::from_millis(ttl_ms),
            max,
            bytes,
        )
    }

    fn token(lease: &Lease) -> String {
        lease.url.path().trim_start_matches("/loan/").to_string()
    }

    #[test]
    fn a_token_is_256_random_bits_and_lends_once() {
        let l = loans(60_000, 4, 1024);
        let a = l.lend(b"one".to_vec()).unwrap();
        let b = l.lend(b"two".to_vec()).unwrap();
        assert_eq!(token(&a).len(), 64);
        assert!(token(&a).chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(token(&a), token(&b));
        assert!(a.url.as_str().starts_with("http://loan.test:9/loan/"));
        assert_eq!(a.claimed_after(), None);
        assert_eq!(l.claim(&token(&a)).as_deref(), Some(&b"one"[..]));
        assert!(a.claimed_after().is_some());
        assert_eq!(l.claim(&token(&a)), None, "single use");
        assert_eq!(l.claim("00"), None);
        assert_eq!(l.held(), 1);
        drop(b);
        assert_eq!(l.held(), 0, "a dropped lease ends its loan");
    }

    #[test]
    fn loans_expire() {
        let l = loans(20, 4, 1024);
        let a = l.lend(b"x".to_vec()).unwrap();
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(l.claim(&token(&a)), None);
    }

    async fn answer(loans: &Loans, token: &str) -> (http::StatusCode, http::HeaderMap, bytes::Bytes) {
        let r = fetch(State(loans.clone()), Path(token.to_string())).await;
        let (parts, body) = r.into_parts();
        (parts.status, parts.headers, axum::body::to_bytes(body, 1 << 20).await.unwrap())
    }

    #[tokio::test]
    async fn unknown_expired_and_claimed_tokens_answer_byte_for_byte_alike() {
        let l = loans(30, 4, 1024);
        let claimed = l.lend(b"doc".to_vec()).unwrap();
        let expired = l.lend(b"old".to_vec()).unwrap();
        let first = answer(&l, &token(&claimed)).await;
        assert_eq!((first.0, &first.2[..]), (http::StatusCode::OK, &b"doc"[..]));
        tokio::time::sleep(Duration::from_millis(60)).await;
        let again = answer(&l, &token(&claimed)).await;
        let late = answer(&l, &token(&expired)).await;
        let unknown = answer(&l, &"ab".repeat(32)).await;
        let garbage = answer(&l, "../../etc/passwd").await;
        assert_eq!(again.0, http::StatusCode::NOT_FOUND);
        assert_eq!(again, late);
        assert_eq!(late, unknown);
        assert_eq!(unknown, garbage);
    }

    #[test]
    fn the_lifetime_is_never_above_sixty_seconds() {
        let l = Loans::new(Url::parse("http://x/").unwrap(), Duration::from_secs(3600));
        assert_eq!(l.ttl, Duration::from_secs(60));
    }

    #[test]
    fn count_and_bytes_are_bounded_and_say_busy() {
        let l = loans(60_000, 2, 10);
        let _a = l.lend(vec![0; 4]).unwrap();
        let e = l.lend(vec![0; 7]).err().expect("bytes bound");
        assert!(e.to_string().contains("busy") && e.to_string().contains("try again"), "{e}");
        let _b = l.lend(vec![0; 6]).unwrap();
        let e = l.lend(vec![0; 0]).err().expect("count bound");
        assert!(matches!(e, Error::Retryable(_)));
    }
}
