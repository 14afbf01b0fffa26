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


def test_a_login_issues_the_cookies_nextcloud_sets(standin):
    session = login(standin, "alice", f"Bearer {standin.passwords['alice']}")
    names = set(session.cookies.keys())
    assert {"oc_sessionPassphrase", "nc_sameSiteCookielax", "nc_sameSiteCookiestrict"} <= names
    assert any(n.startswith("oc") and n != "oc_sessionPassphrase" for n in names), names  # the instance-id cookie
    assert {"nc_username", "nc_token", "nc_session_id"} <= names  # remember-me, as loginWithApache sets
    assert counters(standin, "alice")["logins"] == 1


def test_the_session_cookie_stands_in_for_a_login_only_with_its_own_credential(jwt_standin):
    s = jwt_standin
    alice = f"Bearer {s.passwords['alice']}"
    session = login(s, "alice", alice)
    before = counters(s, "alice")
    r = session.request("PROPFIND", s.dav("alice"), headers={"Authorization": alice, "Depth": "0"}, timeout=10)
    assert r.status_code == 207
    after = counters(s, "alice")
    assert after["logins"] == before["logins"] and after["session_requests"] == before["session_requests"] + 1
    # The cookie alone works too (as Nextcloud's well-behaved DAV clients use it).
    assert session.request("PROPFIND", s.dav("alice"), headers={"Depth": "0"}, timeout=10).status_code == 207
    # alice's cookie with bob's credential, or with another token of alice's: refused (Nextcloud would act as
    # alice; the stand-in makes the mistake visible).
    token = requests.post(f"{s.url}/standin/token", auth=s.auth("alice"), data={"aud": "x"}, timeout=10).json()["access_token"]
    for other in [f"Bearer {s.passwords['bob']}", f"Bearer {token}"]:
        r = session.request("PROPFIND", s.dav("alice"), headers={"Authorization": other, "Depth": "0"}, timeout=10)
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
    # OCS requests are exempt from the strict check.
    r = requests.get(f"{standin.url}/ocs/v2.php/cloud/user", headers={"OCS-APIRequest": "true", "Accept": "application/json"},
                     cookies=sid_only, timeout=10)
    assert r.status_code == 200 and r.json()["ocs"]["data"]["id"] == "alice"
    # A wrong passphrase makes the session unusable: the header decides (a login).
    broken = dict(session.cookies.items(), oc_sessionPassphrase="wrong")
    logins = counters(standin, "alice")["logins"]
    r = requests.request("PROPFIND", standin.dav("alice"), headers={"Authorization": alice, "Depth": "0"},
                         cookies=broken, timeout=10)
    assert r.status_code == 207 and counters(standin, "alice")["logins"] == logins + 1


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
