//! One turn's stream: its frames in order, shared by the turn that writes them, the
//! conversation actor that holds some of them back until they are committed, and every
//! client that reads them (the first request and any resume).
//!
//! The turn appends each frame as it happens, without a message to anyone; a reader is woken
//! and sends what is *visible*. A frame that finishes something the client could rely on (a
//! boundary whose message must be in chat.db first) is appended *held*: it and everything
//! after it stay invisible until the conversation actor has committed and releases it. So a
//! kill -9 never loses what a client saw finished, while the actor is involved only at
//! commits, not for every part. A turn that ends with nothing left to commit closes its log
//! itself ([`StreamLog::finish_when_released`]): the end shows once the last hold is released.
//!
//! The frames live in one buffer for the turn's life (it grows by doubling, so it may hold up
//! to twice what was sent), and a reader copies the bytes it has not had under the log's lock:
//! a resume of a long turn copies the whole log once. A turn's frames are bounded by what the
//! turn itself sends (its text and its tools' outputs), and the buffer goes with the turn.
//!
//! This log never decides what to commit and never touches storage; it only orders frames
//! and says how far a reader may go. A reader starting at frame 0 gets every frame exactly
//! once (a resume is just another reader), then the end.
//!
//! It also counts its open readers and knows since when it has had none
//! ([`StreamLog::unread_for`]): the turn stops generating an answer nobody reads any more
//! (`TAMEBI_TURN_ORPHAN_GRACE_SECS`, see `turn`). It never decides that itself. Likewise it
//! carries its person's Stop to the turn ([`StreamLog::ask_stop`]), and says when the stream
//! has ended ([`StreamLog::ended`]) to whoever waits for the stop to be done.

use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How a turn's stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The turn ended and everything it sent is visible.
    Finished,
    /// The conversation actor went away before the turn ended (a crash, a takeover, a
    /// delete): frames still held were never committed and are never shown.
    Broken,
    /// As `Broken`, because this instance no longer holds the conversation: the write fence
    /// refused it (store::lease: another instance took it, to serve, delete or erase it), or
    /// its lease could not be renewed. Readers say so instead of "something went wrong".
    Moved,
}

/// A frame (or the start of the log) that waits for a commit; given back to `release`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hold(u64);

#[derive(Default)]
pub struct StreamLog {
    state: Mutex<LogState>,
    changed: Notify,
    /// Its person pressed Stop (`POST /v1/chat/{id}/stop`): the turn watches this beside the
    /// reader count. Here rather than in the turn: the conversation actor reaches a running
    /// turn through its log, and the turn's own state stays as small (issue #16).
    stop: tokio_util::sync::CancellationToken,
}

#[derive(Default)]
struct LogState {
    /// Every frame appended so far, back to back. One growing buffer rather than an
    /// allocation per frame: a trickling stream keeps its whole replay for as long as it is
    /// open, and each live allocation costs the allocator's overhead besides its bytes.
    frames: Vec<u8>,
    /// `frames[..visible]` may be sent (always at a frame's end).
    visible: usize,
    /// Holds not yet released, oldest first: (hold, offset of the first byte it hides).
    held: VecDeque<(Hold, usize)>,
    next_hold: u64,
    end: Option<End>,
    /// The turn has ended: `Finished` follows as soon as nothing is held any more.
    closing: bool,
    /// Readers open now (a client's stream each: the first request and any resume).
    readers: u32,
    /// Since when no reader is open (`None` while one is): from the log's creation until the
    /// first request's stream opens, and from the moment the last one was dropped.
    unread_since: Option<Instant>,
}

impl LogState {
    fn reveal(&mut self) {
        self.visible = self.held.front().map_or(self.frames.len(), |&(_, from)| from);
        if self.closing && self.held.is_empty() && self.end.is_none() {
            self.end = Some(End::Finished);
        }
    }
}

