//! Calendar tools over CalDAV: list calendars, events in a range (recurrences expanded with
//! their time zones by calcard), one event's details, create an event.
//!
//! Whatever cannot be handled faithfully (an unknown TZID, a floating time, a recurrence that
//! expands past the cap, an object that does not parse) becomes a warning in the result: the
//! model can then say "I could not read X" instead of quietly being wrong. An event's href
//! (`<calendar>/<object>.ics`) is its id for the other tools. A created event is read back and
//! reported as Nextcloud holds it; a difference fails the call as unconfirmed (never retried:
//! a second PUT would be a second event).

use calcard::common::timezone::Tz;
use calcard::common::{IanaString, PartialDateTime};
use calcard::icalendar::dates::TimeOrDelta;
use calcard::icalendar::{
    ICalendar, ICalendarComponent, ICalendarComponentType, ICalendarEntry, ICalendarParameter, ICalendarProperty, ICalendarValue,
    ICalendarValueType,
};
use chrono::{DateTime, Datelike, Timelike, Utc};
use futures::{StreamExt, TryStreamExt};
use mcp_resource_server::Caller;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::schemars::JsonSchema;
use rmcp::{tool, tool_router};
use serde::Serialize;

use super::args::{self, CalendarCreateArgs, CalendarEventGetArgs, CalendarEventsArgs, NoArgs, When};
use super::{Tools, app, input, output, visible_to};
use crate::apps;
use crate::error::Error;
use crate::nextcloud::paths::{self, UserPath};
use crate::nextcloud::{Session, dav, dav_headers, method};
use crate::output::Output;

