//! Which turn tasks of each user run on this instance.
//!
//! An erasure (`http::memory`) waits for the turns it cancelled to have ended
//! before its last pass: cancelling a turn (its conversation deleted) does not stop it at once;
//! the turn's task sees the cancel at its next poll, and a poll already under way can still
//! queue a memory write. The stores' writers run queued writes in order, so once the task has
//! ended, everything it wrote is queued ahead of whatever is queued next. Turns started after
//! the cancel (another tab) are not waited for: each task is stamped with a generation when it
//! starts, and an erasure waits only for stamps older than the snapshot it took.
//!
//! A turn's admission (B6: the user's fair share and the machine-wide permit, `http::chat`)
//! is a [`Held`]: the turn itself holds it (`turn::Turn::admission`) until just before its end
//! can show, cancelled or not, never only while the client's stream is open.
//!
//! It is the one count of running turn tasks (a turn's admission, B6, is counted apart by
//! `http::fairness` and the turn permits, and released just before the task ends): the
//! `tamebi.turns.in_flight` metric moves with its entries (each [`TurnTask`] holds the metric's
//! guard), and chat.db's inline commits read [`RunningTurns::count`] as their load signal
//! (`store::db`, passed in as a closure).
//!
//! It owns only stamps per uid and forgets a user with nothing running; it must never hold
//! anything else about a user, nor stop or cancel a turn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

/// What a turn holds for as long as it runs (its admission). Shared, so a request retried to a
/// fresh actor can hand the same one over; released with the last holder.
pub type Held = Arc<dyn Send + Sync>;

/// The running turns, shared by every clone. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct RunningTurns {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    state: Mutex<State>,
    /// Woken whenever a turn task ends.
    ended: Notify,
    /// Turn tasks running, of every user: read on every small chat.db write, so without the lock.
    total: AtomicUsize,
}

#[derive(Debug, Default)]
struct State {
    /// The stamp the next turn task gets; stamps only grow.
    next: u64,
    /// The stamps of each user's running turn tasks (a handful per user).
    by_user: HashMap<String, Vec<u64>>,
}

/// The generation at a moment: the turn tasks started before it (see [`RunningTurns::snapshot`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generation(u64);

/// One running turn task of a user; dropping it (when the task ends, however) ends its entry.
pub struct TurnTask {
    inner: Arc<Inner>,
    uid: String,
    stamp: u64,
    /// The turn's place in the `tamebi.turns.in_flight` metric (when metrics are on).
    _metric: Option<crate::telemetry::metrics::Held>,
}

impl std::fmt::Debug for TurnTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnTask")
            .field("uid", &self.uid)
            .field("stamp", &self.stamp)
            .finish()
    }
}

impl Drop for TurnTask {
    fn drop(&mut self) {
        self.inner.total.fetch_sub(1, Ordering::Relaxed);
        let mut state = self.inner.lock();
        if let Some(stamps) = state.by_user.get_mut(&self.uid) {
            stamps.retain(|s| *s != self.stamp);
            if stamps.is_empty() {
                state.by_user.remove(&self.uid);
            }
        }
        drop(state);
        self.inner.ended.notify_waiters();
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many turn tasks of `uid` started before `before` still run.
    fn older(&self, uid: &str, before: Generation) -> usize {
        self.lock()
            .by_user
            .get(uid)
            .map_or(0, |stamps| stamps.iter().filter(|s| **s < before.0).count())
    }
}

impl RunningTurns {
    /// Counts one turn task of `uid` until the returned value is dropped (held by the task).
    pub fn started(&self, uid: &str) -> TurnTask {
        let stamp = {
            let mut state = self.inner.lock();
            let stamp = state.next;
            state.next += 1;
            state.by_user.entry(uid.to_string()).or_default().push(stamp);
            stamp
        };
        self.inner.total.fetch_add(1, Ordering::Relaxed);
        // The metric is taken outside the lock: every turn start and end of every user takes
        // that lock, and the metric does not need it.
        TurnTask {
            inner: self.inner.clone(),
            uid: uid.to_string(),
            stamp,
            _metric: crate::telemetry::metrics::turn_in_flight(),
        }
    }

    /// How many turn tasks run here, of every user (chat.db's load signal, `store::chat`).
    pub fn count(&self) -> usize {
        self.inner.total.load(Ordering::Relaxed)
    }

    /// Marks now: turn tasks started from here on are not older than the returned generation.
    pub fn snapshot(&self) -> Generation {
        Generation(self.inner.lock().next)
    }

    /// How many turn tasks of `uid` run here.
    #[cfg(test)]
    pub fn of_user(&self, uid: &str) -> usize {
        self.inner.lock().by_user.get(uid).map_or(0, Vec::len)
    }

    /// How many turn tasks of `uid` started before `before` still run here.
    pub fn older_than(&self, uid: &str, before: Generation) -> usize {
        self.inner.older(uid, before)
    }

    /// Waits until no turn task of `uid` started before `before` runs here, at most `bound`;
    /// how many of those still run when it returns (0: they all ended). Turns started later
    /// do not hold the wait.
    pub async fn ended_before(&self, uid: &str, before: Generation, bound: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            // Registered before the count is read, so an end between the two is not missed.
            let ended = self.inner.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let running = self.inner.older(uid, before);
            if running == 0 {
                return 0;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return self.inner.older(uid, before);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_per_user_and_forgets_a_user_with_nothing_running() {
        let turns = RunningTurns::default();
        let a1 = turns.started("alice");
        let a2 = turns.started("alice");
        let b = turns.started("bob");
        assert_eq!((turns.of_user("alice"), turns.of_user("bob")), (2, 1));
        assert_eq!(turns.count(), 3);
        drop(a1);
        assert_eq!((turns.of_user("alice"), turns.count()), (1, 2));
        drop((a2, b));
        assert!(turns.inner.lock().by_user.is_empty());
        assert_eq!(turns.count(), 0);
    }

    // Real time (tokio's test-util, for a paused clock, is not built here); the counts prove it.
    #[tokio::test]
    async fn waits_for_the_users_older_turns_and_no_longer_than_the_bound() {
        let turns = RunningTurns::default();
        let now = turns.snapshot();
        assert_eq!(turns.ended_before("alice", now, Duration::from_millis(10)).await, 0);
        let alices = turns.started("alice");
        let _bobs = turns.started("bob");
        let mut ends = tokio::task::JoinSet::new();
        ends.spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(alices);
        });
        let cancelled = turns.snapshot();
        // Alice starts another turn after the cancel (another tab): it does not hold the wait.
        let _later = turns.started("alice");
        // Bob's turn still running does not hold alice's wait either.
        assert_eq!(turns.ended_before("alice", cancelled, Duration::from_secs(10)).await, 0);
        assert_eq!((turns.of_user("alice"), turns.older_than("alice", cancelled)), (1, 0));
        ends.join_next().await.unwrap().unwrap();
        let started = std::time::Instant::now();
        assert_eq!(turns.ended_before("bob", cancelled, Duration::from_millis(100)).await, 1);
        assert!(started.elapsed() >= Duration::from_millis(100));
    }
}
