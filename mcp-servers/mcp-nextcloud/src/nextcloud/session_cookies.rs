//! Nextcloud's session cookies, reused for the bearer that obtained them and for no other.
//!
//! Every cookie-less bearer request makes Nextcloud log the user in from scratch (about 300 ms
//! for an OIDC JWT on Nextcloud 31) and open a session; a request that carries that session's
//! cookies skips the login. This module keeps, in memory only, a map from HMAC-SHA256(bearer)
//! under a key drawn at process start to the cookies Nextcloud set for that bearer:
//!
//! - a request can only find the slot its own bearer hashes to, so another bearer never
//!   reaches it (Nextcloud trusts a live session over the `Authorization` header sent with it:
//!   `OC::handleRequest`, `ocs/v1.php` and the DAV auth plugin take the session's user and never
//!   look at the header; handing one user's cookie to another request would act as the first);
//! - a slot expires no later than its bearer: a JWT's `exp` (read unverified, used only to
//!   shorten), at most [`MAX_TTL`]; an opaque token after [`OPAQUE_TTL`]; a cookie's own
//!   `Max-Age`/`Expires` shortens it further. It is never extended: when it ends the next
//!   request logs in again, so Nextcloud checks the bearer at least that often;
//! - any 401 empties the slot; a `Set-Cookie` that deletes the session cookie (as Nextcloud does
//!   when a session times out) empties it too; the remember-me cookies (`nc_username`,
//!   `nc_token`, `nc_session_id`, a login credential that outlives the bearer) are never kept;
//! - at most [`MAX_SLOTS`] slots (and as many refused bearers); never persisted, never logged (no `Debug` of contents, header
//!   values marked sensitive);
//! - if Nextcloud refuses a session it opened itself while the bearer alone is accepted
//!   ([`SessionCookies::refused`]), that bearer gets no session for [`REFUSED_TTL`]; when
//!   the sessions of [`PAUSE_AFTER`] different users are refused within that time (a server
//!   whose CSRF check does not take `OCS-APIRequest`, before Nextcloud 30, refuses everyone's),
//!   reuse pauses for everyone for [`PAUSE`] and is then tried again. Users are counted, not
//!   bearers (one user holds an app password and several JWTs at once), by a keyed digest of
//!   the uid, never the uid itself; a refusal whose uid is not known yet counts by its bearer.
//!   One user's refusals never switch reuse off for the others, and nothing switches it off
//!   for good.
//!
//! It must never widen what a request may do: the bearer is still sent with every request,
//! and Nextcloud evaluates permissions and shares per request whatever authenticated it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use http::{HeaderMap, HeaderValue, StatusCode};

use mcp_resource_server::Bearer;

/// How long an opaque token's session is reused. The same window in which the token's uid is
/// already trusted without asking Nextcloud again (`mcp_resource_server::identity::UID_TTL`): an
/// app password revoked in Nextcloud ends its sessions at once anyway (Nextcloud validates such
/// a session against the app password on every request); an opaque OIDC access token is not
/// looked at again while its session lives, so this bounds how long a revoked one can still
/// ride on its session.
pub const OPAQUE_TTL: Duration = Duration::from_secs(60);
/// Upper bound for a JWT's slot whatever its `exp` says. Nextcloud does not look at the JWT
/// again while the session lives, so a token revoked at the oidc app (which checks its token
/// table on every fresh login) stays usable through its session until the slot ends: five
/// minutes, the interval at which Nextcloud itself re-checks a session token's credentials
/// (`Session::checkTokenCredentials`).
pub const MAX_TTL: Duration = Duration::from_secs(300);
/// Upper bound on slots, so a flood of distinct tokens cannot grow memory without bound.
pub const MAX_SLOTS: usize = 10_000;
/// How long a bearer whose session Nextcloud refused (401 with the cookie, success without it)
/// goes without one: no longer than any slot would have lived, so its next token, or the same
/// one after a transient refusal, is offered a session again.
pub const REFUSED_TTL: Duration = MAX_TTL;
/// How many different users refused within [`REFUSED_TTL`] mean the server refuses sessions
/// for everyone (rather than one user's sessions being in a state it will not serve).
pub const PAUSE_AFTER: usize = 3;
/// How long reuse pauses for everyone after [`PAUSE_AFTER`] users' refusals. Then it is tried
/// again, so a server that refuses every session costs at least [`PAUSE_AFTER`] extra requests
/// per pause: more under concurrent load, where requests already holding a cookie are refused
/// (and retried without it) in the moment before the pause starts.
pub const PAUSE: Duration = Duration::from_secs(600);
/// Cookies that would log in again after the session ends (Nextcloud's remember-me trio).
const REMEMBER_ME: [&str; 3] = ["nc_username", "nc_token", "nc_session_id"];
/// Cookies that come with a session but are not it: with only these left, the slot is useless.
const COMPANIONS: [&str; 3] = ["oc_sessionPassphrase", "nc_sameSiteCookielax", "nc_sameSiteCookiestrict"];