/// The calendar tools: one `#[tool]` function each (see [`super`] for how to add one).
#[tool_router(router = calendar_router, vis = "pub(super)")]
impl Tools {
    #[tool(
        name = "calendar_list",
        title = "List calendars",
        description = "List the user's calendars with their id, name and color. The id is what `calendar` takes in the other calendar tools.",
        input_schema = input::<NoArgs>(),
        output_schema = output::<CalendarList>(),
        annotations(title = "List calendars", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
    )]
    async fn calendar_list(&self, caller: Caller, Parameters(_): Parameters<NoArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let calendars = calendars(s).await?;
        let text = calendars
            .iter()
            .map(|c| format!("- {} (id {})", c.name, c.id))
            .collect::<Vec<_>>()
            .join("\n");
        Output::new(format!("{} calendar(s):\n{text}", calendars.len()), &CalendarList { calendars })
    }

    #[tool(
        name = "calendar_events",
        title = "Events in a range",
        description = "Events between `from` and `to` (ISO dates or date-times; a date `to` includes that whole day), recurring events expanded. Times are UTC (RFC 3339) with the original time zone; anything that could not be handled is listed in `warnings`. Optional `calendar` limits to one calendar.",
        input_schema = input::<CalendarEventsArgs>(),
        output_schema = output::<EventList>(),
        annotations(title = "Events in a range", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        meta = app(apps::CALENDAR_WEEK),
    )]
    async fn calendar_events(&self, caller: Caller, Parameters(a): Parameters<CalendarEventsArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let from = When::parse(&a.from, "from")?.start_instant();
        let to = When::parse(&a.to, "to")?.end_instant();
        if to <= from {
            return Err(Error::invalid("to must be after from"));
        }
        if (to - from).num_days() > MAX_RANGE_DAYS {
            return Err(Error::invalid(format!(
                "the range is too long (at most {MAX_RANGE_DAYS} days); ask for smaller ranges"
            )));
        }
        let wanted = a.calendar.as_deref().map(|c| args::collection_id(c, "calendar")).transpose()?;
        // One named calendar is queried directly (one request); all of them need the list first.
        let selected: Vec<String> = match &wanted {
            Some(id) => vec![id.clone()],
            None => calendars(s).await?.into_iter().map(|c| c.id).collect(),
        };
        let body = dav::calendar_query(&ical_utc(from), &ical_utc(to));
        // The REPORTs run concurrently (at most REPORT_CONCURRENCY at a time); `buffered` hands the
        // answers back in calendar order, so events, warnings and the first error are exactly what
        // a sequential loop would give.
        let named = wanted.is_some();
        let answers: Vec<(String, Vec<dav::Entry>, Vec<String>)> = futures::stream::iter(selected)
            .map(|cal| report(s, cal, &body, named))
            .buffered(REPORT_CONCURRENCY)
            .try_collect()
            .await?;
        let mut events = Vec::new();
        let mut warnings = Vec::new();
        for (cal, found, prefix) in &answers {
            for e in found {
                let Some(data) = e.prop(dav::CALDAV, "calendar-data") else {
                    continue;
                };
                let object = paths::strip_prefix(&e.href, prefix)
                    .and_then(|r| r.last().cloned())
                    .unwrap_or_default();
                let href = format!("{cal}/{object}");
                occurrences(data, cal, &href, from, to, &mut events, &mut warnings);
            }
        }
        events.sort_by(|a, b| a.start.cmp(&b.start).then_with(|| a.title.cmp(&b.title)));
        let mut text = format!("{} event(s) from {} to {}:", events.len(), rfc3339(from), rfc3339(to));
        for ev in &events {
            text.push_str(&format!("\n- {} to {}: {} [{}]", ev.start, ev.end, ev.title, ev.href));
        }
        for w in &warnings {
            text.push_str(&format!("\nWarning: {w}"));
        }
        Output::new(
            text,
            &EventList {
                from: rfc3339(from),
                to: rfc3339(to),
                events,
                warnings,
            },
        )
    }

    #[tool(
        name = "calendar_event_get",
        title = "Event details",
        description = "One event's details by the `href` returned by calendar_events.",
        input_schema = input::<CalendarEventGetArgs>(),
        output_schema = output::<EventDetails>(),
        annotations(title = "Event details", read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false),
        meta = visible_to(&["model", "app"]),
    )]
    async fn calendar_event_get(&self, caller: Caller, Parameters(a): Parameters<CalendarEventGetArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let (cal, obj) = event_href(&a.href)?;
        let url = s.url(["remote.php", "dav", "calendars", s.uid(), cal.as_str(), obj.as_str()]);
        let data = s.send_text(s.request(http::Method::GET, url), "reading the event").await?;
        let href = format!("{cal}/{obj}");
        let details = details(&data, &cal, &href)?;
        let mut text = format!(
            "{}\nwhen: {} to {}",
            details.title,
            details.start.as_deref().unwrap_or("?"),
            details.end.as_deref().unwrap_or("?")
        );
        if let Some(l) = &details.location {
            text.push_str(&format!("\nwhere: {l}"));
        }
        if let Some(r) = &details.recurrence {
            text.push_str(&format!("\nrepeats: {r}"));
        }
        if let Some(d) = &details.description {
            text.push_str(&format!("\n\n{d}"));
        }
        Output::new(text, &details)
    }

    #[tool(
        name = "calendar_create_event",
        title = "Create an event",
        description = "Create an event in one of the user's calendars. `start` and `end` are ISO date-times (with offset, or UTC) or, for an all-day event, dates.",
        input_schema = input::<CalendarCreateArgs>(),
        output_schema = output::<Created>(),
        annotations(title = "Create an event", read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false),
    )]
    async fn calendar_create_event(&self, caller: Caller, Parameters(a): Parameters<CalendarCreateArgs>) -> Result<Output, Error> {
        let s = &self.session(&caller);
        let calendar = args::collection_id(&a.calendar, "calendar")?;
        let title = args::title(&a.title, "title", 255)?;
        let location = args::optional_text(a.location.as_deref(), "location", 255)?;
        let description = args::optional_text(a.description.as_deref(), "description", 10_000)?;
        let start = When::parse(&a.start, "start")?;
        let end = When::parse(&a.end, "end")?;
        let all_day = match (start, end) {
            (When::Date(_), When::Date(_)) => true,
            (When::DateTime(_), When::DateTime(_)) => false,
            _ => return Err(Error::invalid("start and end must both be dates (all-day) or both date-times")),
        };
        // For all-day events the end date is inclusive for people and exclusive in iCalendar.
        let (start_i, end_i, end) = match (start, end) {
            (When::Date(a), When::Date(b)) => {
                if b < a {
                    return Err(Error::invalid("end must not be before start"));
                }
                let excl = b.succ_opt().unwrap_or(b);
                (start.start_instant(), When::Date(excl).start_instant(), When::Date(excl))
            }
            _ => (start.start_instant(), end.start_instant(), end),
        };
        if end_i <= start_i {
            return Err(Error::invalid("end must be after start"));
        }
        known_calendar(s, &calendar).await?;
        let uid = uuid::Uuid::new_v4().to_string();
        let object = format!("{uid}.ics");
        let ics = build_event(&uid, &title, start, end, location.as_deref(), description.as_deref(), Utc::now());
        let url = s.url(["remote.php", "dav", "calendars", s.uid(), calendar.as_str(), object.as_str()]);
        let request = s
            .request(http::Method::PUT, url)
            .header(http::header::CONTENT_TYPE, "text/calendar; charset=utf-8")
            .header(http::header::IF_NONE_MATCH, "*")
            .body(ics);
        // Each call makes a new UID, so sending it again would make a second event: a lost
        // answer is unconfirmed, never retryable (issue 32).
        s.send_once(request, "creating the event").await?;
        let href = format!("{calendar}/{object}");
        // Read the event back: its UID, title and times as Nextcloud holds them now.
        let did = format!("Nextcloud accepted creating the event [{href}]");
        let url = s.url(["remote.php", "dav", "calendars", s.uid(), calendar.as_str(), object.as_str()]);
        let held = match s.send_text(s.request(http::Method::GET, url), "reading the event back").await {
            Ok(data) => details(&data, &calendar, &href).map_err(|e| Error::unconfirmed(&did, e))?,
            Err(Error::NotFound) => return Err(Error::Unconfirmed(format!("{did}, but there is no such event now"))),
            Err(e) => return Err(Error::unconfirmed(&did, e)),
        };
        let (want_start, want_end) = (rfc3339(start_i), rfc3339(end_i));
        if held.uid.as_deref() != Some(uid.as_str())
            || held.title != title
            || held.start.as_deref() != Some(want_start.as_str())
            || held.end.as_deref() != Some(want_end.as_str())
        {
            return Err(Error::Unconfirmed(format!(
                "{did}, but it holds another event now: \"{}\" from {} to {}",
                held.title,
                held.start.as_deref().unwrap_or("?"),
                held.end.as_deref().unwrap_or("?")
            )));
        }
        let created = Created {
            href: href.clone(),
            uid,
            calendar,
            title,
            start: want_start,
            end: want_end,
            all_day,
        };
        Output::new(
            format!("Created \"{}\" from {} to {} [{href}].", created.title, created.start, created.end),
            &created,
        )
    }
}

