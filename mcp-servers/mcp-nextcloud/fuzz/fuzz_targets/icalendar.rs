//! iCalendar handling: a calendar object from Nextcloud as calendar_events and
//! calendar_event_get read it (`tools::calendar::occurrences` over a window, with recurrence
//! expansion, and `details`), and the event calendar_create writes (`build_event`) read back.
//!
//! Input: a first byte picks the mode. 0: the rest is the text of an event to create (title,
//! location and description split at NUL), written and read back: the title comes back as
//! given (without control characters) and no property can be smuggled in (no attendee, no
//! organizer, one event). Otherwise the bytes are an object as a server sends it; properties:
//! nothing panics, expansion stays within its bound of occurrences.
#![no_main]

use chrono::{DateTime, TimeZone, Utc};
use libfuzzer_sys::fuzz_target;
use mcp_nextcloud::tools::args::When;
use mcp_nextcloud::tools::calendar::{self, MAX_OCCURRENCES};

fn created(text: &str) {
    let mut parts = text.split('\0');
    let title = parts.next().unwrap_or("");
    let location = parts.next();
    let description = parts.next();
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).single().expect("a valid time");
    let start = When::DateTime(now);
    let end = When::DateTime(now + chrono::Duration::hours(1));
    let ics = calendar::build_event("uid-1@tamebi", title, start, end, location, description, now);
    let read = calendar::details(&ics, "personal", "personal/uid-1.ics").expect("a created event reads back");
    let clean = |s: &str| s.chars().filter(|c| !c.is_control()).collect::<String>();
    if !title.chars().any(char::is_control) && !title.is_empty() {
        assert_eq!(clean(&read.title), title, "{ics}");
    }
    assert!(
        read.attendees.is_empty() && read.organizer.is_none(),
        "a property was smuggled in: {ics}"
    );
    assert_eq!(read.uid.as_deref(), Some("uid-1@tamebi"));
}

fn received(text: &str) {
    let from: DateTime<Utc> = Utc.with_ymd_and_hms(2000, 1, 1, 0, 0, 0).single().expect("a valid time");
    let to: DateTime<Utc> = Utc.with_ymd_and_hms(2040, 1, 1, 0, 0, 0).single().expect("a valid time");
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    calendar::occurrences(text, "personal", "personal/a.ics", from, to, &mut out, &mut warnings);
    assert!(out.len() <= MAX_OCCURRENCES + 1, "{} occurrences", out.len());
    let _ = calendar::details(text, "personal", "personal/a.ics");
}

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    if *mode == 0 {
        created(text);
    } else {
        received(text);
    }
});
