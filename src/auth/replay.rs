//! G1 replay protection: each signed request's nonce is accepted once.
//!
//! A signature is valid for 60 seconds either side of its timestamp, so a captured request
//! could otherwise be sent again within that window (approvals are single-use on their own,
//! but a replayed turn would run again). Each nonce is remembered until its timestamp has
//! left the window, and no longer: the memory needed is bounded by the request rate times two
//! minutes, and by [`MAX_REMEMBERED`] outright. When that many live nonces are held, new
//! requests are refused (429) rather than forgetting one early — forgetting would reopen the
//! replay window, refusing only slows a flood down.
//!
//! With several instances on one PostgreSQL database, a request captured on its way to one
//! instance could be replayed to another within its window, so there the nonces are recorded
//! in the shared database instead (`store::replay`: a unique key, so exactly one instance
//! accepts a request). This module still makes the decision; the store only answers "first
//! time seen?". A store that cannot answer fails closed: the request is refused (500), never
//! accepted unchecked.
//!
//! It never stores a uid, a body or a credential: only a hash of the nonce and when it expires.
//! The nonce stands for the whole signed request: it is inside the signature, so a replay
//! carries the same one, and a second request under a used nonce is refused however it differs.

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::identity::{IdentityError, MAX_SKEW_SECS};
use crate::store::replay::SeenRequests;

/// Most nonces held at once (about 64 bytes each: about 13 MB at the cap, which holds
/// 3,000 signed requests a second for the whole window).
pub const MAX_REMEMBERED: usize = 200_000;

pub struct ReplayGuard {
    seen: Mutex<Seen>,
    cap: usize,
    /// The records shared by every instance, when there are several (PostgreSQL).
    shared: Option<Arc<dyn SeenRequests>>,
}

#[derive(Debug, Default)]
struct Seen {
    /// First 16 bytes of sha256(nonce) → unix second after which it can no longer verify.
    expiry: HashMap<u128, i64>,
    /// The same keys by expiry second, so expired ones are dropped in order, a few at a time,
    /// never by a sweep over the whole map while requests wait on the lock.
    by_expiry: BTreeMap<i64, Vec<u128>>,
}

impl Seen {
    fn forget_expired(&mut self, now: i64) {
        while let Some(bucket) = self.by_expiry.first_entry() {
            if *bucket.key() >= now {
                break;
            }
            let (second, keys) = bucket.remove_entry();
            for key in keys {
                if self.expiry.get(&key) == Some(&second) {
                    self.expiry.remove(&key);
                }
            }
        }
    }
}

impl Default for ReplayGuard {
    fn default() -> Self {
        ReplayGuard::with_capacity(MAX_REMEMBERED)
    }
}

impl ReplayGuard {
    /// The guard of one instance: in memory, or in `shared` records when there are several.
    pub fn new(shared: Option<Arc<dyn SeenRequests>>) -> Self {
        ReplayGuard {
            shared,
            ..ReplayGuard::default()
        }
    }

    pub fn with_capacity(cap: usize) -> Self {
        ReplayGuard {
            seen: Mutex::new(Seen::default()),
            cap,
            shared: None,
        }
    }

    /// Records `nonce` (signed at `ts`) at time `now`; refuses one already seen in its window,
    /// by this instance or, with shared records, by any. Call only after the signature
    /// verified, so nobody without the signing secret can fill the records.
    pub async fn first_use(&self, nonce: &str, ts: i64, now: i64) -> Result<(), IdentityError> {
        let Some(shared) = &self.shared else {
            return self.first_use_here(nonce, ts, now);
        };
        let digest: [u8; 32] = Sha256::digest(nonce.as_bytes()).into();
        match shared.first_seen(&digest, ts + MAX_SKEW_SECS, now).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(IdentityError::Replayed),
            Err(e) => {
                // G1 fails closed: a request whose first use cannot be established is refused.
                tracing::error!(error = %e, "the shared replay records could not be reached");
                Err(IdentityError::ReplayUnverifiable)
            }
        }
    }

    /// The in-memory guard of a single instance.
    fn first_use_here(&self, nonce: &str, ts: i64, now: i64) -> Result<(), IdentityError> {
        let key = key(nonce);
        let expires = ts + MAX_SKEW_SECS;
        // A poisoned lock only means another request panicked mid-insert; the map is still sound.
        let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.forget_expired(now);
        if seen.expiry.contains_key(&key) {
            return Err(IdentityError::Replayed);
        }
        if seen.expiry.len() >= self.cap {
            return Err(IdentityError::ReplayWindowFull);
        }
        seen.expiry.insert(key, expires);
        seen.by_expiry.entry(expires).or_default().push(key);
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner).expiry.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn key(nonce: &str) -> u128 {
    let digest = Sha256::digest(nonce.as_bytes());
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    u128::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_accepted_once_within_its_window() {
        let g = ReplayGuard::default();
        assert!(g.first_use_here("nonce-aaaaaaaaaaaaaaaa", 1000, 1000).is_ok());
        assert_eq!(g.first_use_here("nonce-aaaaaaaaaaaaaaaa", 1000, 1059), Err(IdentityError::Replayed));
        assert!(g.first_use_here("nonce-bbbbbbbbbbbbbbbb", 1000, 1000).is_ok());
        // After the window the signature itself is refused (skew), so the nonce may be forgotten.
        assert!(g.first_use_here("nonce-aaaaaaaaaaaaaaaa", 1000, 1061).is_ok());
    }

    #[test]
    fn a_nonce_expires_with_its_own_timestamp() {
        let g = ReplayGuard::default();
        // Signed 50 s in the future: still valid until ts + 60, so remembered that long.
        assert!(g.first_use_here("nonce-future-00000000", 1050, 1000).is_ok());
        assert_eq!(g.first_use_here("nonce-future-00000000", 1050, 1105), Err(IdentityError::Replayed));
        assert!(g.first_use_here("nonce-other-000000000", 1106, 1111).is_ok());
        assert_eq!(g.len(), 1, "the expired one is gone");
    }

    #[test]
    fn memory_is_bounded_and_expired_nonces_are_swept() {
        let g = ReplayGuard::with_capacity(3000);
        for i in 0..3000 {
            g.first_use_here(&format!("n-{i:020}"), 1000, 1000).unwrap();
        }
        // Full of live nonces: refuse rather than forget one.
        assert_eq!(
            g.first_use_here("n-new-aaaaaaaaaaaaaaaa", 1000, 1000),
            Err(IdentityError::ReplayWindowFull)
        );
        // Once they have expired, a sweep makes room.
        assert!(g.first_use_here("n-new-aaaaaaaaaaaaaaaa", 1100, 1100).is_ok());
        assert_eq!(g.len(), 1);
    }
}