/// Occurrences expanded per calendar object at most; more is a warning.
pub const MAX_OCCURRENCES: usize = 5000;
/// The longest range calendar_events accepts.
const MAX_RANGE_DAYS: i64 = 400;

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CalendarInfo {
    /// The id other calendar tools take (`calendar`).
    pub id: String,
    pub name: String,
    pub color: Option<String>,
    pub description: Option<String>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CalendarList {
    pub calendars: Vec<CalendarInfo>,
}

#[derive(Clone, Debug, Serialize, JsonSchema, PartialEq)]
#[schemars(crate = "rmcp::schemars")]
pub struct Occurrence {
    pub title: String,
    /// Start, RFC 3339 UTC.
    pub start: String,
    /// End, RFC 3339 UTC.
    pub end: String,
    pub all_day: bool,
    /// The event's original time zone (TZID), if it had one.
    pub tzid: Option<String>,
    pub location: Option<String>,
    pub description: Option<String>,
    /// Calendar id.
    pub calendar: String,
    /// `<calendar>/<object>.ics`: what calendar_event_get takes.
    pub href: String,
    pub uid: Option<String>,
    pub recurring: bool,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct EventList {
    pub from: String,
    pub to: String,
    pub events: Vec<Occurrence>,
    /// What could not be handled faithfully.
    pub warnings: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct EventDetails {
    pub href: String,
    pub calendar: String,
    pub uid: Option<String>,
    pub title: String,
    /// First occurrence start, RFC 3339 UTC.
    pub start: Option<String>,
    pub end: Option<String>,
    pub all_day: bool,
    pub tzid: Option<String>,
    pub location: Option<String>,
    pub description: Option<String>,
    /// The recurrence rule as written (RRULE), if any.
    pub recurrence: Option<String>,
    pub status: Option<String>,
    pub organizer: Option<String>,
    pub attendees: Vec<String>,
    pub warnings: Vec<String>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Created {
    pub href: String,
    pub uid: String,
    pub calendar: String,
    pub title: String,
    pub start: String,
    pub end: String,
    pub all_day: bool,
}

/// The caller's calendars, from one PROPFIND on their calendar home.
async fn calendars(s: &Session<'_>) -> Result<Vec<CalendarInfo>, Error> {
    let home = s.url(["remote.php", "dav", "calendars", s.uid(), ""]);
    let request = s
        .request(method("PROPFIND"), home.clone())
        .headers(dav_headers(Some("1")))
        .body(dav::propfind_collections());
    let found = s.multistatus(request, "listing calendars").await?;
    let prefix = paths::url_segments(&home);
    let mut out: Vec<CalendarInfo> = found
        .iter()
        .filter(|e| e.is_type(dav::CALDAV, "calendar"))
        .filter_map(|e| {
            let rest = paths::strip_prefix(&e.href, &prefix)?;
            let [id] = rest.as_slice() else { return None };
            Some(CalendarInfo {
                id: id.clone(),
                name: e.prop(dav::DAV, "displayname").unwrap_or(id).to_string(),
                color: e.prop(dav::APPLE, "calendar-color").map(str::to_string),
                description: e.prop(dav::CALDAV, "calendar-description").map(str::to_string),
            })
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// The calendar named `id`, or `invalid_argument` listing the ones that exist.
async fn known_calendar(s: &Session<'_>, id: &str) -> Result<CalendarInfo, Error> {
    let all = calendars(s).await?;
    all.iter().find(|c| c.id == id).cloned().ok_or_else(|| {
        let ids: Vec<&str> = all.iter().map(|c| c.id.as_str()).collect();
        Error::invalid(format!("unknown calendar {id:?}; your calendars are: {}", ids.join(", ")))
    })
}

fn ical_utc(t: DateTime<Utc>) -> String {
    t.format("%Y%m%dT%H%M%SZ").to_string()
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// How many calendars' REPORTs run at once when no calendar is named.
const REPORT_CONCURRENCY: usize = 4;

/// One calendar's time-range REPORT: the calendar, its entries and the URL prefix of their hrefs.
async fn report(s: &Session<'_>, cal: String, body: &str, named: bool) -> Result<(String, Vec<dav::Entry>, Vec<String>), Error> {
    let url = s.url(["remote.php", "dav", "calendars", s.uid(), cal.as_str(), ""]);
    let request = s
        .request(method("REPORT"), url.clone())
        .headers(dav_headers(Some("1")))
        .body(body.to_string());
    let found = match s.multistatus(request, "reading the calendar").await {
        // The caller's own calendar path is missing: say which calendars exist instead.
        Err(Error::NotFound) if named => return Err(known_calendar(s, &cal).await.err().unwrap_or(Error::NotFound)),
        other => other?,
    };
    Ok((cal, found, paths::url_segments(&url)))
}

fn text_prop(comp: &ICalendarComponent, prop: ICalendarProperty) -> Option<String> {
    comp.property(&prop)
        .and_then(|e| e.values.first())
        .and_then(|v| v.as_text())
        .map(str::to_string)
        .filter(|s| !s.is_empty())
}

fn date_entry(comp: &ICalendarComponent, prop: ICalendarProperty) -> Option<(&ICalendarEntry, &PartialDateTime)> {
    let entry = comp.property(&prop)?;
    match entry.values.first() {
        Some(ICalendarValue::PartialDateTime(dt)) => Some((entry, dt.as_ref())),
        _ => None,
    }
}

/// Expands one calendar object into the occurrences overlapping `[from, to)`. Pure: tested
/// without a server.
pub fn occurrences(
    data: &str,
    calendar: &str,
    href: &str,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    out: &mut Vec<Occurrence>,
    warnings: &mut Vec<String>,
) {
    let ical = match ICalendar::parse(data) {
        Ok(i) => i,
        Err(_) => {
            warnings.push(format!("{href}: the event could not be parsed and was skipped"));
            return;
        }
    };
    let resolver = ical.build_tz_resolver();
    let mut tz_problem = false;
    for comp in ical
        .components
        .iter()
        .filter(|c| c.component_type == ICalendarComponentType::VEvent)
    {
        for prop in [ICalendarProperty::Dtstart, ICalendarProperty::Dtend] {
            let Some((entry, dt)) = date_entry(comp, prop) else { continue };
            match entry.tz_id() {
                Some(tz) if resolver.resolve(tz).is_none() => {
                    if !tz_problem {
                        warnings.push(format!(
                            "{href}: unknown time zone {tz:?}; its times were read as UTC and may be wrong"
                        ));
                    }
                    tz_problem = true;
                }
                None if dt.has_time() && !dt.has_zone() && !tz_problem => {
                    warnings.push(format!("{href}: floating time without a time zone; read as UTC"));
                    tz_problem = true;
                }
                _ => {}
            }
        }
    }
    let expanded = ical.expand_dates(Tz::UTC, MAX_OCCURRENCES);
    for err in &expanded.errors {
        warnings.push(format!("{href}: part of the event could not be expanded ({:?})", err.error));
    }
    if expanded.events.len() >= MAX_OCCURRENCES {
        warnings.push(format!(
            "{href}: the recurrence has more than {MAX_OCCURRENCES} occurrences; later ones may be missing"
        ));
    }
    // calcard's limit is not exact (a recurrence's extra dates come on top: the icalendar fuzz
    // target saw 5,002), so the bound is held here.
    for ev in expanded.events.iter().take(MAX_OCCURRENCES) {
        let Some(comp) = ical.component_by_id(ev.comp_id) else { continue };
        if comp.component_type != ICalendarComponentType::VEvent {
            continue;
        }
        let start = ev.start.with_timezone(&Utc);
        let end = match ev.end {
            TimeOrDelta::Time(t) => t.with_timezone(&Utc),
            TimeOrDelta::Delta(d) => start + d,
        };
        let overlaps = if end > start {
            start < to && end > from
        } else {
            start >= from && start < to
        };
        if !overlaps {
            continue;
        }
        let dtstart = date_entry(comp, ICalendarProperty::Dtstart);
        out.push(Occurrence {
            title: text_prop(comp, ICalendarProperty::Summary).unwrap_or_else(|| "(no title)".into()),
            start: rfc3339(start),
            end: rfc3339(end),
            all_day: dtstart.is_some_and(|(_, dt)| !dt.has_time()),
            tzid: dtstart.and_then(|(e, _)| e.tz_id()).map(str::to_string),
            location: text_prop(comp, ICalendarProperty::Location),
            description: text_prop(comp, ICalendarProperty::Description),
            calendar: calendar.to_string(),
            href: href.to_string(),
            uid: comp.uid().map(str::to_string),
            recurring: comp.is_recurrent_or_override(),
        });
    }
}

/// Splits and checks an event href `<calendar>/<object>`.
fn event_href(raw: &str) -> Result<(String, String), Error> {
    let p = UserPath::parse_item(raw, "href")?;
    match p.segments() {
        [cal, obj] => Ok((args::collection_id(cal, "href")?, obj.clone())),
        _ => Err(Error::invalid(
            "href must be '<calendar>/<object>.ics' as returned by calendar_events",
        )),
    }
}

/// The details of the first (master) event in an object. Pure.
pub fn details(data: &str, calendar: &str, href: &str) -> Result<EventDetails, Error> {
    let ical = ICalendar::parse(data).map_err(|_| Error::Retryable(format!("{href}: the event could not be parsed")))?;
    let Some(comp) = ical
        .components
        .iter()
        .find(|c| c.component_type == ICalendarComponentType::VEvent && !c.is_recurrence_override())
    else {
        return Err(Error::NotFound);
    };
    let mut warnings = Vec::new();
    let mut first = Vec::new();
    let far = DateTime::<Utc>::MAX_UTC;
    occurrences(data, calendar, href, DateTime::<Utc>::MIN_UTC, far, &mut first, &mut warnings);
    let first = first.into_iter().min_by(|a, b| a.start.cmp(&b.start));
    let people = |prop: ICalendarProperty| -> Vec<String> {
        comp.properties(&prop)
            .filter_map(|e| e.values.first().and_then(|v| v.as_text()))
            .map(|v| calcard::icalendar::utils::strip_mailto_scheme(v).to_string())
            .collect()
    };
    Ok(EventDetails {
        href: href.to_string(),
        calendar: calendar.to_string(),
        uid: comp.uid().map(str::to_string),
        title: text_prop(comp, ICalendarProperty::Summary).unwrap_or_else(|| "(no title)".into()),
        start: first.as_ref().map(|o| o.start.clone()),
        end: first.as_ref().map(|o| o.end.clone()),
        all_day: first.as_ref().is_some_and(|o| o.all_day),
        tzid: first.as_ref().and_then(|o| o.tzid.clone()),
        location: text_prop(comp, ICalendarProperty::Location),
        description: text_prop(comp, ICalendarProperty::Description),
        recurrence: rrule_text(comp),
        status: comp.status().map(|s| s.as_str().to_string()),
        organizer: people(ICalendarProperty::Organizer).into_iter().next(),
        attendees: people(ICalendarProperty::Attendee),
        warnings,
    })
}

/// The event's RRULE, rendered by calcard (only the event's own, never a VTIMEZONE's).
fn rrule_text(comp: &ICalendarComponent) -> Option<String> {
    comp.properties(&ICalendarProperty::Rrule).find_map(|e| match e.values.first() {
        Some(ICalendarValue::RecurrenceRule(rule)) => Some(rule.to_string()),
        _ => None,
    })
}

fn partial(t: DateTime<Utc>) -> PartialDateTime {
    PartialDateTime::from_utc_timestamp(t.timestamp())
}

fn date_only(d: chrono::NaiveDate) -> PartialDateTime {
    PartialDateTime {
        year: u16::try_from(d.year()).ok(),
        month: u8::try_from(d.month()).ok(),
        day: u8::try_from(d.day()).ok(),
        ..Default::default()
    }
}

/// Builds the iCalendar text of a new event with calcard's writer. Pure.
pub fn build_event(
    uid: &str,
    title: &str,
    start: When,
    end: When,
    location: Option<&str>,
    description: Option<&str>,
    now: DateTime<Utc>,
) -> String {
    let mut vcal = ICalendarComponent::new(ICalendarComponentType::VCalendar);
    vcal.add_property(ICalendarProperty::Version, ICalendarValue::Text("2.0".into()));
    vcal.add_property(
        ICalendarProperty::Prodid,
        ICalendarValue::Text("-//Tamebi//mcp-nextcloud//EN".into()),
    );
    vcal.component_ids = vec![1];
    let mut ev = ICalendarComponent::new(ICalendarComponentType::VEvent);
    ev.add_uid(uid);
    ev.add_dtstamp(partial(now.with_nanosecond(0).unwrap_or(now)));
    for (prop, when) in [(ICalendarProperty::Dtstart, start), (ICalendarProperty::Dtend, end)] {
        match when {
            When::Date(d) => ev.add_property_with_params(prop, [ICalendarParameter::value(ICalendarValueType::Date)], date_only(d)),
            When::DateTime(t) => ev.add_property(prop, partial(t)),
        }
    }
    ev.add_property(ICalendarProperty::Summary, ICalendarValue::Text(title.into()));
    if let Some(l) = location {
        ev.add_property(ICalendarProperty::Location, ICalendarValue::Text(l.into()));
    }
    if let Some(d) = description {
        ev.add_property(ICalendarProperty::Description, ICalendarValue::Text(d.into()));
    }
    ICalendar {
        components: vec![vcal, ev],
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEEKLY_PARIS: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\nUID:weekly@test\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;TZID=Europe/Paris:20260305T090000\r\nDTEND;TZID=Europe/Paris:20260305T100000\r\nRRULE:FREQ=WEEKLY;COUNT=6\r\nSUMMARY:Standup\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn occurrences_stay_within_their_bound_when_the_expansion_overshoots() {
        // Found by the icalendar fuzz target: a daily rule beside overriding instances came
        // back from calcard with 5,002 occurrences for a limit of 5,000.
        let seed = include_bytes!("../../fuzz/seeds/icalendar/occurrences-over-the-bound.ics.bin");
        let text = std::str::from_utf8(&seed[1..]).unwrap();
        let (mut out, mut warn) = (Vec::new(), Vec::new());
        occurrences(
            text,
            "personal",
            "personal/a.ics",
            t("2000-01-01T00:00:00Z"),
            t("2040-01-01T00:00:00Z"),
            &mut out,
            &mut warn,
        );
        assert_eq!(out.len(), MAX_OCCURRENCES);
        assert!(warn.iter().any(|w| w.contains("more than 5000 occurrences")), "{warn:?}");
    }

    #[test]
    fn weekly_paris_across_the_dst_change() {
        let (mut out, mut warn) = (Vec::new(), Vec::new());
        occurrences(
            WEEKLY_PARIS,
            "personal",
            "personal/w.ics",
            t("2026-03-10T00:00:00Z"),
            t("2026-04-05T00:00:00Z"),
            &mut out,
            &mut warn,
        );
        let starts: Vec<&str> = out.iter().map(|o| o.start.as_str()).collect();
        // 9:00 Paris is 08:00Z in winter (CET) and 07:00Z after 2026-03-29 (CEST).
        assert_eq!(
            starts,
            [
                "2026-03-12T08:00:00Z",
                "2026-03-19T08:00:00Z",
                "2026-03-26T08:00:00Z",
                "2026-04-02T07:00:00Z"
            ]
        );
        assert!(warn.is_empty(), "{warn:?}");
        assert_eq!(out[0].tzid.as_deref(), Some("Europe/Paris"));
        assert_eq!(out[0].end, "2026-03-12T09:00:00Z");
        assert!(out[0].recurring);
    }

    #[test]
    fn unknown_zone_and_garbage_are_warnings() {
        let (mut out, mut warn) = (Vec::new(), Vec::new());
        let bad_tz = WEEKLY_PARIS.replace("Europe/Paris", "Mars/Olympus");
        occurrences(
            &bad_tz,
            "c",
            "c/x.ics",
            t("2026-03-01T00:00:00Z"),
            t("2026-03-08T00:00:00Z"),
            &mut out,
            &mut warn,
        );
        assert!(warn.iter().any(|w| w.contains("unknown time zone")), "{warn:?}");
        occurrences(
            "not ical",
            "c",
            "c/y.ics",
            t("2026-03-01T00:00:00Z"),
            t("2026-03-08T00:00:00Z"),
            &mut out,
            &mut warn,
        );
        assert!(warn.iter().any(|w| w.contains("c/y.ics") && w.contains("parsed")), "{warn:?}");
    }

    #[test]
    fn endless_daily_rule_warns_when_capped() {
        let daily = WEEKLY_PARIS
            .replace("FREQ=WEEKLY;COUNT=6", "FREQ=MINUTELY")
            .replace("20260305", "20260101");
        let (mut out, mut warn) = (Vec::new(), Vec::new());
        occurrences(
            &daily,
            "c",
            "c/d.ics",
            t("2026-12-01T00:00:00Z"),
            t("2026-12-02T00:00:00Z"),
            &mut out,
            &mut warn,
        );
        assert!(warn.iter().any(|w| w.contains("occurrences")), "{warn:?}");
    }

    #[test]
    fn built_event_round_trips() {
        let ics = build_event(
            "u1",
            "Lunch; with, Bob",
            When::parse("2026-02-03T12:00:00Z", "s").unwrap(),
            When::parse("2026-02-03T13:30:00Z", "e").unwrap(),
            Some("Café"),
            None,
            t("2026-01-01T00:00:00Z"),
        );
        let d = details(&ics, "personal", "personal/u1.ics").unwrap();
        assert_eq!(d.title, "Lunch; with, Bob");
        assert_eq!(d.start.as_deref(), Some("2026-02-03T12:00:00Z"));
        assert_eq!(d.end.as_deref(), Some("2026-02-03T13:30:00Z"));
        assert_eq!(d.location.as_deref(), Some("Café"));
        let all_day = build_event(
            "u2",
            "Off",
            When::parse("2026-02-03", "s").unwrap(),
            When::parse("2026-02-04", "e").unwrap(),
            None,
            None,
            t("2026-01-01T00:00:00Z"),
        );
        assert!(all_day.contains("DTSTART;VALUE=DATE:20260203"), "{all_day}");
        assert!(details(&all_day, "p", "p/u2.ics").unwrap().all_day);
    }
}