impl StreamLog {
    pub fn new() -> Arc<StreamLog> {
        let log = StreamLog::default();
        log.lock().unread_since = Some(Instant::now());
        Arc::new(log)
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        // Nothing panics while holding the lock; a poisoned lock still holds consistent frames.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hides every frame appended from now on until `release`.
    pub fn hold(&self) -> Hold {
        let mut s = self.lock();
        let hold = Hold(s.next_hold);
        s.next_hold += 1;
        let from = s.frames.len();
        s.held.push_back((hold, from));
        hold
    }

    /// Appends a frame; readers see it at once unless an earlier frame is still held. After
    /// the end nothing is appended (a turn cancelled because its actor died may still try).
    pub fn push(&self, frame: &[u8]) {
        let mut s = self.lock();
        if s.end.is_some() {
            return;
        }
        s.frames.extend_from_slice(frame);
        if s.held.is_empty() {
            s.visible = s.frames.len();
            drop(s);
            self.changed.notify_waiters();
        }
    }

    /// Appends a frame that no reader may see before `release` (nor anything after it).
    pub fn push_held(&self, frame: &[u8]) -> Hold {
        let hold = self.hold();
        self.push(frame);
        hold
    }

    /// What `hold` hid may be seen (up to the next hold still in place).
    pub fn release(&self, hold: Hold) {
        let mut s = self.lock();
        let before = (s.visible, s.end);
        s.held.retain(|&(h, _)| h != hold);
        s.reveal();
        if (s.visible, s.end) != before {
            drop(s);
            self.changed.notify_waiters();
        }
    }

    /// Ends the stream; the first end given counts. `Finished` shows every frame; `Broken`
    /// and `Moved` leave held frames unseen.
    pub fn finish(&self, end: End) {
        let mut s = self.lock();
        if s.end.is_some() {
            return;
        }
        s.end = Some(end);
        if end == End::Finished {
            s.held.clear();
            s.reveal();
        }
        drop(s);
        self.changed.notify_waiters();
    }

    /// The turn appended its last frame: the stream ends `Finished` once every hold is
    /// released (at once if none is), so a reader gets the last frames and the end together.
    /// What is held stays unseen until its commit; a `Broken` end before that still wins.
    pub fn finish_when_released(&self) {
        let mut s = self.lock();
        if s.end.is_some() {
            return;
        }
        s.closing = true;
        s.reveal();
        let ended = s.end.is_some();
        drop(s);
        if ended {
            self.changed.notify_waiters();
        }
    }

    /// A reader from the first frame. It counts as open until it is dropped.
    pub fn reader(self: &Arc<Self>) -> Reader {
        let mut s = self.lock();
        s.readers += 1;
        s.unread_since = None;
        drop(s);
        Reader {
            log: self.clone(),
            next: 0,
        }
    }

    /// Its person asked the turn to stop (Stop pressed). The log only passes the request on:
    /// the turn decides where it stops (`turn::model_step`).
    pub fn ask_stop(&self) {
        self.stop.cancel();
    }

    /// Whether [`StreamLog::ask_stop`] was called.
    pub fn stop_was_asked(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Resolves once [`StreamLog::ask_stop`] has been called.
    pub async fn stop_asked(&self) {
        self.stop.cancelled().await;
    }

    /// Resolves once no reader has been open for `grace` without a break (a reader that
    /// comes back within it starts the count again from its own drop). Looks at the count
    /// once per `grace` while someone reads, and at the exact deadline once nobody does: no
    /// wake-up per reader that comes and goes.
    pub async fn unread_for(&self, grace: Duration) {
        loop {
            let wait = match self.lock().unread_since {
                Some(since) => match grace.checked_sub(since.elapsed()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return,
                },
                None => grace,
            };
            tokio::time::sleep(wait).await;
        }
    }
}

impl StreamLog {
    /// Resolves once the stream has ended, however (for a stop that answers once the turn is
    /// over, `http::chat::stop`). Not a reader: it neither counts as one nor copies frames.
    pub async fn ended(&self) -> End {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before looking, as `Reader::next` does.
            changed.as_mut().enable();
            if let Some(end) = self.lock().end {
                return end;
            }
            changed.await;
        }
    }
}

/// What a reader gets next.
#[derive(Debug, PartialEq)]
pub enum Next {
    /// Frames not read before, in order, back to back (a copy: the log keeps its buffer).
    Frames(Bytes),
    /// Nothing follows.
    End(End),
}

/// One client's position in a log.
pub struct Reader {
    log: Arc<StreamLog>,
    /// Offset of the first byte not read yet.
    next: usize,
}

/// The client's stream is gone (it disconnected, or its response was parked or ended).
impl Drop for Reader {
    fn drop(&mut self) {
        let mut s = self.log.lock();
        s.readers = s.readers.saturating_sub(1);
        if s.readers == 0 {
            s.unread_since = Some(Instant::now());
        }
    }
}

impl Reader {
    /// Waits until there are visible frames this reader has not had, or the end.
    pub async fn next(&mut self) -> Next {
        loop {
            let changed = self.log.changed.notified();
            tokio::pin!(changed);
            // Registered before looking, so a change between the look and the wait wakes us.
            changed.as_mut().enable();
            {
                let s = self.log.lock();
                if self.next < s.visible {
                    let frames = Bytes::copy_from_slice(&s.frames[self.next..s.visible]);
                    self.next = s.visible;
                    return Next::Frames(frames);
                }
                if let Some(end) = s.end {
                    return Next::End(end);
                }
            }
            changed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &'static str) -> &'static [u8] {
        s.as_bytes()
    }

    /// What a reader gets for these frames read together.
    fn frames(fs: &[&'static str]) -> Next {
        Next::Frames(Bytes::from(fs.concat()))
    }

    async fn next(r: &mut Reader) -> Next {
        tokio::time::timeout(std::time::Duration::from_secs(5), r.next()).await.unwrap()
    }

    fn pending(r: &mut Reader) -> bool {
        futures::FutureExt::now_or_never(r.next()).is_none()
    }

    #[tokio::test]
    async fn held_frames_and_all_after_them_wait_for_their_release() {
        let log = StreamLog::new();
        let mut r = log.reader();
        log.push(f("a"));
        let h = log.push_held(f("b"));
        log.push(f("c"));
        assert_eq!(next(&mut r).await, frames(&["a"]));
        assert!(pending(&mut r));
        log.release(h);
        assert_eq!(next(&mut r).await, frames(&["b", "c"]));
        log.finish(End::Finished);
        assert_eq!(next(&mut r).await, Next::End(End::Finished));
    }

    /// Byte offsets, not frame counts: frames of different lengths, a hold released while an
    /// older one still hides it, then the older one released.
    #[tokio::test]
    async fn holds_released_out_of_order_show_each_byte_once() {
        let log = StreamLog::new();
        let mut r = log.reader();
        log.push(f("a"));
        let older = log.push_held(f("bb"));
        log.push(f("ccc"));
        let newer = log.push_held(f("dddd"));
        log.push(f("eeeee"));
        assert_eq!(next(&mut r).await, Next::Frames(Bytes::from_static(b"a")));
        log.release(newer);
        assert!(pending(&mut r), "the older hold still hides everything after it");
        log.release(older);
        assert_eq!(next(&mut r).await, Next::Frames(Bytes::from_static(b"bbcccddddeeeee")));
        let third = log.push_held(f("ffffff"));
        log.push(f("g"));
        let mut resumed = log.reader();
        assert_eq!(next(&mut resumed).await, Next::Frames(Bytes::from_static(b"abbcccddddeeeee")));
        assert!(pending(&mut r));
        log.release(third);
        assert_eq!(next(&mut r).await, Next::Frames(Bytes::from_static(b"ffffffg")));
        assert_eq!(next(&mut resumed).await, Next::Frames(Bytes::from_static(b"ffffffg")));
        log.finish(End::Finished);
        assert_eq!(next(&mut r).await, Next::End(End::Finished));
    }

    #[tokio::test]
    async fn a_hold_before_any_frame_hides_the_start() {
        let log = StreamLog::new();
        let start = log.hold();
        log.push(f("a"));
        let b = log.push_held(f("b"));
        let mut r = log.reader();
        assert!(pending(&mut r));
        log.release(start);
        assert_eq!(next(&mut r).await, frames(&["a"]));
        log.release(b);
        assert_eq!(next(&mut r).await, frames(&["b"]));
    }

    #[tokio::test]
    async fn a_late_reader_gets_every_frame_once_then_the_end() {
        let log = StreamLog::new();
        log.push(f("a"));
        let mut first = log.reader();
        assert_eq!(next(&mut first).await, frames(&["a"]));
        log.push(f("b"));
        let mut resumed = log.reader();
        assert_eq!(next(&mut resumed).await, frames(&["a", "b"]));
        assert_eq!(next(&mut first).await, frames(&["b"]));
        log.finish(End::Finished);
        assert_eq!(next(&mut first).await, Next::End(End::Finished));
        assert_eq!(next(&mut resumed).await, Next::End(End::Finished));
    }

    #[tokio::test]
    async fn a_broken_stream_never_shows_what_was_held() {
        let log = StreamLog::new();
        log.push(f("a"));
        let _never = log.push_held(f("uncommitted"));
        log.finish(End::Broken);
        log.finish(End::Finished);
        log.push(f("after the end"));
        let mut r = log.reader();
        assert_eq!(next(&mut r).await, frames(&["a"]));
        assert_eq!(next(&mut r).await, Next::End(End::Broken));
    }

    #[tokio::test]
    async fn a_closing_log_ends_finished_only_once_every_hold_is_released() {
        let log = StreamLog::new();
        let mut r = log.reader();
        log.push(f("a"));
        let h = log.push_held(f("b"));
        log.push(f("c"));
        log.finish_when_released();
        assert_eq!(next(&mut r).await, frames(&["a"]));
        assert!(pending(&mut r), "the end must wait for the held frame's commit");
        log.release(h);
        assert_eq!(next(&mut r).await, frames(&["b", "c"]));
        assert_eq!(next(&mut r).await, Next::End(End::Finished));
        // Nothing held: it ends at once.
        let plain = StreamLog::new();
        plain.finish_when_released();
        assert_eq!(next(&mut plain.reader()).await, Next::End(End::Finished));
    }

    #[tokio::test]
    async fn a_closing_log_that_breaks_never_shows_what_was_held() {
        let log = StreamLog::new();
        log.push(f("a"));
        let _never = log.push_held(f("uncommitted"));
        log.finish_when_released();
        log.finish(End::Broken);
        let mut r = log.reader();
        assert_eq!(next(&mut r).await, frames(&["a"]));
        assert_eq!(next(&mut r).await, Next::End(End::Broken));
    }

    #[tokio::test]
    async fn nothing_is_appended_after_the_end() {
        let log = StreamLog::new();
        log.push(f("a"));
        log.finish(End::Broken);
        log.push(f("from a turn cancelled too late"));
        let mut r = log.reader();
        assert_eq!(next(&mut r).await, frames(&["a"]));
        assert_eq!(next(&mut r).await, Next::End(End::Broken));
    }

    /// The count starts at the log's creation, stops while a reader is open and starts again,
    /// from zero, when the last one goes. (Real time, short grace: a check that the watch has
    /// *not* resolved cannot be wrong on a slow machine, since the deadline is an instant; one
    /// that it has waits for it.)
    #[tokio::test]
    async fn a_log_is_unread_once_no_reader_was_open_for_the_grace() {
        let grace = Duration::from_millis(400);
        let resolves = |log: &Arc<StreamLog>, within: u64| {
            let log = log.clone();
            async move {
                tokio::time::timeout(Duration::from_millis(within), log.unread_for(grace))
                    .await
                    .is_ok()
            }
        };
        // Never read: unread once the grace has passed since the log was made.
        let log = StreamLog::new();
        let started = Instant::now();
        assert!(resolves(&log, 5000).await);
        assert!(started.elapsed() >= grace);
        // Read, then dropped, then read again within the grace: never unread while a reader
        // is open, however long; the grace counts from the last drop.
        let log = StreamLog::new();
        let first = log.reader();
        assert!(!resolves(&log, 1000).await, "a reader is open");
        drop(first);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let resumed = log.reader();
        let second = log.reader();
        drop(resumed);
        assert!(!resolves(&log, 1000).await, "the resume reattached within the grace");
        drop(second);
        let dropped = Instant::now();
        assert!(resolves(&log, 5000).await);
        assert!(dropped.elapsed() >= grace, "the grace counts from the last reader's drop");
    }

    #[tokio::test]
    async fn a_stop_asked_reaches_whoever_watches_for_it() {
        let log = StreamLog::new();
        let asked = log.stop_asked();
        tokio::pin!(asked);
        assert!(futures::FutureExt::now_or_never(asked.as_mut()).is_none());
        assert!(!log.stop_was_asked());
        log.ask_stop();
        log.ask_stop();
        assert!(log.stop_was_asked());
        tokio::time::timeout(Duration::from_secs(5), asked).await.unwrap();
    }

    #[tokio::test]
    async fn ended_waits_for_the_end_without_counting_as_a_reader() {
        let log = StreamLog::new();
        let h = log.push_held(f("a"));
        log.finish_when_released();
        let ended = log.ended();
        tokio::pin!(ended);
        assert!(
            futures::FutureExt::now_or_never(ended.as_mut()).is_none(),
            "a held frame keeps the end back"
        );
        assert_eq!(log.lock().readers, 0);
        log.release(h);
        assert_eq!(tokio::time::timeout(Duration::from_secs(5), ended).await.unwrap(), End::Finished);
    }

    #[tokio::test]
    async fn a_waiting_reader_is_woken_by_a_push_from_another_task() {
        let log = StreamLog::new();
        let mut r = log.reader();
        let writer = log.clone();
        let read = async move { next(&mut r).await };
        let (got, ()) = tokio::join!(read, async move {
            tokio::task::yield_now().await;
            writer.push(f("x"));
        });
        assert_eq!(got, frames(&["x"]));
    }
}
