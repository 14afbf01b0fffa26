"""Session cookies as Nextcloud issues and honours them, and where the stand-in is stricter."""

import time

import requests


def counters(s, uid):
    r = requests.get(f"{s.url}/standin/sessions", params={"uid": uid}, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def login(s, uid, header):
    """A cookie-less PROPFIND with `header`; returns the session (a requests.Session holding the cookies)."""
    session = requests.Session()
    r = session.request("PROPFIND", s.dav(uid), headers={"Authorization": header, "Depth": "0"}, timeout=10)
    assert r.status_code == 207, r.text
    return session


OCS = {"OCS-APIRequest": "true"}


def jwt(s, uid, ttl=None):
    data = {"aud": "x"} if ttl is None else {"aud": "x", "ttl_seconds": str(ttl)}
    r = requests.post(f"{s.url}/standin/token", auth=s.auth(uid), data=data, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()["access_token"]


def test_a_login_issues_the_cookies_nextcloud_sets(jwt_standin):
    s = jwt_standin
    session = login(s, "alice", f"Bearer {s.passwords['alice']}")
    names = set(session.cookies.keys())
    assert {"oc_sessionPassphrase", "nc_sameSiteCookielax", "nc_sameSiteCookiestrict"} <= names
    assert any(n.startswith("oc") and n != "oc_sessionPassphrase" for n in names), names  # the instance-id cookie
    # An app password logs in through tryTokenLogin: no remember-me cookies (user_oidc's
    # handleApacheAuth even deletes them first).
    assert not {"nc_username", "nc_token", "nc_session_id"} & names
    # A JWT logs in through user_oidc (OC_User::loginWithApache), which sets the remember-me trio.
    jwt_session = login(s, "alice", f"Bearer {jwt(s, 'alice')}")
    assert {"nc_username", "nc_token", "nc_session_id"} <= set(jwt_session.cookies.keys())
    assert counters(s, "alice")["logins"] == 2


def test_the_session_cookie_stands_in_for_a_login_only_with_its_own_credential(jwt_standin):
    s = jwt_standin
    alice = f"Bearer {s.passwords['alice']}"
    session = login(s, "alice", alice)
    before = counters(s, "alice")
    r = session.request("PROPFIND", s.dav("alice"), headers={"Authorization": alice, "Depth": "0", **OCS}, timeout=10)
    assert r.status_code == 207
    after = counters(s, "alice")
    assert after["logins"] == before["logins"] and after["session_requests"] == before["session_requests"] + 1
    # The cookie alone works too, within the CSRF rules.
    assert session.request("PROPFIND", s.dav("alice"), headers={"Depth": "0", **OCS}, timeout=10).status_code == 207
    # alice's cookie with bob's credential, or with another token of alice's: refused (Nextcloud would act as
    # alice; the stand-in makes the mistake visible).
    for other in [f"Bearer {s.passwords['bob']}", f"Bearer {jwt(s, 'alice')}"]:
        r = session.request("PROPFIND", s.dav("alice"), headers={"Authorization": other, "Depth": "0", **OCS}, timeout=10)
        assert r.status_code == 401, other
    assert counters(s, "alice")["other_credential"] == 2
    assert counters(s, "bob")["session_requests"] == 0


def test_the_strict_cookie_check_and_dead_cookies(standin):
    alice = f"Bearer {standin.passwords['alice']}"
    session = login(standin, "alice", alice)
    sid_only = {k: v for k, v in session.cookies.items() if not k.startswith("nc_sameSite")}
    r = requests.request("PROPFIND", standin.dav("alice"), headers={"Authorization": alice, "Depth": "0"},
                         cookies=sid_only, timeout=10)
    assert r.status_code == 412 and "Strict Cookie" in r.text
    # OCS-APIRequest lifts the strict check (Request::cookieCheckRequired).
    r = requests.get(f"{standin.url}/ocs/v2.php/cloud/user", headers={"OCS-APIRequest": "true", "Accept": "application/json"},
                     cookies=sid_only, timeout=10)
    assert r.status_code == 200 and r.json()["ocs"]["data"]["id"] == "alice"
    # A wrong passphrase makes the session unusable: the header decides (a login).
    broken = dict(session.cookies.items(), oc_sessionPassphrase="wrong")
    logins = counters(standin, "alice")["logins"]
    r = requests.request("PROPFIND", standin.dav("alice"), headers={"Authorization": alice, "Depth": "0"},
                         cookies=broken, timeout=10)
    assert r.status_code == 207 and counters(standin, "alice")["logins"] == logins + 1


def test_a_bearer_session_needs_the_csrf_header_for_anything_but_get(standin):
    """Auth::requiresCSRFCheck: a session opened by a bearer is not AUTHENTICATED_TO_DAV_BACKEND,
    so every DAV method but GET needs a passing CSRF check (OCS-APIRequest since Nextcloud 30)."""
    alice = f"Bearer {standin.passwords['alice']}"
    session = login(standin, "alice", alice)
    standin.put("alice", "csrf.txt", "x")
    refused = counters(standin, "alice")["csrf_refused"]
    with_bearer = {"Authorization": alice}
    assert session.get(standin.dav("alice", "csrf.txt"), headers=with_bearer, timeout=10).status_code == 200
    for method, extra in [("PROPFIND", {"Depth": "0"}), ("PUT", {}), ("DELETE", {}), ("POST", {})]:
        r = session.request(method, standin.dav("alice", "csrf.txt"), headers={**with_bearer, **extra}, data=b"y", timeout=10)
        assert r.status_code == 401 and "CSRF check not passed" in r.text, (method, r.status_code, r.text)
    c = counters(standin, "alice")
    assert c["csrf_refused"] == refused + 4
    # With the header the same session serves them.
    r = session.request("PUT", standin.dav("alice", "csrf.txt"), headers={**with_bearer, **OCS}, data=b"y", timeout=10)
    assert r.status_code in (201, 204), r.text
    assert counters(standin, "alice")["session_requests"] == c["session_requests"] + 1
    # OCS without the header is refused too (stricter: Nextcloud lets a Bearer header through there).
    r = session.get(f"{standin.url}/ocs/v2.php/cloud/user", headers=with_bearer, timeout=10)
    assert r.status_code == 401


def test_a_basic_dav_session_is_dav_authenticated(standin):
    """tryBasicAuthLogin / Auth::validateUserPass set AUTHENTICATED_TO_DAV_BACKEND: no CSRF check."""
    session = requests.Session()
    session.auth = standin.auth("bob")
    assert session.request("PROPFIND", standin.dav("bob"), headers={"Depth": "0"}, timeout=10).status_code == 207
    session.auth = None
    assert session.request("PROPFIND", standin.dav("bob"), headers={"Depth": "0"}, timeout=10).status_code == 207
    assert counters(standin, "bob")["csrf_refused"] == 0


def test_without_the_header_counting_csrf_bearer_sessions_only_serve_get(standin):
    """As on servers before 30 (before server PR #46760), where OCS-APIRequest did not pass the CSRF check."""
    r = requests.post(f"{standin.url}/standin/sessions/settings", json={"ocs_apirequest_passes_csrf": False}, timeout=10)
    assert r.status_code == 200
    try:
        alice = f"Bearer {standin.passwords['alice']}"
        session = login(standin, "alice", alice)
        r = session.request("PROPFIND", standin.dav("alice"), headers={"Authorization": alice, "Depth": "0", **OCS}, timeout=10)
        assert r.status_code == 401 and "CSRF" in r.text
        # Without the cookie the bearer alone is fine.
        assert requests.request("PROPFIND", standin.dav("alice"), headers={"Authorization": alice, "Depth": "0", **OCS},
                                timeout=10).status_code == 207
    finally:
        requests.post(f"{standin.url}/standin/sessions/settings", json={"ocs_apirequest_passes_csrf": True}, timeout=10)
    r = requests.post(f"{standin.url}/standin/sessions/settings", json={"ocs_apirequest_passes_csrf": "no"}, timeout=10)
    assert r.status_code == 400


def test_deck_is_cors_a_session_without_the_header_is_logged_out(standin):
    alice = f"Bearer {standin.passwords['alice']}"
    boards = f"{standin.url}/index.php/apps/deck/api/v1.0/boards"
    # A bearer without OCS-APIRequest: CORSMiddleware logs it out and wants Basic.
    r = requests.get(boards, headers={"Authorization": alice}, timeout=10)
    assert r.status_code == 401 and r.json() == {"message": "CORS requires basic auth"}
    assert requests.get(boards, auth=standin.auth("alice"), timeout=10).status_code == 200
    session = requests.Session()
    r = session.get(boards, headers={"Authorization": alice, **OCS}, timeout=10)
    assert r.status_code == 200 and session.cookies
    assert session.get(boards, headers={"Authorization": alice, **OCS}, timeout=10).status_code == 200
    used = counters(standin, "alice")["session_requests"]
    assert used >= 1
    # The cookie without the header: 401 and the session is over (the next try with the header logs in again).
    r = session.get(boards, headers={"Authorization": alice}, timeout=10)
    assert r.status_code == 401 and "CORS" in r.text
    logins = counters(standin, "alice")["logins"]
    assert session.get(boards, headers={"Authorization": alice, **OCS}, timeout=10).status_code == 200
    assert counters(standin, "alice")["logins"] == logins + 1


def test_a_timed_out_session_deletes_its_cookie_and_the_header_decides(standin):
    """OC::initSession past session_lifetime: the session cookie is deleted, the user logged out, and
    the request authenticates from its header without a new session cookie."""
    alice = f"Bearer {standin.passwords['alice']}"
    session = login(standin, "alice", alice)
    name = standin_session_name(session)
    sid = session.cookies[name]
    r = requests.post(f"{standin.url}/standin/sessions/expire", params={"uid": "alice"}, timeout=10)
    assert r.status_code == 200 and r.json() == {"timed_out": 1}
    before = counters(standin, "alice")
    r = session.request("PROPFIND", standin.dav("alice"), headers={"Authorization": alice, "Depth": "0", **OCS}, timeout=10)
    assert r.status_code == 207
    deletions = [h for h in r.raw.headers.getlist("Set-Cookie") if "Max-Age=0" in h]
    assert any(h.startswith(f"{name}=deleted") for h in deletions), deletions
    after = counters(standin, "alice")
    assert after["logins"] == before["logins"] + 1 and after["dead_cookies"] == before["dead_cookies"] + 1
    assert name not in session.cookies  # the client dropped it
    # A client that ignores the deletion keeps meeting the dead session (and is counted).
    r = requests.request("PROPFIND", standin.dav("alice"), headers={"Authorization": alice, "Depth": "0", **OCS},
                         cookies={name: "x", **dict(session.cookies.items())}, timeout=10)
    assert r.status_code == 207
    stale = dict(session.cookies.items())
    stale[name] = sid
    r = requests.request("PROPFIND", standin.dav("alice"), headers={"Authorization": alice, "Depth": "0", **OCS},
                         cookies=stale, timeout=10)
    assert r.status_code == 207 and counters(standin, "alice")["dead_cookies"] == after["dead_cookies"] + 1
    assert requests.post(f"{standin.url}/standin/sessions/expire", params={"uid": "nobody"}, timeout=10).status_code == 404


def standin_session_name(session):
    return next(n for n in session.cookies.keys() if n.startswith("oc") and n != "oc_sessionPassphrase")


def test_revoking_the_app_password_ends_its_sessions(standin):
    alice = f"Bearer {standin.passwords['alice']}"
    session = login(standin, "alice", alice)
    r = requests.post(f"{standin.url}/standin/revoke-app-password", auth=standin.auth("alice"), timeout=10)
    assert r.status_code == 200 and r.json()["sessions_ended"] == 1
    assert session.request("PROPFIND", standin.dav("alice"), headers={"Authorization": alice, "Depth": "0"},
                           timeout=10).status_code == 401
    assert session.request("PROPFIND", standin.dav("alice"), headers={"Depth": "0"}, timeout=10).status_code == 401


def test_a_jwt_session_ends_at_the_tokens_exp(jwt_standin):
    s = jwt_standin
    token = requests.post(f"{s.url}/standin/token", auth=s.auth("alice"), data={"aud": "x", "ttl_seconds": "1"},
                          timeout=10).json()["access_token"]
    session = login(s, "alice", f"Bearer {token}")
    time.sleep(2.1)
    r = session.request("PROPFIND", s.dav("alice"), headers={"Depth": "0"}, timeout=10)
    assert r.status_code == 401


def test_login_delay_is_validated(tmp_path):
    import subprocess
    from conftest import RUN
    out = subprocess.run([str(RUN), "--state", str(tmp_path), "--bind", "127.0.0.1:0", "--user", "a:b",
                          "--login-delay-ms", "-1"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "--login-delay-ms" in out.stderr
