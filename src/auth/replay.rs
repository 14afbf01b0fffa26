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
//! It never stores a uid, a body or a credential: only a hash of the nonce and when it expires.

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;

use super::identity::{IdentityError, MAX_SKEW_SECS};

/// Most nonces held at once (about 48 bytes each: a few MB at the cap).
pub const MAX_REMEMBERED: usize = 200_000;

#[derive(Debug)]
pub struct ReplayGuard {
    seen: Mutex<Seen>,
    cap: usize,
}

#[derive(Debug, Default)]
struct Seen {
    /// First 16 bytes of sha256(nonce) → unix second after which it can no longer verify.
    expiry: HashMap<u128, i64>,
    /// Size at the last sweep; the next sweep waits until the map has doubled (amortised O(1)).
    swept_at_len: usize,
}

impl Default for ReplayGuard {
    fn default() -> Self {
        ReplayGuard::with_capacity(MAX_REMEMBERED)
    }
}

impl ReplayGuard {
    pub fn with_capacity(cap: usize) -> Self {
        ReplayGuard {
            seen: Mutex::new(Seen::default()),
            cap,
        }
    }

    /// Records `nonce` (signed at `ts`) at time `now`; refuses one already seen in its window.
    /// Call only after the signature verified, so nobody without the signing secret can fill it.
    pub fn first_use(&self, nonce: &str, ts: i64, now: i64) -> Result<(), IdentityError> {
        let key = key(nonce);
        let expires = ts + MAX_SKEW_SECS;
        // A poisoned lock only means another request panicked mid-insert; the map is still sound.
        let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if seen.expiry.get(&key).is_some_and(|e| *e >= now) {
            return Err(IdentityError::Replayed);
        }
        if seen.expiry.len() >= self.cap || seen.expiry.len() >= 2 * seen.swept_at_len.max(1024) {
            seen.expiry.retain(|_, e| *e >= now);
            seen.swept_at_len = seen.expiry.len();
            if seen.expiry.len() >= self.cap {
                return Err(IdentityError::ReplayWindowFull);
            }
        }
        seen.expiry.insert(key, expires);
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
        assert!(g.first_use("nonce-aaaaaaaaaaaaaaaa", 1000, 1000).is_ok());
        assert_eq!(g.first_use("nonce-aaaaaaaaaaaaaaaa", 1000, 1059), Err(IdentityError::Replayed));
        assert!(g.first_use("nonce-bbbbbbbbbbbbbbbb", 1000, 1000).is_ok());
        // After the window the signature itself is refused (skew), so the nonce may be forgotten.
        assert!(g.first_use("nonce-aaaaaaaaaaaaaaaa", 1000, 1061).is_ok());
    }

    #[test]
    fn memory_is_bounded_and_expired_nonces_are_swept() {
        let g = ReplayGuard::with_capacity(3000);
        for i in 0..3000 {
            g.first_use(&format!("n-{i:020}"), 1000, 1000).unwrap();
        }
        // Full of live nonces: refuse rather than forget one.
        assert_eq!(
            g.first_use("n-new-aaaaaaaaaaaaaaaa", 1000, 1000),
            Err(IdentityError::ReplayWindowFull)
        );
        // Once they have expired, a sweep makes room.
        assert!(g.first_use("n-new-aaaaaaaaaaaaaaaa", 1100, 1100).is_ok());
        assert_eq!(g.len(), 1);
    }
}
