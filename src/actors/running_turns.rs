//! Which users have turn tasks running on this instance, so that an erasure can wait for a
//! user's cancelled turns to have ended before its last pass (`http::memory`).
//!
//! Cancelling a turn (its conversation deleted) does not stop it at once: the turn's task sees
//! the cancel at its next poll, and a poll already under way can still queue a memory write.
//! The stores' writers run queued writes in order, so once the task has ended, everything it
//! wrote is queued ahead of whatever is queued next. This module counts the tasks per uid and
//! lets a caller wait, bounded, until a user has none left.
//!
//! It owns only counts per uid and forgets a user whose count is back to zero; it must never
//! hold anything else about a user, nor stop or cancel a turn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

/// The counts, shared by every clone. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct RunningTurns {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    by_user: Mutex<HashMap<String, usize>>,
    /// Woken whenever a turn task ends.
    ended: Notify,
}

/// One running turn task of a user; dropping it (when the task ends, however) ends its count.
#[derive(Debug)]
pub struct TurnTask {
    inner: Arc<Inner>,
    uid: String,
}

impl Drop for TurnTask {
    fn drop(&mut self) {
        let mut users = self.inner.lock();
        if let Some(n) = users.get_mut(&self.uid) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                users.remove(&self.uid);
            }
        }
        drop(users);
        self.inner.ended.notify_waiters();
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, usize>> {
        self.by_user.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl RunningTurns {
    /// Counts one turn task of `uid` until the returned value is dropped (held by the task).
    pub fn started(&self, uid: &str) -> TurnTask {
        *self.inner.lock().entry(uid.to_string()).or_insert(0) += 1;
        TurnTask {
            inner: self.inner.clone(),
            uid: uid.to_string(),
        }
    }

    /// How many turn tasks of `uid` are running here.
    pub fn of_user(&self, uid: &str) -> usize {
        self.inner.lock().get(uid).copied().unwrap_or(0)
    }

    /// Waits until `uid` has no turn task running here, at most `bound`; how many are still
    /// running when it returns (0: they all ended).
    pub async fn all_ended(&self, uid: &str, bound: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            // Registered before the count is read, so an end between the two is not missed.
            let ended = self.inner.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            let running = self.of_user(uid);
            if running == 0 {
                return 0;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return self.of_user(uid);
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
        drop(a1);
        assert_eq!(turns.of_user("alice"), 1);
        drop((a2, b));
        assert!(turns.inner.lock().is_empty());
    }

    #[tokio::test]
    async fn waits_for_the_users_turns_to_end_and_no_longer_than_the_bound() {
        let turns = RunningTurns::default();
        assert_eq!(turns.all_ended("alice", Duration::from_millis(10)).await, 0);
        let alices = turns.started("alice");
        let _bobs = turns.started("bob");
        let mut ends = tokio::task::JoinSet::new();
        ends.spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(alices);
        });
        // Bob's turn still running does not hold alice's wait.
        assert_eq!(turns.all_ended("alice", Duration::from_secs(10)).await, 0);
        ends.join_next().await.unwrap().unwrap();
        let started = std::time::Instant::now();
        assert_eq!(turns.all_ended("bob", Duration::from_millis(100)).await, 1);
        assert!(started.elapsed() >= Duration::from_millis(100));
    }
}
