//! Calendar tools end to end: list, range query with a recurring TZID event expanded to UTC,
//! event details, creating an event; bob never sees alice's calendar.

mod common;

use common::{Env, call, err_kind, ok};
use serde_json::json;

const PARIS_WEEKLY: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//tamebi//test//EN\r\n\
BEGIN:VTIMEZONE\r\nTZID:Europe/Paris\r\n\
BEGIN:DAYLIGHT\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\nTZNAME:CEST\r\nDTSTART:19700329T020000\r\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\r\nEND:DAYLIGHT\r\n\
BEGIN:STANDARD\r\nTZOFFSETFROM:+0200\r\nTZOFFSETTO:+0100\r\nTZNAME:CET\r\nDTSTART:19701025T030000\r\nRRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\r\nEND:STANDARD\r\n\
END:VTIMEZONE\r\n\
BEGIN:VEVENT\r\nUID:weekly-paris@test\r\nDTSTAMP:20260101T000000Z\r\n\
DTSTART;TZID=Europe/Paris:20260305T090000\r\nDTEND;TZID=Europe/Paris:20260305T100000\r\n\
RRULE:FREQ=WEEKLY;COUNT=10\r\nSUMMARY:Paris standup\r\nLOCATION:Room 4\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

#[expect(clippy::unwrap_used, reason = "test helper")]
fn titles(v: &serde_json::Value) -> Vec<String> {
    v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["title"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn range_queries_recurrence_and_isolation() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let bob = env.client("bob").await;

    let cals = call(&alice, "calendar_list", json!({})).await;
    assert!(
        ok(&cals)["calendars"].as_array().unwrap().iter().any(|c| c["id"] == "personal"),
        "{}",
        ok(&cals)
    );

    let jan = call(&alice, "calendar_events", json!({"from": "2026-01-01", "to": "2026-01-31"})).await;
    let v = ok(&jan);
    let q = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["title"] == "Quarterly planning")
        .expect("seed event")
        .clone();
    assert_eq!(q["start"], "2026-01-15T10:00:00Z");
    assert_eq!(q["end"], "2026-01-15T11:00:00Z");
    assert_eq!(q["calendar"], "personal");
    let href = q["href"].as_str().unwrap().to_string();
    assert!(href.starts_with("personal/"), "{href}");

    let bob_jan = call(&bob, "calendar_events", json!({"from": "2026-01-01", "to": "2026-01-31"})).await;
    assert!(!titles(ok(&bob_jan)).contains(&"Quarterly planning".to_string()));
    // The href names alice's object, but in bob's namespace it is not his: not found.
    let bob_get = call(&bob, "calendar_event_get", json!({"href": href})).await;
    assert_eq!(err_kind(&bob_get), "not_found");

    // A weekly event at 09:00 Paris time, across the switch to summer time (2026-03-29).
    let put = env
        .nc_http()
        .put(format!("{}/remote.php/dav/calendars/alice/personal/weekly-paris.ics", env.nc.url()))
        .header("Authorization", env.nc.bearer("alice"))
        .header("Content-Type", "text/calendar; charset=utf-8")
        .body(PARIS_WEEKLY)
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "{}", put.status());
    let spring = call(
        &alice,
        "calendar_events",
        json!({"from": "2026-03-20", "to": "2026-04-05T00:00:00Z", "calendar": "personal"}),
    )
    .await;
    let v = ok(&spring);
    let occ: Vec<(String, String)> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["title"] == "Paris standup")
        .map(|e| {
            (
                e["start"].as_str().unwrap().to_string(),
                e["tzid"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        occ,
        [
            ("2026-03-26T08:00:00Z".to_string(), "Europe/Paris".to_string()),
            ("2026-04-02T07:00:00Z".to_string(), "Europe/Paris".to_string())
        ],
        "{v}"
    );
    assert!(v["warnings"].as_array().unwrap().is_empty(), "{v}");

    let details = call(&alice, "calendar_event_get", json!({"href": "personal/weekly-paris.ics"})).await;
    let d = ok(&details);
    assert_eq!(d["recurrence"], "FREQ=WEEKLY;COUNT=10");
    assert_eq!(d["start"], "2026-03-05T08:00:00Z");
    assert_eq!(d["location"], "Room 4");
}

#[tokio::test(flavor = "multi_thread")]
async fn create_event_then_find_it() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let created = call(
        &alice,
        "calendar_create_event",
        json!({"calendar": "personal", "title": "Budget review", "start": "2026-02-10T14:00:00+01:00", "end": "2026-02-10T15:00:00+01:00", "location": "Online"}),
    )
    .await;
    let c = ok(&created);
    assert_eq!(c["start"], "2026-02-10T13:00:00Z");
    let href = c["href"].as_str().unwrap();
    let feb = call(&alice, "calendar_events", json!({"from": "2026-02-10", "to": "2026-02-10"})).await;
    let ev = ok(&feb)["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["href"] == href)
        .expect("created event listed")
        .clone();
    assert_eq!(ev["title"], "Budget review");
    assert_eq!(ev["end"], "2026-02-10T14:00:00Z");
    assert_eq!(ev["location"], "Online");

    let all_day = call(
        &alice,
        "calendar_create_event",
        json!({"calendar": "personal", "title": "Offsite", "start": "2026-02-12", "end": "2026-02-13"}),
    )
    .await;
    assert_eq!(ok(&all_day)["end"], "2026-02-14T00:00:00Z");
    let days = call(&alice, "calendar_events", json!({"from": "2026-02-13", "to": "2026-02-13"})).await;
    let off = ok(&days)["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["title"] == "Offsite")
        .expect("all-day event")
        .clone();
    assert_eq!(off["all_day"], true);
}

/// Without a named calendar the REPORTs run concurrently; the answer must be exactly what
/// asking each calendar in turn gives: warnings in calendar order, events sorted.
#[tokio::test(flavor = "multi_thread")]
async fn all_calendars_at_once_equals_one_by_one() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let http = env.nc_http();
    let mk = r#"<?xml version="1.0" encoding="utf-8"?><c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:set><d:prop><d:displayname>Extra</d:displayname></d:prop></d:set></c:mkcalendar>"#;
    // Seven more calendars (more than run at once), each with a floating-time event (a
    // warning naming it) and an event at the same instant as the others (ties on start).
    for i in 0..7 {
        let base = format!("{}/remote.php/dav/calendars/alice/extra-{i}/", env.nc.url());
        let r = http
            .request(reqwest::Method::from_bytes(b"MKCALENDAR").unwrap(), &base)
            .header("Authorization", env.nc.bearer("alice"))
            .body(mk)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "MKCALENDAR {i}: {}", r.status());
        for (name, start) in [("floating", "20260110T090000"), ("tie", "20260112T090000Z")] {
            let ics = format!(
                "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//tamebi//test//EN\r\nBEGIN:VEVENT\r\nUID:{name}-{i}@test\r\n\
                 DTSTAMP:20260101T000000Z\r\nDTSTART:{start}\r\nDURATION:PT1H\r\nSUMMARY:{name} {i}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
            );
            let r = http
                .put(format!("{base}{name}.ics"))
                .header("Authorization", env.nc.bearer("alice"))
                .header("Content-Type", "text/calendar; charset=utf-8")
                .body(ics)
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "PUT {name} {i}: {}", r.status());
        }
    }
    let range = json!({"from": "2026-01-01", "to": "2026-01-31"});
    let all = call(&alice, "calendar_events", range.clone()).await;
    let all = ok(&all);

    let listed = call(&alice, "calendar_list", json!({})).await;
    let ids: Vec<String> = ok(&listed)["calendars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 8, "{ids:?}");
    let mut events = Vec::new();
    let mut warnings = Vec::new();
    for id in &ids {
        let mut args = range.clone();
        args["calendar"] = json!(id);
        let one = call(&alice, "calendar_events", args).await;
        let one = ok(&one);
        events.extend(one["events"].as_array().unwrap().iter().cloned());
        warnings.extend(one["warnings"].as_array().unwrap().iter().cloned());
    }
    // The tool's own order: by start, then title (stable, so ties keep calendar order).
    events.sort_by(|a, b| {
        a["start"]
            .as_str()
            .cmp(&b["start"].as_str())
            .then_with(|| a["title"].as_str().cmp(&b["title"].as_str()))
    });
    assert_eq!(all["events"].as_array().unwrap(), &events);
    assert_eq!(all["warnings"].as_array().unwrap(), &warnings);
    assert_eq!(warnings.len(), 7, "{warnings:?}");
}
