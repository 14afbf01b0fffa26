//! Session reuse (issue #16): the session cookie Nextcloud hands back for a bearer is sent again
//! only with that bearer, never with another one; shares revoked meanwhile still take effect on
//! the next call; a 401 drops the cookie; it ends with the JWT that obtained it.
//!
//! The stand-in counts, per user, logins from a credential, requests it served from a session
//! cookie, every presentation of a session cookie, and cookies sent with another credential
//! (which it refuses with 401, stricter than Nextcloud, which would act as the session's user).

mod common;

use std::time::Duration;

use common::{Client, Env, call, connect, err_kind, ok, paths};
use serde_json::{Value, json};

fn n(v: &Value, key: &str) -> u64 {
    let count = v[key].as_u64();
    assert!(count.is_some(), "no counter {key} in {v}");
    count.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_reused_only_with_the_bearer_that_obtained_it() {
    let env = Env::start().await;
    // Seeding the fixture logged in too: count from here.
    let (a0, b0) = (env.nc_sessions("alice").await, env.nc_sessions("bob").await);
    let alice = env.client("alice").await;
    for _ in 0..4 {
        assert!(paths(ok(&call(&alice, "files_list", json!({"path": ""})).await)).contains(&"notes.txt".to_string()));
    }
    let after_app_password = env.nc_sessions("alice").await;
    // One login (identifying the caller); every later request rode on its session.
    assert_eq!(n(&after_app_password, "logins") - n(&a0, "logins"), 1, "{after_app_password}");
    assert!(
        n(&after_app_password, "session_requests") - n(&a0, "session_requests") >= 4,
        "{after_app_password}"
    );

    // alice's second credential (a JWT for this server) gets a session of its own, never the first.
    let jwt = env.nc.mint_jwt("alice", &env.mcp.url(), Duration::from_secs(300));
    let alice_jwt = connect(&env.mcp.url(), &jwt).await;
    for _ in 0..3 {
        ok(&call(&alice_jwt, "files_list", json!({"path": "private"})).await);
    }
    // bob, interleaved with alice, only ever has his own.
    let bob = env.client("bob").await;
    for _ in 0..3 {
        let listed = call(&bob, "files_list", json!({"path": ""})).await;
        assert!(!paths(ok(&listed)).contains(&"notes.txt".to_string()));
        ok(&call(&alice, "files_list", json!({"path": ""})).await);
    }
    let a = env.nc_sessions("alice").await;
    let b = env.nc_sessions("bob").await;
    assert_eq!(n(&a, "logins") - n(&a0, "logins"), 2, "one login per bearer: {a}");
    assert_eq!(n(&b, "logins") - n(&b0, "logins"), 1, "{b}");
    assert_eq!(
        n(&a, "other_credential") + n(&b, "other_credential"),
        0,
        "a cookie went to another bearer: {a} {b}"
    );
    assert_eq!(n(&a, "remember_me_presented") + n(&b, "remember_me_presented"), 0, "{a} {b}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_revoked_share_is_gone_on_the_next_call_made_with_the_session() {
    let env = Env::start().await;
    let bob = env.client("bob").await;
    for _ in 0..2 {
        let plan = call(&bob, "files_read", json!({"path": "Shared-with-bob/plan.md"})).await;
        assert!(ok(&plan)["text"].as_str().unwrap().contains("forty thousand"));
    }
    env.revoke_share("alice", "/Shared-with-bob", "bob").await;
    let before = env.nc_sessions("bob").await;
    assert_eq!(
        err_kind(&call(&bob, "files_read", json!({"path": "Shared-with-bob/plan.md"})).await),
        "not_found"
    );
    assert!(!paths(ok(&call(&bob, "files_list", json!({"path": ""})).await)).contains(&"Shared-with-bob".to_string()));
    let after = env.nc_sessions("bob").await;
    // Both answers came through bob's session, not a fresh login.
    assert_eq!(n(&after, "logins"), n(&before, "logins"), "{before} {after}");
    assert_eq!(
        n(&after, "session_requests"),
        n(&before, "session_requests") + 2,
        "{before} {after}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_401_drops_the_session() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    ok(&call(&alice, "files_list", json!({"path": ""})).await);
    ok(&call(&alice, "files_list", json!({"path": ""})).await);

    // alice deletes the app password in her security settings: its sessions end with it.
    let r = env
        .nc_http()
        .post(format!("{}/standin/revoke-app-password", env.nc.url()))
        .header("Authorization", env.nc.basic("alice"))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success());

    let before = n(&env.nc_sessions("alice").await, "cookies_presented");
    // The uid is still cached for a minute, so the call reaches Nextcloud: with the cookie, 401.
    assert_eq!(err_kind(&call(&alice, "files_list", json!({"path": ""})).await), "auth_expired");
    let presented = n(&env.nc_sessions("alice").await, "cookies_presented");
    assert_eq!(presented, before + 1);
    // After that 401 the cookie is gone: the next calls go without it (and fail on their own).
    for _ in 0..2 {
        assert_eq!(err_kind(&call(&alice, "files_list", json!({"path": ""})).await), "auth_expired");
    }
    assert_eq!(n(&env.nc_sessions("alice").await, "cookies_presented"), presented);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_session_ends_with_the_jwt() {
    let env = Env::start().await;
    let jwt = env.nc.mint_jwt("alice", &env.mcp.url(), Duration::from_secs(3));
    let alice = connect(&env.mcp.url(), &jwt).await;
    ok(&call(&alice, "files_list", json!({"path": ""})).await);
    ok(&call(&alice, "files_list", json!({"path": ""})).await);
    let before = env.nc_sessions("alice").await;
    assert!(n(&before, "session_requests") >= 1, "{before}");

    tokio::time::sleep(Duration::from_millis(4200)).await;
    // Past exp: mcp-nextcloud no longer sends the cookie (the stand-in sees none), and the
    // expired token alone is refused.
    assert_eq!(err_kind(&call(&alice, "files_list", json!({"path": ""})).await), "auth_expired");
    let after = env.nc_sessions("alice").await;
    assert_eq!(n(&after, "cookies_presented"), n(&before, "cookies_presented"), "{before} {after}");
}

/// Every kind of request mcp-nextcloud makes rides on the session: DAV PROPFIND, PUT, MOVE,
/// REPORT, GET and Deck. Nextcloud applies its CSRF rules to a session-carrying request
/// (`Auth::requiresCSRFCheck` for DAV, `CORSMiddleware` for Deck's API); the stand-in applies
/// them too, so a request without `OCS-APIRequest` would be refused and counted.
#[tokio::test(flavor = "multi_thread")]
async fn every_kind_of_request_rides_on_the_session_within_the_csrf_rules() {
    let env = Env::start().await;
    let a0 = env.nc_sessions("alice").await;
    let alice = env.client("alice").await;
    ok(&call(&alice, "files_list", json!({"path": ""})).await);
    ok(&call(&alice, "files_write", json!({"path": "session-memo.md", "content": "one"})).await);
    ok(&call(&alice, "files_write", json!({"path": "session-memo.md", "content": "two"})).await);
    ok(&call(&alice, "files_move", json!({"from": "session-memo.md", "to": "session-memo-2.md"})).await);
    assert!(
        ok(&call(&alice, "files_read", json!({"path": "session-memo-2.md"})).await)["text"]
            .as_str()
            .unwrap()
            .contains("two")
    );
    ok(&call(&alice, "calendar_events", json!({"from": "2026-01-01", "to": "2026-01-31"})).await);
    ok(&call(&alice, "deck_boards", json!({})).await);
    let a = env.nc_sessions("alice").await;
    assert_eq!(n(&a, "logins") - n(&a0, "logins"), 1, "one login, then the session: {a}");
    assert_eq!(
        n(&a, "csrf_refused"),
        n(&a0, "csrf_refused"),
        "a session request broke a CSRF rule: {a}"
    );
    assert!(n(&a, "session_requests") - n(&a0, "session_requests") >= 7, "{a}");
}

/// Before Nextcloud 30 the `OCS-APIRequest` header did not pass the CSRF check, so a PROPFIND
/// with a session opened by a bearer is 401 there. The call still succeeds (the bearer alone is
/// tried), and mcp-nextcloud stops offering that bearer a session instead of paying two
/// requests each time.
#[tokio::test(flavor = "multi_thread")]
async fn a_nextcloud_that_refuses_its_own_sessions_gets_the_bearer_alone() {
    let env = Env::start().await;
    env.standin_control("sessions/settings", json!({"ocs_apirequest_passes_csrf": false}))
        .await;
    let alice = env.client("alice").await;
    let a0 = env.nc_sessions("alice").await;
    for _ in 0..3 {
        assert!(paths(ok(&call(&alice, "files_list", json!({"path": ""})).await)).contains(&"notes.txt".to_string()));
    }
    let a = env.nc_sessions("alice").await;
    // Exactly one refusal: the cookie was offered once, then never again.
    assert_eq!(n(&a, "csrf_refused") - n(&a0, "csrf_refused"), 1, "{a0} {a}");
    assert_eq!(n(&a, "cookies_presented") - n(&a0, "cookies_presented"), 1, "{a0} {a}");
    assert_eq!(
        n(&a, "logins") - n(&a0, "logins"),
        3,
        "each call logged in with the bearer: {a0} {a}"
    );
}

/// Lists alice's or bob's files root `times` times.
async fn list(client: &Client, times: usize) {
    for _ in 0..times {
        ok(&call(client, "files_list", json!({"path": ""})).await);
    }
}

async fn sessions_refused(env: &Env, refused: bool) {
    env.standin_control("sessions/settings", json!({"ocs_apirequest_passes_csrf": !refused}))
        .await;
}

/// One bearer whose session Nextcloud refused (here: while the stand-in briefly applied the
/// pre-30 CSRF rule) goes without a session for a while; every other bearer keeps reusing its
/// own. It used to switch reuse off for the whole process.
#[tokio::test(flavor = "multi_thread")]
async fn one_refused_session_leaves_the_other_bearers_theirs() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    sessions_refused(&env, true).await;
    list(&alice, 1).await;
    sessions_refused(&env, false).await;
    let (a0, b0) = (env.nc_sessions("alice").await, env.nc_sessions("bob").await);
    let bob = env.client("bob").await;
    list(&bob, 3).await;
    list(&alice, 2).await;
    let (a, b) = (env.nc_sessions("alice").await, env.nc_sessions("bob").await);
    assert_eq!(
        n(&b, "logins") - n(&b0, "logins"),
        1,
        "bob logged in once, then rode on his session: {b0} {b}"
    );
    assert!(n(&b, "session_requests") - n(&b0, "session_requests") >= 3, "{b0} {b}");
    // alice's bearer is not offered a session again yet: each call logs in, no cookie shown.
    assert_eq!(n(&a, "cookies_presented"), n(&a0, "cookies_presented"), "{a0} {a}");
    assert_eq!(n(&a, "logins") - n(&a0, "logins"), 2, "{a0} {a}");
}

/// The pause counts users, not bearers: one user holding an app password and two JWTs, all
/// three refused, is still one user, and everyone else keeps reusing sessions. (Three users
/// refused pause reuse for everyone for ten minutes; the stand-in has two users, so the unit
/// tests in `session_cookies` cover that and the pause's end.)
#[tokio::test(flavor = "multi_thread")]
async fn one_users_many_refused_bearers_do_not_pause_reuse_for_others() {
    let env = Env::start().await;
    sessions_refused(&env, true).await;
    let alice = env.client("alice").await;
    let jwts = [
        env.nc.mint_jwt("alice", &env.mcp.url(), Duration::from_secs(300)),
        env.nc.mint_jwt("alice", &env.mcp.url(), Duration::from_secs(600)),
    ];
    let (alice_jwt, alice_jwt2) = (connect(&env.mcp.url(), &jwts[0]).await, connect(&env.mcp.url(), &jwts[1]).await);
    let a0 = env.nc_sessions("alice").await;
    for client in [&alice, &alice_jwt, &alice_jwt2] {
        list(client, 2).await;
    }
    let a1 = env.nc_sessions("alice").await;
    assert_eq!(
        n(&a1, "csrf_refused") - n(&a0, "csrf_refused"),
        3,
        "each of alice's bearers refused once: {a0} {a1}"
    );
    // Once the server takes sessions again, bob logs in once and rides on his session: no pause.
    sessions_refused(&env, false).await;
    let b0 = env.nc_sessions("bob").await;
    let bob = env.client("bob").await;
    list(&bob, 3).await;
    let b1 = env.nc_sessions("bob").await;
    assert_eq!(n(&b1, "logins") - n(&b0, "logins"), 1, "{b0} {b1}");
    assert!(n(&b1, "cookies_presented") - n(&b0, "cookies_presented") >= 2, "{b0} {b1}");
    // A fresh bearer of alice's is offered a session too; her refused ones still are not.
    let later = env.nc.mint_jwt("alice", &env.mcp.url(), Duration::from_secs(300));
    let alice_later = connect(&env.mcp.url(), &later).await;
    list(&alice_later, 3).await;
    let a2 = env.nc_sessions("alice").await;
    assert!(n(&a2, "cookies_presented") - n(&a1, "cookies_presented") >= 2, "{a1} {a2}");
    list(&alice, 2).await;
    let a3 = env.nc_sessions("alice").await;
    assert_eq!(n(&a3, "cookies_presented"), n(&a2, "cookies_presented"), "{a2} {a3}");
}

/// Nextcloud ends an idle session after `session_lifetime` by deleting the session cookie in
/// its answer and authenticating the request from its header. mcp-nextcloud honours the
/// deletion: the dead cookie is presented once, never again, and the next call starts a new
/// session.
#[tokio::test(flavor = "multi_thread")]
async fn a_timed_out_session_is_let_go() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    ok(&call(&alice, "files_list", json!({"path": ""})).await);
    env.standin_control("sessions/expire?uid=alice", json!({})).await;
    let a0 = env.nc_sessions("alice").await;
    for _ in 0..3 {
        ok(&call(&alice, "files_list", json!({"path": ""})).await);
    }
    let a = env.nc_sessions("alice").await;
    assert_eq!(n(&a, "dead_cookies") - n(&a0, "dead_cookies"), 1, "{a0} {a}");
    // The call that met the timeout logged in from its header; the next one opened a new
    // session; the third rode on it.
    assert_eq!(n(&a, "logins") - n(&a0, "logins"), 2, "{a0} {a}");
    assert_eq!(n(&a, "session_requests") - n(&a0, "session_requests"), 1, "{a0} {a}");
}