/// The per-bearer cookie jars. Shared by every request of the process.
pub struct SessionCookies {
    key: [u8; 64],
    state: Mutex<State>,
    max_slots: usize,
}

#[derive(Default)]
struct State {
    slots: HashMap<[u8; 32], Jar>,
    /// Bearers (by slot name) whose session Nextcloud refused, and until when they get none.
    refused: HashMap<[u8; 32], Instant>,
    /// Users (by [`SessionCookies::user`], or by slot name when the uid was not known) whose
    /// session Nextcloud refused, and until when that counts towards the pause.
    refusing_users: HashMap<[u8; 32], Instant>,
    /// Until when no bearer gets a session ([`PAUSE_AFTER`] refusals).
    paused_until: Option<Instant>,
}

impl State {
    /// Whether `slot`'s bearer may hold a session now (not paused, not refused).
    fn reuse_allowed(&mut self, slot: &[u8; 32], now: Instant) -> bool {
        if self.paused_until.is_some_and(|until| until > now) {
            return false;
        }
        self.paused_until = None;
        match self.refused.get(slot) {
            Some(until) if *until > now => false,
            Some(_) => {
                self.refused.remove(slot);
                true
            }
            None => true,
        }
    }
}

struct Jar {
    cookies: BTreeMap<String, String>,
    expires: Instant,
}

impl std::fmt::Debug for SessionCookies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionCookies(<redacted>)")
    }
}

impl Default for SessionCookies {
    fn default() -> Self {
        Self::with_capacity(MAX_SLOTS)
    }
}

impl SessionCookies {
    /// An empty map with a fresh random key and room for `max_slots` bearers.
    pub fn with_capacity(max_slots: usize) -> Self {
        let mut key = [0u8; 64];
        rand::fill(&mut key[..]);
        SessionCookies {
            key,
            state: Mutex::new(State::default()),
            max_slots: max_slots.max(1),
        }
    }

    fn slot(&self, bearer: &Bearer) -> [u8; 32] {
        bearer.keyed_digest(&self.key)
    }

