//! A fair share of turns per user (goal B6): one person cannot starve everyone else.
//!
//! Two limits, both per uid, checked before a turn starts:
//! - at most `max_running` turns running at once (across that user's conversations);
//! - a token bucket: `burst` turns at once, refilled at `per_minute` turns a minute
//!   (`per_minute = 0` turns the bucket off).
//!
//! A refusal is 429 with `Retry-After` and a message saying which limit was hit. The global
//! turn semaphore stays behind this as the machine's own bound. This module owns only counts
//! per uid; it must never hold anything else about a user, and forgets a user as soon as they
//! have nothing running and a full bucket.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The configured limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub max_running: usize,
    pub burst: u32,
    pub per_minute: u32,
}

/// Why a turn was refused, and when trying again makes sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The user already has `max_running` turns running.
    TooManyRunning,
    /// The user's bucket is empty; a token comes back after the duration.
    TooFast(Duration),
}

impl Refusal {
    /// Whole seconds for `Retry-After` (at least 1).
    pub fn retry_after_secs(&self) -> u64 {
        match self {
            Refusal::TooManyRunning => 1,
            Refusal::TooFast(wait) => wait.as_secs_f64().ceil().max(1.0) as u64,
        }
    }
}

/// Past this many tracked users, idle ones with full buckets are dropped before adding one.
const PRUNE_AT: usize = 10_000;

#[derive(Debug)]
struct UserState {
    running: usize,
    tokens: f64,
    refilled: Instant,
}

/// Per-user admission. Cheap to clone (shared state).
#[derive(Debug, Clone)]
pub struct Fairness {
    limits: Limits,
    users: Arc<Mutex<HashMap<String, UserState>>>,
}

/// A running turn's place in its user's count; released on drop.
#[derive(Debug)]
pub struct Admitted {
    fairness: Fairness,
    uid: String,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut users = self.fairness.lock();
        if let Some(state) = users.get_mut(&self.uid) {
            state.running = state.running.saturating_sub(1);
            if state.running == 0 && self.fairness.bucket_full(state, Instant::now()) {
                users.remove(&self.uid);
            }
        }
    }
}

impl Fairness {
    pub fn new(limits: Limits) -> Self {
        Fairness {
            limits,
            users: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, UserState>> {
        self.users.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn refill_per_sec(&self) -> f64 {
        f64::from(self.limits.per_minute) / 60.0
    }

    fn bucket_full(&self, state: &mut UserState, now: Instant) -> bool {
        self.refill(state, now);
        self.limits.per_minute == 0 || state.tokens >= f64::from(self.limits.burst)
    }

    fn refill(&self, state: &mut UserState, now: Instant) {
        let gained = now.duration_since(state.refilled).as_secs_f64() * self.refill_per_sec();
        state.tokens = (state.tokens + gained).min(f64::from(self.limits.burst));
        state.refilled = now;
    }

    /// Admits one turn for `uid`, or says why not.
    pub fn admit(&self, uid: &str) -> Result<Admitted, Refusal> {
        let now = Instant::now();
        let mut users = self.lock();
        if users.len() >= PRUNE_AT && !users.contains_key(uid) {
            users.retain(|_, s| s.running > 0 || !self.bucket_full(s, now));
        }
        let state = users.entry(uid.to_string()).or_insert_with(|| UserState {
            running: 0,
            tokens: f64::from(self.limits.burst),
            refilled: now,
        });
        if state.running >= self.limits.max_running {
            return Err(Refusal::TooManyRunning);
        }
        if self.limits.per_minute > 0 {
            self.refill(state, now);
            if state.tokens < 1.0 {
                let wait = (1.0 - state.tokens) / self.refill_per_sec();
                return Err(Refusal::TooFast(Duration::from_secs_f64(wait)));
            }
            state.tokens -= 1.0;
        }
        state.running += 1;
        Ok(Admitted {
            fairness: self.clone(),
            uid: uid.to_string(),
        })
    }

    /// Users currently tracked (running something or with a bucket still refilling).
    pub fn tracked(&self) -> usize {
        let now = Instant::now();
        let mut users = self.lock();
        users.retain(|_, s| s.running > 0 || !self.bucket_full(s, now));
        users.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_running: usize, burst: u32, per_minute: u32) -> Fairness {
        Fairness::new(Limits {
            max_running,
            burst,
            per_minute,
        })
    }

    #[test]
    fn running_turns_are_capped_per_user_and_released_on_drop() {
        let f = limits(2, 100, 0);
        let a1 = f.admit("alice").unwrap();
        let _a2 = f.admit("alice").unwrap();
        assert_eq!(f.admit("alice").unwrap_err(), Refusal::TooManyRunning);
        // bob is not affected by alice.
        let _b = f.admit("bob").unwrap();
        drop(a1);
        assert!(f.admit("alice").is_ok());
        assert_eq!(Refusal::TooManyRunning.retry_after_secs(), 1);
    }

    #[test]
    fn the_bucket_empties_and_says_when_to_come_back() {
        let f = limits(100, 3, 60);
        for _ in 0..3 {
            drop(f.admit("alice").unwrap());
        }
        match f.admit("alice") {
            Err(Refusal::TooFast(wait)) => {
                assert!(wait <= Duration::from_secs(1) && wait > Duration::from_millis(900), "{wait:?}");
                assert_eq!(Refusal::TooFast(wait).retry_after_secs(), 1);
            }
            other => panic!("expected TooFast, got {other:?}"),
        }
        assert!(f.admit("bob").is_ok());
        assert_eq!(Refusal::TooFast(Duration::from_millis(2100)).retry_after_secs(), 3);
    }

    #[test]
    fn idle_users_with_full_buckets_are_forgotten() {
        let f = limits(4, 5, 0);
        drop(f.admit("alice").unwrap());
        assert_eq!(f.tracked(), 0);
        let held = f.admit("bob").unwrap();
        assert_eq!(f.tracked(), 1);
        drop(held);
        assert_eq!(f.tracked(), 0);
        // With a bucket, a user who spent tokens is remembered until it refills.
        let g = limits(4, 5, 60);
        drop(g.admit("carol").unwrap());
        assert_eq!(g.tracked(), 1);
    }
}