    /// HMAC-SHA256 of the uid under the process key: counts a user without keeping the uid.
    /// The NUL prefix keeps it apart from every slot name (a bearer never contains NUL).
    fn user(&self, uid: &str) -> [u8; 32] {
        mcp_resource_server::caller::keyed_digest(&self.key, &[b"\0uid\0", uid.as_bytes()])
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The `Cookie` header to send with `bearer`'s next request, if its session is still held.
    pub fn cookie(&self, bearer: &Bearer) -> Option<HeaderValue> {
        let slot = self.slot(bearer);
        let now = Instant::now();
        let mut state = self.lock();
        if !state.reuse_allowed(&slot, now) {
            return None;
        }
        let jar = state.slots.get(&slot)?;
        if jar.expires <= now {
            state.slots.remove(&slot);
            return None;
        }
        let line = jar.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ");
        let mut value = HeaderValue::from_str(&line).ok()?;
        value.set_sensitive(true);
        Some(value)
    }

    /// Learns from Nextcloud's answer to a request made with `bearer`: a 401 drops the slot;
    /// `Set-Cookie` headers add, replace or delete cookies in it.
    pub fn observe(&self, bearer: &Bearer, status: StatusCode, headers: &HeaderMap) {
        let slot = self.slot(bearer);
        if status == StatusCode::UNAUTHORIZED {
            self.lock().slots.remove(&slot);
            return;
        }
        let now = SystemTime::now();
        let changes: Vec<Change> = headers
            .get_all(http::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|line| parse_set_cookie(line, now))
            .collect();
        if changes.is_empty() {
            return;
        }
        let mut state = self.lock();
        if !state.reuse_allowed(&slot, Instant::now()) {
            return;
        }
        let slots = &mut state.slots;
        if !slots.contains_key(&slot) {
            // Only a session cookie opens a slot (not a lone deletion or a companion cookie).
            if !changes.iter().any(|c| matches!(c, Change::Set(name, _, _) if !is_companion(name))) {
                return;
            }
            let Some(expires) = deadline(bearer) else { return };
            if slots.len() >= self.max_slots {
                make_room(slots);
            }
            slots.insert(
                slot,
                Jar {
                    cookies: BTreeMap::new(),
                    expires,
                },
            );
        }
        let Some(jar) = slots.get_mut(&slot) else { return };
        for change in changes {
            match change {
                Change::Set(name, value, lifetime) => {
                    if let Some(lifetime) = lifetime {
                        jar.expires = jar.expires.min(Instant::now() + lifetime);
                    }
                    jar.cookies.insert(name, value);
                }
                Change::Delete(name) => {
                    jar.cookies.remove(&name);
                }
            }
        }
        if jar.cookies.keys().all(|name| is_companion(name)) {
            slots.remove(&slot);
        }
    }

    /// Learns that Nextcloud refused `bearer`'s session (401 with the cookie) and accepted the
    /// same request with the bearer alone: that bearer's cookies go and it gets no session for
    /// [`REFUSED_TTL`]. The [`PAUSE_AFTER`]th different user refused within that time (`uid`, the
    /// user Nextcloud gave for the bearer; when not known yet, the bearer stands for its user)
    /// pauses reuse for everyone for [`PAUSE`], with one warning (the server refuses every
    /// session).
    pub fn refused(&self, bearer: &Bearer, uid: Option<&str>) {
        let slot = self.slot(bearer);
        let who = uid.map_or(slot, |uid| self.user(uid));
        let now = Instant::now();
        let mut state = self.lock();
        state.slots.remove(&slot);
        state.refused.retain(|_, until| *until > now);
        // Bounded like the slots: past that, a refused bearer may be offered a session again
        // (one more refusal, one more request), never unbounded memory.
        if state.refused.len() < self.max_slots {
            state.refused.insert(slot, now + REFUSED_TTL);
        }
        // Never more than PAUSE_AFTER entries: reaching it clears the record.
        state.refusing_users.retain(|_, until| *until > now);
        state.refusing_users.insert(who, now + REFUSED_TTL);
        if state.refusing_users.len() < PAUSE_AFTER {
            tracing::debug!("Nextcloud refused a session it had issued while accepting the bearer alone; not reused for that bearer");
            return;
        }
        tracing::warn!(
            users = telemetry_otlp::int(state.refusing_users.len()),
            pause_secs = telemetry_otlp::int(PAUSE.as_secs()),
            "Nextcloud refused the sessions it had issued to several users while accepting their bearers alone \
             (its CSRF check does not take OCS-APIRequest: Nextcloud before 30?); session reuse pauses"
        );
        state.paused_until = Some(now + PAUSE);
        state.slots.clear();
        state.refused.clear();
        state.refusing_users.clear();
    }

    /// Whether session reuse is paused for everyone now ([`Self::refused`]).
    pub fn paused(&self) -> bool {
        self.lock().paused_until.is_some_and(|until| until > Instant::now())
    }

    /// How many bearers have cookies held (for tests and metrics; says nothing about whose).
    pub fn len(&self) -> usize {
        self.lock().slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// When a slot opened now for `bearer` must end; `None` if the bearer has already expired.
fn deadline(bearer: &Bearer) -> Option<Instant> {
    let now = Instant::now();
    let ttl = match bearer.stated_expiry() {
        Some(exp) => exp.duration_since(SystemTime::now()).ok()?.min(MAX_TTL),
        None => OPAQUE_TTL,
    };
    (!ttl.is_zero()).then(|| now + ttl)
}

/// Drops expired slots; if none were, the one closest to expiring.
fn make_room(slots: &mut HashMap<[u8; 32], Jar>) {
    let now = Instant::now();
    slots.retain(|_, jar| jar.expires > now);
    if !slots.is_empty()
        && let Some(oldest) = slots.iter().min_by_key(|(_, jar)| jar.expires).map(|(k, _)| *k)
    {
        slots.remove(&oldest);
    }
}

/// The passphrase and same-site cookies (also under the `__Host-` prefix Nextcloud gives them
/// over HTTPS at the web root).
fn is_companion(name: &str) -> bool {
    let name = name.strip_prefix("__Host-").unwrap_or(name);
    COMPANIONS.contains(&name)
}

enum Change {
    /// name, value, and how long the cookie says it lives (`Max-Age` or `Expires`), if it says.
    Set(String, String, Option<Duration>),
    Delete(String),
}

/// Reads `name=value; attributes…`. PHP deletes a cookie with the value `deleted`, an `Expires`
/// in the past and `Max-Age=0`; any one of those (or an empty value) deletes here. `Max-Age`
/// wins over `Expires`, as in RFC 6265. Remember-me cookies and values that cannot go back into
/// a header are ignored.
fn parse_set_cookie(header: &str, now: SystemTime) -> Option<Change> {
    let mut parts = header.split(';');
    let (name, value) = parts.next()?.split_once('=')?;
    let (name, value) = (name.trim(), value.trim());
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b));
    if !token(name) || REMEMBER_ME.contains(&name) {
        return None;
    }
    let (mut max_age, mut expires) = (None, None);
    for attr in parts {
        let (k, v) = attr.split_once('=').unwrap_or((attr, ""));
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("max-age") {
            // Unparsable means "already over": refusing to keep is the safe side.
            max_age = Some(v.parse::<i64>().unwrap_or(0));
        } else if k.eq_ignore_ascii_case("expires") {
            expires = Some(
                cookie_date(v)
                    .map(|at| at.duration_since(now).unwrap_or(Duration::ZERO))
                    .unwrap_or(Duration::ZERO),
            );
        }
    }
    let lifetime = match max_age {
        Some(secs) => Some(Duration::from_secs(u64::try_from(secs).unwrap_or(0))),
        None => expires,
    };
    if lifetime.is_some_and(|l| l.is_zero()) || value.is_empty() || value == "deleted" {
        return Some(Change::Delete(name.to_string()));
    }
    let value_ok = value
        .bytes()
        .all(|b| b.is_ascii_graphic() && b != b';' && b != b',' && b != b'"' && b != b'\\');
    value_ok.then(|| Change::Set(name.to_string(), value.to_string(), lifetime))
}

/// An `Expires` date as PHP writes it (`Thu, 01 Jan 1970 00:00:01 GMT`, or with dashes as in
/// Nextcloud's hand-written same-site cookies: `Fri, 31-Dec-2100 23:59:59 GMT`).
fn cookie_date(text: &str) -> Option<SystemTime> {
    let spaced = text.replace('-', " ");
    let parsed = chrono::DateTime::parse_from_rfc2822(&spaced).ok()?;
    let secs = u64::try_from(parsed.timestamp()).ok()?;
    Some(std::time::UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn bearer(token: &str) -> Bearer {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {token}")).unwrap(),
        );
        Bearer::from_headers(&h).unwrap()
    }

    fn jwt(exp: u64) -> String {
        let e = |v: serde_json::Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&v).unwrap());
        format!(
            "{}.{}.sig",
            e(serde_json::json!({"alg": "RS256"})),
            e(serde_json::json!({"exp": exp, "sub": "alice"}))
        )
    }

    fn now() -> u64 {
        SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
    }

    fn set_cookies(lines: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for l in lines {
            h.append(http::header::SET_COOKIE, HeaderValue::from_str(l).unwrap());
        }
        h
    }

    const LOGIN: [&str; 5] = [
        "ocabc123=sess1; path=/; HttpOnly; SameSite=Lax",
        "oc_sessionPassphrase=pp1; path=/; HttpOnly; SameSite=Lax",
        "nc_sameSiteCookielax=true; path=/; expires=Fri, 31-Dec-2100 23:59:59 GMT; SameSite=lax",
        "nc_token=remember; path=/; Max-Age=1296000",
        "nc_session_id=sess1; path=/; Max-Age=1296000",
    ];

    #[test]
    fn only_the_bearer_that_obtained_the_cookies_gets_them() {
        let jar = SessionCookies::default();
        let alice = bearer("alice-app-password");
        jar.observe(&alice, StatusCode::MULTI_STATUS, &set_cookies(&LOGIN));
        let cookie = jar.cookie(&alice).unwrap();
        assert!(cookie.is_sensitive());
        assert_eq!(
            cookie.to_str().unwrap(),
            "nc_sameSiteCookielax=true; oc_sessionPassphrase=pp1; ocabc123=sess1"
        );
        for other in ["bob-app-password", "alice-app-passwordX", "Alice-app-password", ""] {
            if !other.is_empty() {
                assert!(jar.cookie(&bearer(other)).is_none(), "{other}");
            }
        }
        // Another process (another key) cannot find it either: the slot name is keyed.
        assert_ne!(alice.keyed_digest(&jar.key), alice.keyed_digest(&SessionCookies::default().key));
        assert_ne!(alice.keyed_digest(&jar.key), alice.digest());
        assert_eq!(format!("{jar:?}"), "SessionCookies(<redacted>)");
    }

    #[test]
    fn a_401_evicts_and_deletions_apply() {
        let jar = SessionCookies::default();
        let alice = bearer("alice-app-password");
        jar.observe(&alice, StatusCode::OK, &set_cookies(&LOGIN));
        // A renewed session id (session_regenerate_id) replaces the old one.
        jar.observe(&alice, StatusCode::OK, &set_cookies(&["ocabc123=sess2; path=/"]));
        assert!(jar.cookie(&alice).unwrap().to_str().unwrap().contains("ocabc123=sess2"));
        // A deleted companion goes; the session stays.
        jar.observe(
            &alice,
            StatusCode::OK,
            &set_cookies(&["oc_sessionPassphrase=deleted; expires=Thu, 01 Jan 1970 00:00:01 GMT; Max-Age=0; path=/"]),
        );
        assert_eq!(
            jar.cookie(&alice).unwrap().to_str().unwrap(),
            "nc_sameSiteCookielax=true; ocabc123=sess2"
        );
        // Nextcloud deleting the session cookie (session_lifetime passed) ends the slot: the
        // same-site cookie left over is no session.
        jar.observe(
            &alice,
            StatusCode::MULTI_STATUS,
            &set_cookies(&["ocabc123=deleted; expires=Thu, 01 Jan 1970 00:00:01 GMT; Max-Age=0; path=/"]),
        );
        assert!(jar.cookie(&alice).is_none());
        assert!(jar.is_empty());
        // An Expires in the past deletes too, with or without Max-Age.
        jar.observe(&alice, StatusCode::OK, &set_cookies(&LOGIN));
        jar.observe(
            &alice,
            StatusCode::OK,
            &set_cookies(&["ocabc123=x; expires=Thu, 01-Jan-1970 00:00:01 GMT"]),
        );
        assert!(jar.cookie(&alice).is_none());
        // Any 401 evicts.
        jar.observe(&alice, StatusCode::OK, &set_cookies(&LOGIN));
        assert!(jar.cookie(&alice).is_some());
        jar.observe(&alice, StatusCode::UNAUTHORIZED, &HeaderMap::new());
        assert!(jar.cookie(&alice).is_none());
        assert!(jar.is_empty());
    }

    #[test]
    fn only_a_session_cookie_opens_a_slot() {
        let jar = SessionCookies::default();
        let alice = bearer("alice-app-password");
        // Companions alone (also under the __Host- prefix), lone deletions: nothing held.
        jar.observe(
            &alice,
            StatusCode::OK,
            &set_cookies(&[
                "__Host-nc_sameSiteCookielax=true; path=/; secure; expires=Fri, 31-Dec-2100 23:59:59 GMT",
                "__Host-nc_sameSiteCookiestrict=true; path=/; secure; expires=Fri, 31-Dec-2100 23:59:59 GMT",
                "oc_sessionPassphrase=pp; path=/",
                "ocabc123=deleted; Max-Age=0",
            ]),
        );
        assert!(jar.is_empty());
        jar.observe(
            &alice,
            StatusCode::OK,
            &set_cookies(&["ocabc123=s; path=/", "__Host-nc_sameSiteCookiestrict=true; path=/; secure"]),
        );
        assert_eq!(
            jar.cookie(&alice).unwrap().to_str().unwrap(),
            "__Host-nc_sameSiteCookiestrict=true; ocabc123=s"
        );
    }

    #[test]
    fn a_cookie_lifetime_shortens_the_slot() {
        let jar = SessionCookies::default();
        let alice = bearer("alice-app-password");
        jar.observe(&alice, StatusCode::OK, &set_cookies(&["ocabc123=s; Max-Age=5"]));
        let until = jar.lock().slots.values().next().unwrap().expires;
        assert!(until <= Instant::now() + Duration::from_secs(5));
        // Max-Age wins over Expires (RFC 6265); a far Expires never lengthens the slot.
        let parsed = parse_set_cookie("a=b; Expires=Fri, 31-Dec-2100 23:59:59 GMT; Max-Age=7", SystemTime::now());
        assert!(matches!(parsed, Some(Change::Set(_, _, Some(d))) if d == Duration::from_secs(7)));
        jar.observe(
            &alice,
            StatusCode::OK,
            &set_cookies(&["nc_sameSiteCookielax=true; expires=Fri, 31-Dec-2100 23:59:59 GMT"]),
        );
        assert!(jar.lock().slots.values().next().unwrap().expires <= until);
        assert!(cookie_date("Fri, 31-Dec-2100 23:59:59 GMT").is_some());
        assert!(cookie_date("Thu, 01 Jan 1970 00:00:01 GMT").is_some());
        assert!(cookie_date("next tuesday").is_none());
    }

    #[test]
    fn a_refused_session_stops_reuse_for_that_bearer_only_and_for_a_while() {
        let jar = SessionCookies::default();
        let (alice, bob) = (bearer("alice-app-password"), bearer("bob-app-password"));
        jar.observe(&alice, StatusCode::OK, &set_cookies(&LOGIN));
        jar.observe(&bob, StatusCode::OK, &set_cookies(&LOGIN));
        jar.refused(&alice, Some("alice"));
        // alice's cookies are gone and she is given none, even when Nextcloud sets new ones...
        assert!(jar.cookie(&alice).is_none());
        jar.observe(&alice, StatusCode::OK, &set_cookies(&LOGIN));
        assert!(jar.cookie(&alice).is_none());
        // ...while bob keeps his session and anyone else still gets one.
        assert!(!jar.paused());
        assert!(jar.cookie(&bob).is_some());
        let carol = bearer("carol-app-password");
        jar.observe(&carol, StatusCode::OK, &set_cookies(&LOGIN));
        assert!(jar.cookie(&carol).is_some());
        assert_eq!(jar.len(), 2);
        // When the refusal has run its time, alice is offered a session again.
        jar.lock().refused.values_mut().for_each(|until| *until = Instant::now());
        jar.observe(&alice, StatusCode::OK, &set_cookies(&LOGIN));
        assert!(jar.cookie(&alice).is_some());
        assert!(jar.lock().refused.is_empty());
    }

    #[test]
    fn one_users_many_bearers_never_pause_reuse() {
        let jar = SessionCookies::default();
        let bob = bearer("bob-app-password");
        jar.observe(&bob, StatusCode::OK, &set_cookies(&LOGIN));
        // alice's app password and two JWTs: three bearers, one user.
        let alices = [bearer("alice-app-password"), bearer(&jwt(now() + 300)), bearer(&jwt(now() + 600))];
        for b in &alices {
            jar.observe(b, StatusCode::OK, &set_cookies(&LOGIN));
            jar.refused(b, Some("alice"));
            assert!(jar.cookie(b).is_none());
        }
        assert!(!jar.paused());
        assert!(jar.cookie(&bob).is_some());
        // The user is counted by a keyed digest of the uid (another process, another digest).
        assert_eq!(jar.lock().refusing_users.len(), 1);
        assert!(jar.lock().refusing_users.contains_key(&jar.user("alice")));
        assert_ne!(jar.user("alice"), SessionCookies::default().user("alice"));
    }

    #[test]
    fn refusals_from_several_users_pause_reuse_for_everyone_for_a_while() {
        let jar = SessionCookies::default();
        let bearers: Vec<Bearer> = (0..PAUSE_AFTER + 1).map(|i| bearer(&format!("token-{i}"))).collect();
        let uids: Vec<String> = (0..PAUSE_AFTER + 1).map(|i| format!("user-{i}")).collect();
        let last = &bearers[PAUSE_AFTER];
        jar.observe(last, StatusCode::OK, &set_cookies(&LOGIN));
        // The same user refused again counts once.
        jar.refused(&bearers[0], Some(&uids[0]));
        jar.refused(&bearers[0], Some(&uids[0]));
        // A refusal whose uid is not known yet counts by its bearer.
        jar.refused(&bearers[1], None);
        for (b, uid) in bearers.iter().zip(&uids).take(PAUSE_AFTER - 1).skip(2) {
            jar.refused(b, Some(uid));
        }
        assert!(!jar.paused() && jar.cookie(last).is_some());
        jar.refused(&bearers[PAUSE_AFTER - 1], Some(&uids[PAUSE_AFTER - 1]));
        // Paused: every cookie forgotten, none kept or sent, for any bearer.
        assert!(jar.paused() && jar.is_empty());
        assert!(jar.cookie(last).is_none());
        jar.observe(last, StatusCode::OK, &set_cookies(&LOGIN));
        assert!(jar.cookie(last).is_none() && jar.is_empty());
        // The pause ends: reuse is tried again, refused bearers included.
        let until = jar.lock().paused_until.unwrap();
        assert!(until > Instant::now() + PAUSE - Duration::from_secs(5) && until <= Instant::now() + PAUSE);
        jar.lock().paused_until = Some(Instant::now());
        assert!(!jar.paused());
        for b in &bearers {
            jar.observe(b, StatusCode::OK, &set_cookies(&LOGIN));
            assert!(jar.cookie(b).is_some());
        }
    }

    #[test]
    fn slots_end_with_the_bearer() {
        let jar = SessionCookies::default();
        // An expired JWT is never given a slot; a live one ends at its exp (capped).
        let dead = bearer(&jwt(now() - 5));
        jar.observe(&dead, StatusCode::OK, &set_cookies(&LOGIN));
        assert!(jar.cookie(&dead).is_none());
        let live = bearer(&jwt(now() + 120));
        let until = deadline(&live).unwrap();
        assert!(until <= Instant::now() + Duration::from_secs(120) && until > Instant::now() + Duration::from_secs(110));
        let long = bearer(&jwt(now() + 86_400));
        assert!(deadline(&long).unwrap() <= Instant::now() + MAX_TTL);
        let opaque = bearer("app-password");
        assert!(deadline(&opaque).unwrap() <= Instant::now() + OPAQUE_TTL);
        // A slot past its deadline is gone.
        jar.observe(&opaque, StatusCode::OK, &set_cookies(&LOGIN));
        jar.lock().slots.values_mut().for_each(|j| j.expires = Instant::now());
        assert!(jar.cookie(&opaque).is_none());
        assert!(jar.is_empty());
    }

    #[test]
    fn bounded_and_picky() {
        let jar = SessionCookies::with_capacity(3);
        for i in 0..10 {
            jar.observe(&bearer(&format!("token-{i}")), StatusCode::OK, &set_cookies(&LOGIN));
        }
        assert_eq!(jar.len(), 3);
        assert!(jar.cookie(&bearer("token-9")).is_some());
        // One user's many refused bearers (fresh JWTs) are bounded the same way.
        for i in 0..10 {
            jar.refused(&bearer(&format!("jwt-{i}")), Some("alice"));
        }
        assert_eq!(jar.lock().refused.len(), 3);
        // Remember-me cookies alone, broken lines and unsafe values add nothing.
        let only_remember = bearer("r");
        jar.observe(
            &only_remember,
            StatusCode::OK,
            &set_cookies(&["nc_token=x; Max-Age=100", "nc_username=alice", "noequals", "a=b\"c"]),
        );
        assert!(jar.cookie(&only_remember).is_none());
    }
}
